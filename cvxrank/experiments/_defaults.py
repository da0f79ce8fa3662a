"""Defaults of the experiments that the command line shows in ``--help`` (a module that imports
nothing, so that building the parser stays cheap)."""

#: ``λ`` of the hinge form in the ECML simulation (its own setting, not :data:`cvxrank.costs.DEFAULT_LAM`).
#: With 320,000 pairs the loss dominates:
#: the minimiser of seed 0 is the same to 1e-6 for every ``λ`` up to about
#: 0.3, and Clarabel on the dual needs the fewest iterations near 0.25.
SIMULATION_LAM = 0.25
