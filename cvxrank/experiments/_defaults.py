"""Defaults of the experiments that the command line shows in ``--help`` (a module that imports
nothing, so that building the parser stays cheap)."""

#: ``λ`` of the hinge form in the ECML simulation (its own setting, not :data:`cvxrank.costs.DEFAULT_LAM`).
#: With 320,000 pairs the loss dominates:
#: the minimiser of seed 0 is the same to 1e-6 for every ``λ`` up to about
#: 0.3, and Clarabel on the dual needs the fewest iterations near 0.25.
SIMULATION_LAM = 0.25

#: ``η`` of the click experiment's severity-of-bias axis, 0.5 (mild) to 2 (severe) (Joachims et al., WSDM 2017).
CLICK_ETAS = (0.5, 1.0, 2.0)
#: Sessions per click log, growing (each a fresh simulation).
CLICK_SESSIONS = (1000, 4000, 16000)
#: ``λ`` per unit of mean weighted hinge loss, the same for every model of the click experiment: chosen on a
#: validation split of the training queries (docs/clicks.md, "Reproduction").
CLICK_LAM = 3.0
