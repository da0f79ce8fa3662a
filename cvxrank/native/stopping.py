"""When a solver may stop: its certified gap against the rounding allowance the door's certificate adds.

The door (:func:`cvxrank.solution.certify_solution`) adds to a solver's gap the float64 rounding allowance of the
objective and of the bound (:mod:`cvxrank.rounding`), so a native solver that stops on its own gap alone can be
judged above ``tol``. :func:`target_proven` is the stop of the phases that compute that allowance as they go
(:mod:`cvxrank.native.pair_cd`, :mod:`cvxrank.native.threshold_dual`); :func:`aim` lowers the target of a run that
reached it without (the cutting planes and the Newton phase of :mod:`cvxrank.native.cutting_plane`).
"""

from __future__ import annotations

import math

__all__ = ["AIM_ROOM", "aim", "target_proven"]

#: A run whose gap reached its target but whose certificate would add more than the room left (its allowance
#: computed at the best point, :func:`cvxrank.rounding.primal_rounding` and ``model_rounding``) aims at
#: ``tol - 1.25 x`` that allowance, once, when the allowance is at most this share of ``tol``: on make_ranking data
#: with 100-300 features, whose objective is small beside its sums at λ ≤ 0.5, the allowance was 0.5-0.7 of tol
#: (``optimal_inaccurate`` at 1.1 tol where the solver's own gap was 0.4-0.6 tol).
AIM_ROOM = 0.8


def target_proven(F_best, lower, target, extra=None) -> bool:
    """Whether the gap ``F_best - lower`` proves the relative ``target`` once the certificate adds ``extra`` (its
    rounding allowances on the scale of (9); None: none known), unless ``extra`` alone takes more than half of the
    target (float64's floor: the door then reports the gap it can certify). An infinite ``F_best`` (no point yet)
    proves nothing."""
    if not (math.isfinite(F_best) and F_best - lower <= target * F_best):
        return False
    if extra is None:
        return True
    return extra > 0.5 * target * F_best or F_best - lower + extra <= target * F_best


def aim(F, lower, tol, target, extra, verbose=False, floor=0.0) -> float:
    """The relative gap to stop at once the gap ``F - lower`` reached ``target``: ``target`` itself when the
    certificate's rounding allowance ``extra`` (scale of (9)) added to that gap proves ``tol``, or when ``extra`` is
    more than :data:`AIM_ROOM` of ``tol`` (float64's floor: aiming lower would not prove it); else
    ``tol - 1.25 extra / F``, at least a tenth of ``tol`` and ``floor`` (the gap float64 can certify), where the
    certificate will prove ``tol`` (with ``extra`` at most 0.8 ``tol``, a gap of 0.1 ``tol`` leaves room)."""
    if F - lower + extra <= tol * F or not extra <= AIM_ROOM * tol * F:
        return target
    lowered = max(tol - 1.25 * extra / F, 0.1 * tol, floor)
    if verbose:
        print(f"cutting_plane  the certificate's rounding allowance ({extra / F:.1e} relative) would leave the gap "
              f"above tol: aiming at {lowered:.2e}", flush=True)
    return min(target, lowered)
