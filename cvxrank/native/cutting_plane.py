"""Exact pair-free solver of (9)/SIGIR: a stabilised 1-slack cutting-plane (bundle) method.

Problem: ``min_w F(w) = λ‖w‖² + R(w)`` with the weighted pairwise hinge loss
``R(w) = Σ_i c_i [1 - <w, d_i>]_+`` of Cao et al. (SIGIR 2006), equation (9)
(``c_i = τ_k(i) μ_q(i)``); by Theorem 1 the same minimiser as the QP (14).

Method (Joachims 2006, "Training linear SVMs in linear time"; Teo, Vishwanathan,
Smola and Le 2010, BMRM). Every oracle call at a point ``w_t``
(:class:`~cvxrank.native.oracle.PairFreeOracle`, no pair formed) gives the plane

.. math:: R(w) \\ge a_t^\\top w + b_t \\quad \\text{for all } w, \\qquad a_t = X^\\top v_t, \\quad b_t = W_t

(``W_t``: total weight of the pairs violated at ``w_t``). The model
``λ‖w‖² + max(0, max_k a_k^T w + b_k)`` is minimised through its dual, a QP
over the simplex of the planes (:class:`~cvxrank.native.bundle.Bundle`):

.. math:: \\max_{\\beta \\ge 0,\\ \\sum_k \\beta_k \\le 1} D(\\beta) = b^\\top \\beta - \\frac{1}{4\\lambda}
          \\Big\\|\\sum_k \\beta_k a_k\\Big\\|^2, \\qquad w(\\beta) = -\\frac{1}{2\\lambda} \\sum_k \\beta_k a_k.

Every plane is a minorant of ``R``, so ``D(β)`` at any feasible ``β`` is a
lower bound on ``min F`` (weak duality) and

.. math:: \\text{gap} = F(w_{\\text{best}}) - \\max_t D(\\beta_t) \\ge F(w_{\\text{best}}) - F(w^*)

certifies the returned ``w``. It is the pairwise certificate of
:mod:`cvxrank.certificate` in disguise: ``α_i = C_i Σ_k β_k [i violated
at w_k]`` lies in the box (19), ``2λ L_D(α) = D(β)`` and ``Dᵀα = w(β)`` (16).

Stabilisation. Plain BMRM cuts at the model minimiser ``w(β)``, which jumps
around. Here the next plane is cut at ``w_b + ρ (w(β) - w_b)`` between the
best point ``w_b`` and the model minimiser (the cut placement of OCAS, Franc
and Sonnenburg 2009; "in-out" separation). ``ρ`` adapts: ×1.5 after a cut that
improves ``F`` (up to 1, plain BMRM), ÷1.5 after one that does not (down to
``rho_min``). It changes where planes are taken, never the certificate.

Newton phase (default; local or Dask oracle). The planes find a good ``w`` fast, but
their lower bound creeps up: the best ``F`` is close to the optimum long before the
model's bound certifies it. Once the certified relative gap is below
``newton_gap``, or at the first null step (a cut that does not lower ``F``: the
planes' progress on ``w`` has stalled, their bound lags), whichever comes first,
the solver switches to :func:`~cvxrank.native.newton.smoothed_newton`:
Newton steps on the Huber-smoothed hinge with a shrinking width ``δ``, each
certified by the exact pairwise dual ``α_i = c_i clip((1 - m_i)/δ, 0, 1)``
(summed pair-free outside a narrow band of pairs near the margin). Its calls and
time against the planes alone: docs/native.md, "Floor passes" (``cvxrank bench native``).
If that phase stalls, the planes go on from where they were.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from cvxrank._validation import Interval, check
from cvxrank.costs import check_lam
from cvxrank.data import RankingData
from cvxrank.exceptions import InaccurateSolutionWarning, ValidationError
from cvxrank.native._checks import check_common, pairfree_problem, positive_int
from cvxrank.native.bundle import Bundle
from cvxrank.native.features import feature_map
from cvxrank.native.kernels import check_kernel
from cvxrank.native.oracle import PairFreeOracle, check_threads, stored_x
from cvxrank.native.scale import check_scale
from cvxrank.native.start import START_MAX_DOCUMENTS, StartPoint, regression_start
from cvxrank.native.stopping import aim, target_proven
from cvxrank.native.variant_oracle import VariantOracle
from cvxrank.problem import RankingProblem
from cvxrank.rounding import abs_scores, model_rounding, primal_rounding
from cvxrank.solution import BackendReport, finish

__all__ = ["CuttingPlaneRun", "blas_threads", "certifiable_gap", "cutting_plane", "solver_x"]

_EPS = np.finfo(np.float64).eps

def certifiable_gap(n_documents: int) -> float:
    """Smallest relative gap the solver certifies reliably in float64 on ``n_documents`` documents.

    The objective and the lower bound are sums whose rounding errors are
    about ``ε log2(m)`` relative to their terms (pairwise summation), and the
    inner QP carries a ridge of ``1e-12`` relative to its scale
    (:meth:`~cvxrank.native.bundle.Bundle.solve`); the floor is the larger of
    ``16 ε log2(m + 2)`` and ``1e-12``.

    Examples
    --------
    >>> certifiable_gap(16_000)
    1e-12
    """
    return max(16.0 * _EPS * np.log2(n_documents + 2.0), 1e-12)


@dataclass
class CuttingPlaneRun:
    """What :func:`cutting_plane` found (objectives on the hinge scale of (9)).

    Attributes
    ----------
    w : ndarray
        The best point found (smallest ``F``).
    objective : float
        ``F(w)``.
    lower_bound : float
        The best ``D(β)``: ``min F ≥ lower_bound``.
    status : str
        ``"optimal"`` (relative gap ≤ tol), ``"user_limit"`` (``max_iter`` or
        ``time_limit`` reached), ``"float_limit"`` (``tol`` below
        :func:`certifiable_gap`; stopped there or where progress ended) or
        ``"stalled"`` (no progress in ``stall_after`` iterations).
    iterations : int
        Planes (iterations of the cutting-plane loop).
    oracle_calls : int
        Planes plus evaluations of the Newton phase (an evaluation sorts once, like a
        plane, and searches boundaries twice: at ``s / (1 - δ)`` and, walking down from
        there, at ``s``; plus the band and an ``n x n`` solve).
    solve_time : float
    floor : float
        :func:`certifiable_gap` of the problem.
    w_model : ndarray
        ``w(β)`` at the dual point of ``lower_bound``.
    beta : ndarray
        That dual point (index 0 is the plane ``R ≥ 0``).
    points : ndarray or None
        Where its planes were taken (``keep_points=True`` only).
    history : pandas.DataFrame
        One row per iteration and per Newton evaluation: objective,
        dual_objective, relative_gap, planes, rho, oracle_calls, time (and
        delta, band in the Newton phase); built from ``history_rows`` (one dict
        each) when read, so a run imports pandas only if its history is looked at.
    lower_rounding : float or None
        The rounding allowance of ``lower_bound`` on the scale of (14) when the phase that found it bounded it
        (:func:`~cvxrank.native.pair_cd.pair_cd` and the threshold form's flows: an explicit dual point,
        :func:`cvxrank.rounding.pair_dual_rounding`; the local Newton phase: ``α = c`` beyond its band and its
        band's ``α``, :func:`cvxrank.rounding.band_dual_rounding`); None for the planes' bounds and a Newton phase
        summed in chunks or over shards (:func:`cvxrank.rounding.model_rounding` applies).
    objective_terms : int
        How many pairs ``objective``'s evaluation summed one by one beside its per-document sums (the Newton
        phase's band; 0 for the oracle's own sums): :func:`cvxrank.rounding.primal_rounding`'s ``terms``.
    lower_name : str
        What found ``lower_bound``, as the certificate names it: ``"cutting-plane bound"`` (the planes),
        ``"band dual bound"`` (the Newton phase) or ``"pairwise dual bound"`` (``pair_cd``, the threshold form).
    """

    w: np.ndarray
    objective: float
    lower_bound: float
    status: str
    iterations: int
    oracle_calls: int
    solve_time: float
    floor: float
    w_model: np.ndarray
    beta: np.ndarray
    points: np.ndarray | None
    history_rows: list = field(repr=False)
    lower_rounding: float | None = None
    start: StartPoint | None = None
    lower_name: str = "cutting-plane bound"
    objective_terms: int = 0

    @property
    def history(self):
        import pandas as pd

        return pd.DataFrame(self.history_rows)

    @property
    def gap(self) -> float:
        """``objective - lower_bound``."""
        return self.objective - self.lower_bound

    @property
    def relative_gap(self) -> float:
        """``gap / objective``."""
        return self.gap / self.objective if self.objective > 0 else 0.0


def blas_threads(threads: int | None = 1):
    """A context that limits BLAS to ``threads`` threads (``0`` or None: leave it alone).

    The oracle's two matrix-vector products per call are memory-bound; threaded BLAS only adds
    contention under load (docs/native.md, "The solver"). The BLAS libraries are found once per process
    (:func:`_blas_controller`): finding them reads the process's memory map, about 3 ms, which was a tenth of
    a small solve.
    """
    threads = check("threads", threads, Interval(0, 2**31 - 1, integer=True).or_none())  # every solver's, here
    if not threads:
        return contextlib.nullcontext()
    return _blas_controller().limit(limits=int(threads), user_api="blas")


@functools.lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's controller of the BLAS libraries loaded when first asked (numpy's and scipy's are by then:
    this package imports ``scipy.linalg``)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def cutting_plane(oracle, lam: float, *, tol: float = 1e-6, max_iter: int = 10_000, time_limit: float | None = None,
                  warm_start_w=None, rho: float = 0.1, rho_min: float = 0.01, prune_after: int = 50,
                  max_planes: int | None = None, stall_after: int = 200, keep_points: bool = False,
                  threads: int | None = 1, verbose: bool = False, newton_gap: float | None = 0.1,
                  hessian_free: bool = False, pair_cd: bool | None = None, threshold: bool | None = None,
                  start: str = "auto", allowance=None) -> CuttingPlaneRun:
    """Minimise ``λ‖w‖² + R(w)`` with a pair-free oracle; stop at a certified relative gap.

    Parameters
    ----------
    oracle : PairFreeOracle or DaskOracle
        Anything with ``n_features``, ``n_documents`` and ``oracle(w, counts=False)``
        returning ``loss``, ``violated_weight`` and ``gradient``.
    lam : float
        ``λ`` of (9)/SIGIR.
    tol : float, default 1e-6
        Requested relative gap ``(F(w) - lower bound) / F(w)``. Below
        :func:`certifiable_gap` it warns and stops at that floor.
    max_iter : int, default 10000
        Cap on oracle calls (one per iteration); status ``"user_limit"`` when reached.
    time_limit : float, optional
        Seconds; status ``"user_limit"`` when reached.
    warm_start_w : array-like, optional
        First point (default: as ``start`` says).
    rho : float, default 0.1
        Initial cut position between the best point (0) and the model minimiser (1).
    rho_min : float, default 0.01
        Smallest ``rho``; ``rho = rho_min = 1`` is plain BMRM.
    prune_after : int, default 50
        Drop a plane after this many consecutive inner solves with ``β_k = 0``.
    max_planes : int, optional
        Most planes the bundle holds (at least 4; default: no limit, or :data:`PAIR_CD_PLANES` while the planes go
        before an automatic ``pair_cd``); beyond, the lighter ones are aggregated
        (:class:`~cvxrank.native.bundle.Bundle`), so the planes' memory stays ``max_planes x n`` floats: for
        sparse data with many features, where the planes outweigh ``X``. It costs oracle calls where the model
        needs more planes than that (docs/native-measurements.md). Not with ``keep_points``.
    stall_after : int, default 200
        Stop (status ``"stalled"``) when the gap has not shrunk by 0.1 % in this many iterations.
    keep_points : bool, default False
        Keep the point of every plane (to build a pairwise ``α``).
    threads : int or None, default 1
        BLAS threads during the solve (0 or None: leave as is); see :func:`blas_threads`.
    verbose : bool, default False
        One line per iteration.
    newton_gap : float or None, default 0.1
        Certified relative gap at which the smoothed Newton phase
        (:func:`~cvxrank.native.newton.smoothed_newton`) takes over, unless the
        planes' first null step (a point no better than the best) comes earlier;
        None: planes only (the method before it). Only with a local
        :class:`~cvxrank.native.oracle.PairFreeOracle` with the papers' margin of 1
        or a :class:`~cvxrank.native.dask.DaskOracle` (their ``newton_phase``: the Dask oracle sums the shards' parts
        of every Newton evaluation); margins per grade pair use planes only, and so does
        a problem with more than :data:`NEWTON_MAX_FEATURES` features (2,000) or whose dense
        ``n_features x n_features`` Hessians would not fit the memory budget
        (:func:`cvxrank._memory.newton_bytes`).
    hessian_free : bool, default False
        Run the Newton phase above :data:`NEWTON_MAX_FEATURES` features too, Hessian-free: conjugate gradients
        with pair-free Hessian products, ``X`` kept as it is, no ``n x n`` matrix
        (:mod:`cvxrank.native.band_operator`), when its memory
        (:func:`~cvxrank.native.band_operator.hessian_free_bytes`) fits the budget. Off by default: on the sparse
        20,000-feature instance of ``cvxrank bench native --instances shapes`` it was slower than the planes
        alone (docs/native-measurements.md, "Measurements (2026-11-26): Hessian-free Newton").
    pair_cd : bool or None, default None
        Dual coordinate descent over the pairs with exact finishes on the margin
        (:func:`~cvxrank.native.pair_cd.pair_cd`) instead of the Newton phase: for a sparse ``X`` with at least as
        many features as documents, where the data are separable and the margin degenerate (the sparse 20,000-feature
        shape of ``cvxrank bench native --instances shapes``). None: for a CSR ``X`` with more than
        :data:`NEWTON_MAX_FEATURES` features and at least as many features as documents (unless ``hessian_free``),
        the planes first (at most :data:`PAIR_CD_PLANES` unless ``max_planes`` is given), and pair_cd once they lag
        (:data:`PAIR_CD_AFTER`); True: from the first plane on, for any CSR ``X``; False: off. It needs a local
        oracle with the papers' margin of 1, the compiled sweeps and 12 bytes a pair in the memory budget
        (:func:`~cvxrank.native.pair_cd.pair_cd_bytes`); otherwise the solve goes on without it. A pass over the
        pairs counts as an oracle call for ``max_iter``.
    threshold : bool or None, default None
        Before pair_cd, the dual of the hard-margin threshold form
        (:func:`~cvxrank.native.threshold_dual.threshold_dual`: one constraint per document and boundary between
        consecutive grades of its query, accelerated projected gradient with finishes on its set); pair_cd goes on
        from its bounds when it hands over (at larger λ, where the hard-margin solution is not the optimum, or on
        data that are not separable) or has not proved ``tol``. None: when pair_cd is automatic; True: also with
        ``pair_cd=True`` (with ``pair_cd=None`` it runs only where the automatic rule turns pair_cd on); False:
        never. It needs every boundary's grade pair to carry a weight (else pair_cd alone). With True, or None and
        ``pair_cd=None`` (the defaults), the two also follow a Newton phase that ended short of the target, on dense
        data too (:data:`AFTER_NEWTON`, :data:`NEWTON_WIDTH_STEPS`).
    start : {"auto", "regression", "zero"}, default "auto"
        First point without ``warm_start_w``: ``"regression"``, a least-squares fit of the grades from a few
        products with ``X``, scaled to its best multiple for (9) (:func:`~cvxrank.native.start.regression_start`);
        ``"zero"``, ``w = 0``; ``"auto"``, the regression for a local
        :class:`~cvxrank.native.oracle.PairFreeOracle` with the papers' margin of 1 and at most
        :data:`~cvxrank.native.start.START_MAX_DOCUMENTS` documents (10,000: on larger, easier instances its work
        cost more than it saved), unless ``pair_cd`` runs from the first call, else 0. ``"regression"`` needs such
        an oracle (not over shards, not with margins per grade pair: ``ValidationError``). ``warm_start_w`` takes
        precedence.
    allowance : callable, optional
        ``w ↦`` the float64 rounding allowance a certificate adds for the objective at ``w`` (scale of (9)), and
        with ``bound=True`` also for the planes' or the Newton phase's own lower bound near ``w``:
        :func:`~cvxrank.native.pair_cd.pair_cd` then aims at the gap the certificate will find, and a run whose
        gap reached the target but would not prove ``tol`` with the allowance added aims lower, once (``solve``
        passes its own, :func:`cvxrank.rounding.primal_rounding` and :func:`cvxrank.rounding.model_rounding`). It
        may take ``terms=``, the pairs the objective's evaluation at ``w`` summed one by one (the Newton phase's
        band; ``primal_rounding``'s ``terms``).

    Returns
    -------
    CuttingPlaneRun
    """
    lam = check_lam(lam)
    allowance = _with_bound(allowance)
    w = check_common(tol, time_limit, warm_start_w, oracle.n_features)
    if not isinstance(start, str) or start not in START_CHOICES:
        raise ValidationError(f"start must be one of {', '.join(map(repr, START_CHOICES))}, got {start!r}")
    max_iter = positive_int(max_iter, "max_iter")
    prune_after = positive_int(prune_after, "prune_after")
    max_planes = _plane_limit(max_planes, keep_points)
    stall_after = positive_int(stall_after, "stall_after")
    step = Interval(0, 1, closed="right")
    rho = max(check("rho", rho, step), check("rho_min", rho_min, step))
    check("newton_gap", newton_gap, step.or_none())
    floor = certifiable_gap(oracle.n_documents)
    if tol < floor:
        warnings.warn(
            f"tol {tol:.1e} is below the relative gap float64 can certify on this problem (about {floor:.1e}); "
            "the solver stops there and reports the best certified gap",
            InaccurateSolutionWarning, stacklevel=2)
    # aim below tol: the door adds a rounding allowance to the certified gap (cvxrank.rounding), so a run that
    # stopped just under tol could be judged above it (heavy ties, lambda 0.05: 9.997e-7 + 7.6e-10 relative)
    target = max(min(tol * (1.0 - TOL_ROOM), tol - ROUNDING_ROOM), 0.5 * tol, floor)
    if not isinstance(hessian_free, (bool, np.bool_)):
        raise ValidationError(f"hessian_free must be True or False, got {hessian_free!r}")
    if pair_cd is not None and not isinstance(pair_cd, (bool, np.bool_)):
        raise ValidationError(f"pair_cd must be True, False or None (automatic), got {pair_cd!r}")
    if threshold is not None and not isinstance(threshold, (bool, np.bool_)):
        raise ValidationError(f"threshold must be True, False or None (automatic), got {threshold!r}")
    if threshold and pair_cd is not None and not pair_cd:
        raise ValidationError("threshold=True runs before pair_cd: not with pair_cd=False")
    automatic = pair_cd is None
    use_threshold = bool(automatic if threshold is None else threshold)
    if automatic:  # sparse data with many features, at least one per document (separable)
        n, m = oracle.n_features, oracle.n_documents
        pair_cd = not hessian_free and n > NEWTON_MAX_FEATURES and n >= m
    use_pair_cd = bool(pair_cd) and _pair_cd_fits(oracle)
    pair_cd_after = 0  # the planes' oracle calls before pair_cd
    if automatic and use_pair_cd:  # the planes first, a few of them; pair_cd when they lag
        pair_cd_after = PAIR_CD_AFTER
        if max_planes is None and not keep_points:
            max_planes = PAIR_CD_PLANES
    with blas_threads(threads):
        first, clock = None, time.perf_counter()  # the solve's time and time limit count the start's work too
        local = isinstance(oracle, PairFreeOracle) and oracle.newton_phase  # X here, the papers' margin of 1
        if start == "regression" and not local:
            raise ValidationError(f"start='regression' fits the grades on X in this process for the papers' margin of "
                                  f"1; not with a {type(oracle).__name__} (use start='auto' or 'zero')")
        if warm_start_w is None and (start == "regression" or (
                start == "auto" and local and oracle.n_documents <= START_MAX_DOCUMENTS
                and not (use_pair_cd and not pair_cd_after))):  # pair_cd from the first call reads no w
            first = regression_start(oracle, lam)
            w = first.w
            if verbose:
                print(f"start  regression  scale {first.scale:.6g}  objective {first.objective:.12g}  "
                      f"{first.products} products, {first.sweeps} sweeps  {time.perf_counter() - clock:.3f}s",
                      flush=True)
        newton = (newton_gap if getattr(oracle, "newton_phase", False) and _newton_fits(oracle, hessian_free)
                  else None)
        run = _run(oracle, lam, w, tol, target, floor, max_iter, time_limit, rho, rho_min, prune_after,
                   stall_after, keep_points, verbose, newton, max_planes, use_pair_cd, allowance, pair_cd_after,
                   clock, use_threshold)
    run.start = first
    return run


#: The values of ``start`` (:func:`cutting_plane`).
START_CHOICES = ("auto", "regression", "zero")


def _start_extras(run: CuttingPlaneRun, warm_start_w) -> dict:
    """What the solution's ``extras`` say of the first point: ``start`` (``"warm"``, ``"regression"``, or
    ``"zero"``, also when the fit did not lower ``F`` below ``F(0)``) and the start's work."""
    first = run.start
    kind = "warm" if warm_start_w is not None else ("regression" if first is not None and first.scale > 0 else "zero")
    return {"start": kind, "start_products": 0 if first is None else first.products,
            "start_sweeps": 0 if first is None else first.sweeps}


#: Most features for the Newton phase: each of its steps solves a dense ``n x n`` system and forms
#: ``H`` from up to ``BAND_BUDGET`` band rows, ``O(n^3 + band n^2)``, about the time of an oracle call
#: on a million documents at this size (docs/native.md, "Newton phase"). Above it (high-dimensional
#: sparse data) the planes, ``O(nnz(X))`` per call, go on alone.
NEWTON_MAX_FEATURES = 2000


#: With ``pair_cd=None`` (automatic) the planes run first, with at most :data:`PAIR_CD_PLANES` planes unless
#: ``max_planes`` says otherwise, and :func:`~cvxrank.native.pair_cd.pair_cd` takes over when their certified
#: relative gap is above :data:`PAIR_CD_GAP` after :data:`PAIR_CD_AFTER` oracle calls, or above the target after
#: :data:`PAIR_CD_LATEST`. On the sparse 20,000-feature shape the planes (16 of them) certified λ = 500 in 133 calls
#: and 0.17 s, where pair_cd took 0.46 s, and λ = 5,000 in 12 calls and 0.04 s (pair_cd: 0.22 s); at λ ≤ 200 their
#: gap after 20 calls was 2.5e-2 or more and they had not certified 1e-6 after 1,500 calls
#: (docs/native-measurements.md, "Measurements (2026-11-26, last)" and "(2026-11-26, close)"). Where they are
#: plainly far off, the phases start sooner: a gap above :data:`PAIR_CD_EARLY_GAP` after :data:`PAIR_CD_EARLY`
#: calls (on that shape 0.94 or more at λ ≤ 6, 0.46 at λ = 100, 0.033 at λ = 500, where the planes certify alone;
#: the phases read no point of the planes, only their bounds, which are then near 0).
PAIR_CD_AFTER = 20
PAIR_CD_GAP = 1e-3
PAIR_CD_EARLY = 8
PAIR_CD_EARLY_GAP = 0.5
PAIR_CD_LATEST = 400
#: See :data:`PAIR_CD_AFTER`: 16 planes of ``n`` floats (0.86x the CSR matrix at λ = 500 on that shape; unbounded,
#: the bundle took the peak to 5x).
PAIR_CD_PLANES = 16

#: After a Newton phase that ended short of the target on a local oracle with the compiled sweeps: the threshold
#: form's dual (:func:`~cvxrank.native.threshold_dual.threshold_dual`, from bounds of its own), then pair_cd where it
#: fits (a dense ``X`` too: it makes a CSR copy, which its memory estimate counts), before the planes go on (0: the
#: planes at once, as before 2026-11-27). On one query of 600 documents with 200 features (make_ranking, 3,238 of
#: its 120,000 pairs on the margin at λ = 0.5, none below) the Newton phase took 400-1,100 steps at one width, and
#: the solve ended at 1.7e-3 (λ = 0.5) or at a 20 s limit (λ = 0.05); with this and :data:`NEWTON_WIDTH_STEPS`,
#: certified (or at float64's floor) in 0.4-1.9 s (docs/native-measurements.md, "Measurements (2026-11-27, 21:00)").
AFTER_NEWTON = 1

#: When the planes' gap has not shrunk by 0.1 % in this many iterations on a local oracle, the exact finish on the
#: pairs near the margin at their best point (:func:`_stall_finish`), once per improvement of that point, before the
#: planes go on (and end ``"stalled"`` after ``stall_after``). On data whose optimum sits on a vertex of the hinge
#: (many pairs exactly on the margin, the features large against ``λ``) the planes' bound reaches the optimum but
#: their candidates, a step of ``ρ ≥ rho_min`` towards the model's minimiser, stay about 1e-5 above it: 11
#: documents with features of magnitude 1,000 at λ = 0.5, started at ``w = 0``, ended ``stalled`` at 1.3e-5 after
#: 899 calls; the finish at the planes' point there is 1e-13 from the optimum.
STALL_FINISH = 20
#: Most pairs of that finish's box QP (its interior point costs ``k³`` a step).
STALL_FINISH_PAIRS = 500
#: With :data:`AFTER_NEWTON` in force, the Newton phase ends after this many steps at one width while its band holds
#: more pairs than there are documents (:func:`~cvxrank.native.newton.smoothed_newton`'s ``width_steps``). Of 150
#: dense solves measured, those it ends at the target or float64's floor took at most 228 (the 300-feature data at
#: λ = 0.05); the one-query data above, 385-1,091 (174 at λ = 5 with one seed). Without the band's condition, one
#: query of 1,000 documents with 100 features (not separable; about 670 band pairs) was cut at λ = 0.05 after 300
#: steps of a first width that needed more, and the dual phases after it did not converge: 1.8e-2 at the 3,000-call
#: limit, where the Newton phase alone reaches float64's floor in 901 calls.
NEWTON_WIDTH_STEPS = 300

#: Room left below ``tol`` for the door's rounding allowance: the solver stops at ``(1 - TOL_ROOM) tol``, or at
#: ``tol - ROUNDING_ROOM`` when that is lower (the allowance was 5e-10 to 7.6e-10 relative on the shapes measured),
#: never below ``tol / 2``.
TOL_ROOM = 0.01
ROUNDING_ROOM = 2e-9


def _newton_fits(oracle, hessian_free: bool = False) -> bool:
    """Whether the Newton phase runs here: at most :data:`NEWTON_MAX_FEATURES` features with its dense Hessians
    and band in the memory budget, or (``hessian_free``) more features with the Hessian-free phase's memory in the
    budget (else planes only)."""
    from cvxrank._memory import fits_memory, newton_bytes
    from cvxrank.native.newton import BAND_BUDGET

    n = oracle.n_features
    if n <= NEWTON_MAX_FEATURES:
        return fits_memory(newton_bytes(n, BAND_BUDGET))
    if not hessian_free or not hasattr(oracle, "X"):  # over shards: planes only above NEWTON_MAX_FEATURES
        return False
    from cvxrank.native.band_operator import hessian_free_bytes

    X = oracle.X
    nnz = X.nnz if hasattr(X, "nnz") else X.size
    return fits_memory(hessian_free_bytes(oracle.n_documents, n, oracle._G, nnz))


def _with_bound(allowance):
    """``allowance`` taking ``bound=`` and ``terms=``: a one-argument callable (``w ↦`` the objective's allowance
    alone) is wrapped, the bound's part then 0 (the planes' own stop, :func:`aim`, sees less than the certificate
    adds); one without ``terms`` (the pairs the objective's evaluation summed one by one) is called without it."""
    import inspect

    if allowance is None:
        return None
    if not callable(allowance):
        raise ValidationError(f"allowance must be a callable w -> float, got {type(allowance).__name__}")
    try:
        parameters = inspect.signature(allowance).parameters
    except (TypeError, ValueError):  # no signature to read (a builtin): called with w alone
        parameters = {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()) or (
            "bound" in parameters and "terms" in parameters):
        return allowance
    if "bound" in parameters:
        return lambda w, bound=False, terms=0: allowance(w, bound=bound)
    return lambda w, bound=False, terms=0: allowance(w)


def _pair_cd_fits(oracle, dense: bool = False) -> bool:
    """Whether :func:`~cvxrank.native.pair_cd.pair_cd` runs here: a local oracle with the papers' margin of 1, a
    CSR ``X`` (``dense=True``: or a dense one, whose CSR copy pair_cd makes and the memory budget then counts), the
    compiled sweeps, fewer than 2^31 documents (int32 indices) and its memory in the budget."""
    import scipy.sparse as sp

    from cvxrank._memory import fits_memory
    from cvxrank.native.pair_cd import pair_cd_bytes

    if not (isinstance(oracle, PairFreeOracle) and oracle.newton_phase and oracle._compiled
            and (dense or sp.issparse(oracle.X))):
        return False
    if oracle.n_documents >= np.iinfo(np.int32).max:  # its documents are int32 indices
        return False
    longest = int(np.bincount(oracle._qc).max(initial=0))
    nnz = oracle.X.nnz if sp.issparse(oracle.X) else int(np.count_nonzero(oracle.X))  # (pair_cd_bytes counts a copy)
    converting = 0 if sp.issparse(oracle.X) else 20 * nnz  # scipy's CSR from a dense array peaks at about 32 B an entry
    return fits_memory(pair_cd_bytes(oracle.n_pairs, oracle.n_documents, nnz, oracle.n_features, longest) + converting)


def _plane_limit(max_planes, keep_points):
    """``max_planes`` checked (see :func:`cutting_plane`)."""
    if max_planes is None:
        return None
    max_planes = positive_int(max_planes, "max_planes")
    if max_planes < 4:
        raise ValidationError(f"max_planes must be at least 4, got {max_planes}")
    if keep_points:
        raise ValidationError("max_planes is for problems given as documents: this one is stated on its pairs (a "
                              "PairSet, or weights by rule), and then every plane keeps its point for the pairwise "
                              "certificate, which an aggregated plane has not")
    return max_planes


def _after_newton_fits(oracle) -> bool:
    """Whether the dual phases can follow a Newton phase here (:data:`AFTER_NEWTON`): a local oracle with the papers'
    margin of 1 and the compiled sweeps, and the threshold form's boundaries or pair_cd's memory."""
    from cvxrank.native.threshold_dual import boundaries

    if not (isinstance(oracle, PairFreeOracle) and oracle.newton_phase and oracle._compiled):
        return False
    return boundaries(oracle) is not None or _pair_cd_fits(oracle, dense=True)  # (the cheaper test first)


def _joined(first, second):
    """Two phases run one after the other as one: the better point and bound, the calls added, the second's rows
    counted from the first's start and read against the first's end (its best ``F`` and bound so far); the pairs
    summed one by one in the better point's ``F`` (the first's 8th entry: the Newton phase's; the second's: none)."""
    w1, F1, low1, wl1, calls1, rows1 = first[:6]
    w2, F2, low2, wl2, calls2, rows2, rounding2 = second
    rows = list(rows1)
    for row in rows2:
        F_row, low_row = min(row["objective"], F1), max(row["dual_objective"], low1)
        rows.append({**row, "evaluations": calls1 + row["evaluations"], "objective": F_row, "dual_objective": low_row,
                     "relative_gap": (F_row - low_row) / F_row if F_row > 0 else 0.0})
    w, F, terms = (w2, F2, 0) if w2 is not None and F2 < F1 else (w1, F1, first[7] if len(first) > 7 else 0)
    low, w_low, rounding = (low2, wl2, rounding2) if low2 > low1 else (low1, wl1, first[6] if len(first) > 6 else None)
    return w, F, low, w_low, calls1 + calls2, rows, rounding, terms


def _dual_phases(oracle, lam, upper, lower, target, max_calls, deadline, verbose, start, allowance, threshold,
                 then_pair_cd=True, fresh=False):
    """The threshold form's dual (:func:`~cvxrank.native.threshold_dual.threshold_dual`, when ``threshold`` and it
    applies), then :func:`~cvxrank.native.pair_cd.pair_cd` from its bounds unless it proved the target (or
    ``then_pair_cd`` is False): one phase's ``(w_best, F_best, lower, w_lower, calls, rows, lower_rounding)``, the
    rows' work counted from the first's start and ``w_best`` None when neither beat ``upper`` (pair_cd alone: its
    ``w_best`` and ``F_best``, which is ``upper`` when it found nothing better). ``fresh``: the threshold
    phase starts from bounds of its own (``∞``, 0), so that its progress rule reads its own gap, and its result is
    then taken with ``upper`` and ``lower`` (after a Newton phase whose bounds it would otherwise take many looks to
    beat, it stalled on data it proves from scratch)."""
    from cvxrank.native.pair_cd import pair_cd
    from cvxrank.native.threshold_dual import boundaries, threshold_dual

    structure = boundaries(oracle) if threshold else None
    if structure is None:
        if not then_pair_cd:
            return None, upper, lower, None, 0, [], None
        return pair_cd(oracle, lam, upper=upper, lower=lower, target=target, max_calls=max_calls, deadline=deadline,
                       verbose=verbose, start=start, allowance=allowance)
    w_best, F_best, low, w_low, calls, rows, rounding = threshold_dual(
        oracle, lam, upper=np.inf if fresh else upper, lower=0.0 if fresh else lower, target=target,
        max_calls=max_calls, deadline=deadline, verbose=verbose, start=start, allowance=allowance, structure=structure)
    del structure
    if not F_best < upper:  # (fresh: its own point, kept only where it beats upper)
        w_best, F_best = None, upper
    if not low > lower:
        low, w_low, rounding = lower, None, None
    extra = None
    if allowance is not None and w_best is not None and F_best - low <= target * F_best:
        extra = allowance(w_best) + 2.0 * lam * (rounding or 0.0)
    elapsed = time.perf_counter() - start
    if (not then_pair_cd or target_proven(F_best, low, target, extra) or max_calls - calls < 3
            or (deadline is not None and elapsed >= deadline)):
        return w_best, F_best, low, w_low, calls, rows, rounding
    w2, F2, low2, w_low2, calls2, rows2, rounding2 = pair_cd(
        oracle, lam, upper=F_best, lower=low, target=target, max_calls=max_calls - calls, deadline=deadline,
        verbose=verbose, start=start, allowance=allowance)
    rows += [{**row, "evaluations": calls + row["evaluations"]} for row in rows2]
    if w2 is not None and F2 < F_best:
        w_best, F_best = w2, F2
    if low2 > low:
        low, w_low, rounding = low2, w_low2, rounding2
    return w_best, F_best, low, w_low, calls + calls2, rows, rounding


def _run(oracle, lam, w, tol, target, floor, max_iter, time_limit, rho, rho_min, prune_after, stall_after,
         keep_points, verbose, newton_gap=None, max_planes=None, use_pair_cd=False, allowance=None,
         pair_cd_after=0, clock=None, threshold=False) -> CuttingPlaneRun:
    start = time.perf_counter() if clock is None else clock
    calls, newton_done, w_lower = 1, newton_gap is None, None
    n = w.shape[0]
    # with pair_cd at once the planes are a fallback: room for a few (each n floats), doubled when needed
    first = use_pair_cd and not pair_cd_after
    bundle = Bundle(n, lam, keep_points=keep_points, max_planes=max_planes, capacity=4 if first else 64)
    best_F, best_w = np.inf, w
    lower, lower_beta, lower_u, lower_points = 0.0, np.array([1.0]), np.zeros(n), None
    lower_rounding = None  # the bound's own rounding allowance, when a phase computed one (pair_cd, Newton)
    lower_name = "cutting-plane bound"  # and what found the bound (CuttingPlaneRun.lower_name)
    objective_terms = 0  # the pairs best_F's evaluation summed one by one (CuttingPlaneRun.objective_terms)
    history = []
    status, it = "user_limit", 0
    stall_gap, stall_count = np.inf, 0
    finished_at = np.inf  # best_F when the planes last tried the exact finish on a stall (_stall_finish)
    aimed = False  # whether the target was checked against the certificate's rounding allowance
    r = oracle(w, counts=False)
    F = lam * float(w @ w) + r.loss
    while True:
        it += 1
        null_step = it > 1 and not F < best_F
        if F < best_F:
            best_F, best_w, objective_terms = F, w, 0
            rho = min(1.0, 1.5 * rho)
        elif it > 1:
            rho = max(rho_min, rho / 1.5)
        bundle.add(r.gradient, r.violated_weight, w if keep_points else None)
        bundle.solve()
        D, u = bundle.dual()
        if D > lower:
            T = bundle.size
            lower, lower_beta, lower_u, w_lower, lower_rounding = D, bundle.beta[:T].copy(), u, None, None
            lower_name = "cutting-plane bound"
            lower_points = bundle.points[:T].copy() if keep_points else None
        gap = best_F - lower
        rel = gap / best_F
        elapsed = time.perf_counter() - start
        history.append({"iteration": it, "objective": best_F, "dual_objective": lower, "relative_gap": rel,
                        "planes": bundle.size - 1, "rho": rho, "oracle_calls": calls, "time": elapsed})
        # Hessian-free (many features): only from newton_gap on; from the planes' first null step (relative gap
        # near 1 on the sparse 20,000-feature instance) its damped steps made little progress
        phase, phase_name = None, "pairwise dual bound"  # (the Newton phase's own: "band dual bound")
        # the pairs' dual from the first plane on (sparse data, many features), or once the planes lag: above
        # PAIR_CD_GAP after pair_cd_after calls (PAIR_CD_EARLY_GAP after PAIR_CD_EARLY), or short of the target
        # after PAIR_CD_LATEST
        if use_pair_cd and rel > target and (not pair_cd_after or (calls >= pair_cd_after and rel > PAIR_CD_GAP)
                                             or (calls >= min(PAIR_CD_EARLY, pair_cd_after)
                                                 and rel > PAIR_CD_EARLY_GAP)
                                             or calls >= PAIR_CD_LATEST):
            use_pair_cd, newton_done = False, True
            if pair_cd_after:  # the planes' memory back before the pairs' (their bound is kept in lower, lower_u)
                bundle = Bundle(n, lam, keep_points=keep_points, max_planes=max_planes, capacity=4)
                w = w_model = r = None  # (made again after the phase if the planes go on)
            phase = _dual_phases(oracle, lam, best_F, lower, target, max_iter - calls, time_limit, verbose, start,
                                 allowance, threshold)
            aimed = True  # (pair_cd and the threshold phase stop on the certificate's allowance themselves)
        elif not newton_done and (rel <= newton_gap or (null_step and n <= NEWTON_MAX_FEATURES)) and rel > target:
            from cvxrank.native.newton import smoothed_newton

            newton_done = True
            checked = []  # whether the phase checked its end against the allowance (then the planes do not again)

            def seen(w_, bound=False, terms=0, checked=checked):
                checked.append(True)
                return allowance(w_, bound=bound, terms=terms)

            after = bool(AFTER_NEWTON and threshold is not False and _after_newton_fits(oracle))
            phase = smoothed_newton(
                oracle, lam, best_w, upper=best_F, lower=lower, tol=tol, target=target, max_calls=max_iter - calls,
                deadline=time_limit, verbose=verbose, start=start, hessian_free=n > NEWTON_MAX_FEATURES,
                allowance=None if allowance is None else seen, width_steps=NEWTON_WIDTH_STEPS if after else None)
            aimed = aimed or bool(checked)
            phase_name = "band dual bound"
            up, low = min(best_F, phase[1]), max(lower, phase[2])
            if (after and up - low > target * up and max_iter - calls - phase[4] >= 3
                    and not (time_limit is not None and time.perf_counter() - start >= time_limit)):
                # the Newton phase ended short (its limit of steps at one width on a degenerate margin, a stall, a
                # failed line search): the threshold form's dual, and pair_cd after it where it fits
                more = _dual_phases(oracle, lam, up, low, target, max_iter - calls - phase[4], time_limit, verbose,
                                    start, allowance, True, then_pair_cd=_pair_cd_fits(oracle, dense=True), fresh=True)
                if more[2] > phase[2]:  # (_joined takes the dual phases' bound)
                    phase_name = "pairwise dual bound"
                phase = _joined(phase, more)
                # (the phases checked the allowance only where both the point and the bound are theirs)
                aimed = aimed or (more[0] is not None and more[6] is not None)
        if phase is not None:
            w_n, F_n, lower_n, w_l, evals, rows = phase[:6]
            for row in rows:
                calls_row = calls + row["evaluations"]
                history.append({"iteration": it, "objective": row["objective"], "dual_objective": row["dual_objective"],
                                "relative_gap": row["relative_gap"], "planes": bundle.size - 1, "rho": rho,
                                "oracle_calls": calls_row, "time": row["time"], "delta": row["delta"],
                                "band": row["band"], "jump": row.get("jump", False)})
            calls += evals
            if F_n < best_F:
                best_F, best_w = F_n, w_n
                objective_terms = phase[7] if len(phase) > 7 else 0
            if lower_n > lower:
                lower, w_lower = lower_n, w_l
                lower_rounding = phase[6] if len(phase) > 6 else None
                lower_name = phase_name
            gap = best_F - lower
            rel = gap / best_F
            elapsed = time.perf_counter() - start
        if verbose:
            print(f"cutting_plane  it {it:5d}  objective {best_F:.12g}  lower {lower:.12g}  rel gap {rel:.2e}  "
                  f"planes {bundle.size - 1:4d}  rho {rho:.3f}  {elapsed:.2f}s", flush=True)
        if rel <= target and not aimed and allowance is not None:  # (the planes go on when it aims lower)
            aimed = True
            extra = (allowance(best_w, bound=lower_rounding is None, terms=objective_terms)
                     + 2.0 * lam * (lower_rounding or 0.0))
            target = aim(best_F, lower, tol, target, extra, verbose, floor)
        if rel <= target:
            status = "optimal" if rel <= tol else "float_limit"
            break
        if calls >= max_iter or (time_limit is not None and elapsed >= time_limit):
            status = "user_limit"
            break
        if gap < stall_gap * (1.0 - 1e-3):
            stall_gap, stall_count = gap, 0
        else:
            stall_count += 1
            if stall_count >= stall_after:
                status = "float_limit" if tol < floor else "stalled"
                break
        bundle.prune(prune_after)
        w_model = -u / (2.0 * lam)
        w = best_w + rho * (w_model - best_w)
        if (stall_count >= STALL_FINISH and best_F < finished_at and max_iter - calls >= 2
                and isinstance(oracle, PairFreeOracle) and oracle.newton_phase):  # (local, the papers' margin of 1)
            finished_at = best_F
            found = _stall_finish(oracle, lam, best_w)
            calls += 1
            if found is not None:  # its bound now; its point is the next candidate (evaluated below, a plane)
                w, L_j, w_j, rounding = found
                if L_j > lower:  # (as a phase's bound: the planes' own point for the certificate is kept)
                    lower, w_lower, lower_rounding, lower_name = L_j, w_j, rounding, "band dual bound"
        r = oracle(w, counts=False)
        calls += 1
        F = lam * float(w @ w) + r.loss
    return CuttingPlaneRun(
        w=np.array(best_w, dtype=np.float64), objective=float(best_F), lower_bound=float(lower), status=status,
        iterations=it, oracle_calls=calls, solve_time=time.perf_counter() - start, floor=floor,
        w_model=-lower_u / (2.0 * lam) if w_lower is None else w_lower, beta=lower_beta, points=lower_points, history_rows=history,
        lower_rounding=lower_rounding, lower_name=lower_name, objective_terms=objective_terms,
    )


def _stall_finish(oracle, lam, w):
    """The exact finish of the Newton phase's jumps at the planes' point ``w``: the pairs within
    :data:`~cvxrank.native.newton.WIDE_WIDTH` of the margin at ``w`` (both sides; the nearest
    :data:`~cvxrank.native.newton.JUMP_WIDE` ``n``, at most :data:`STALL_FINISH_PAIRS`, as the wide jump keeps), the pairs below held at their weight and those above at 0, and the
    hinge's dual maximised over the listed ones (:func:`~cvxrank.native.newton._band_dual`: a box QP). One pass.
    Its value is a lower bound whatever the sets, and its point, with the free pairs put on the margin, is the
    optimum when they are the optimum's. Returns ``(point, bound, Σ α d / (2λ), the bound's rounding allowance)``,
    or None when no pair is near the margin."""
    from cvxrank.native.newton import JUMP_WIDE, WIDE_WIDTH, _band_dual, _dual_rounding, _margin_set

    cap = min(STALL_FINISH_PAIRS, max(1, int(JUMP_WIDE * w.shape[0])))
    _, sets, _, _ = _margin_set(oracle, lam, w, WIDE_WIDTH, cap, below=True)
    if not sets[1].shape[0]:
        return None
    point, bound, u, record = _band_dual(lam, *sets)
    return point, bound, u / (2.0 * lam), _dual_rounding(oracle, lam, record)


# -- SolveResult front ends ----------------------------------------------------
def solve_pairfree(data: RankingData, *, tau=None, mu=None, lam: float = 1.0, tol: float = 1e-6,
                   max_iter: int = 10_000, time_limit: float | None = None, verbose: bool = False,
                   warm_start_w=None, client=None, **options):
    """Deprecated: ``cvxrank.solve(RankingProblem(data, tau=tau, mu=mu, lam=lam), "cutting_plane", ...)``.

    The same solve (the papers' hinge problem (9) without forming pairs). Its arguments are
    those of ``solve(problem, "cutting_plane")``; ``lam`` keeps this function's old default, 1.0,
    while it is deprecated (the problem's default is :data:`cvxrank.costs.DEFAULT_LAM`, 0.5).
    """
    warnings.warn("solve_pairfree is deprecated: use cvxrank.solve(RankingProblem(data, tau=..., mu=..., lam=...), "
                  "'cutting_plane', ...), the one door to every solver", DeprecationWarning, stacklevel=2)
    if not isinstance(data, RankingData):
        raise ValidationError(f"solve_pairfree takes RankingData, got {type(data).__name__}")
    problem = RankingProblem(data, tau=tau, mu=mu, lam=lam)
    return _solve(problem, tol=tol, max_iter=max_iter, time_limit=time_limit, verbose=verbose,
                  warm_start_w=warm_start_w, client=client, **options)


def solve_cutting_plane(problem, **options):
    """Deprecated: ``cvxrank.solve(problem, "cutting_plane", **options)``."""
    warnings.warn("solve_cutting_plane is deprecated: use cvxrank.solve(problem, 'cutting_plane', ...), the one door "
                  "to every solver", DeprecationWarning, stacklevel=2)
    return _solve(problem, **options)


def solver_x(data: RankingData) -> tuple:
    """``(X, fmap)``: the feature matrix as the local solve keeps it for the papers' margin of 1, and the
    :class:`~cvxrank.native.features.FeatureMap` back to the data's features (None when every feature is kept).

    ``X`` is :func:`~cvxrank.native.oracle.stored_x` of ``data.X`` (a small sparse ``X`` that is not very sparse
    becomes dense), with the columns that carry no pair information dropped and equal columns merged
    (:func:`~cvxrank.native.features.feature_map`). It is ``data.X`` itself when neither applies. Every oracle call of
    the solve reads this ``X``, so a floor pass of it is what the solve's own passes cost
    (``cvxrank bench native --instances shapes``: the ``kept X`` column).

    Parameters
    ----------
    data : RankingData

    Returns
    -------
    X : ndarray of shape (m, r) or scipy.sparse CSR matrix of shape (m, n)
        float64, or float32 as stored; ``r`` the features kept (``fmap.n_reduced``), ``n`` when ``fmap`` is None.
    fmap : FeatureMap or None

    Examples
    --------
    >>> from cvxrank.datasets import make_ranking
    >>> data = make_ranking(n_queries=3, n_features=4, random_state=0)
    >>> X, fmap = solver_x(data)
    >>> X is data.X, fmap is None          # dense, every column informative: the data's own X
    (True, True)
    """
    X = stored_x(data.X)
    fmap = feature_map(X, data.query_index)  # None unless some features carry no information
    return (X, None) if fmap is None else (fmap.reduce_x(X), fmap)


def _solve(problem, *, tol: float = 1e-6, verbose: bool = False, max_iter: int = 10_000,
           time_limit: float | None = None, warm_start_w=None, client=None, **options):
    """The backend of ``solve(problem, "cutting_plane")``: the pair-free cutting-plane method.

    A problem made from documents is solved without forming its pairs (the costs become a
    (query, grade pair) table, :func:`~cvxrank.native.costs.cost_table`); a
    problem on a pair set needs its weights to be one value per (query,
    grade pair) and the pairs to be all the within-query pairs of the data
    (:func:`~cvxrank.native.costs.cost_table_from_pairs`).

    A variant with margins per grade pair (``Variant(margin="grade_difference")`` or
    ``"gain_difference"``, the hinge loss, nothing else) is solved the same way on
    :class:`~cvxrank.native.variant_oracle.VariantOracle`: a plane's offset is then
    ``Σ c_i m_i`` over the pairs violated at its point, and the model's dual is the variant's
    dual ``Σ α_i m_i − ½‖Dᵀα‖²`` (:mod:`cvxrank.variants`).

    The solution is certified by the method's own bound: every plane is a
    minorant of the loss, so the dual value of the plane model is a lower
    bound on ``L(w*)`` (see the module docstring). When that bound proves
    ``tol`` no other certificate is computed; otherwise, if the pairs exist,
    the pairwise certificate is tried too, starting from the model's
    pairwise dual point ``α_i = C_i Σ_k β_k [i violated at w_k]``.

    Parameters
    ----------
    problem : RankingProblem
        (or a :class:`~cvxrank.formulations.Formulation`: its problem is solved).
    tol : float
        Certified relative duality gap at which to stop.
    max_iter : int, default 10000
        Iteration cap (one oracle call each); reaching it gives ``"user_limit"``.
    time_limit : float, optional
        Seconds: a safety net; reaching it gives ``"user_limit"``.
    warm_start_w : array-like, optional
        Starting point, e.g. the solution for a nearby ``λ``.
    client : dask.distributed.Client, optional
        Evaluate the oracle over query shards on this cluster
        (:class:`cvxrank.native.dask.DaskOracle`); same numbers as locally.
    **options
        Passed to :func:`cutting_plane` (``rho``, ``prune_after``, ``threads``: BLAS threads, ...),
        plus ``n_shards`` with ``client`` and, without, ``oracle_threads`` (the ``threads`` of
        :class:`~cvxrank.native.oracle.PairFreeOracle`: 1 by default, None automatic) and
        ``oracle_kernel`` (``"auto"``: the compiled sweeps when built; ``"numpy"``; ``"compiled"``;
        the same results either way).

    Raises
    ------
    ValidationError
        For weights that differ inside a (query, grade pair) cell, explicit
        preference pairs, or a partial pair set; use an explicit-pair solver
        (``"clarabel"``, ``"subgradient"``) for those. For features or costs whose
        scale float64 cannot hold (:mod:`cvxrank.native.scale`).
    """
    from cvxrank import __version__

    t0 = time.perf_counter()
    problem, costs = pairfree_problem(problem, "cutting_plane", "hinge",
                                      "use 'truncated_newton' for the squared hinge or a CVXPY solver")
    check_scale(problem.data.X, costs.values[costs.n_pairs > 0].max(initial=0.0), problem.lam)
    variant = problem.variant
    n_shards = options.pop("n_shards", None)
    oracle_threads = check_threads(options.pop("oracle_threads", 1), "oracle_threads")
    oracle_kernel = options.pop("oracle_kernel", "auto")
    check_kernel(oracle_kernel)
    if oracle_kernel != "auto" and (client is not None or variant.margin is not None):
        raise ValidationError("oracle_kernel is for the local oracle with the papers' margin of 1 (the Dask shards and "
                              "the margin variants choose their own path)")
    fmap = None  # the features left out of a local solve (cvxrank.native.features), mapped back at the end
    if client is not None:
        if variant.margin is not None:
            raise ValidationError("the Dask oracle takes the papers' margin of 1 only; solve margins locally")
        if oracle_threads != 1:
            raise ValidationError("oracle_threads is for the local oracle; the Dask oracle runs one thread per shard")
        from cvxrank.native.dask import DaskOracle

        oracle = DaskOracle(client, problem.data, costs, n_shards=n_shards)
    else:
        if n_shards is not None:
            raise ValidationError("n_shards needs a dask client")
        if variant.margin is None:
            X, fmap = solver_x(problem.data)
            oracle = PairFreeOracle.from_data(problem.data, costs, threads=oracle_threads, kernel=oracle_kernel, X=X)
            del X  # a dense copy made here lives in the oracle only
        else:
            oracle = VariantOracle.from_data(problem.data, costs, margin=variant.margin)
    setup = time.perf_counter() - t0
    if fmap is not None and warm_start_w is not None:
        warm_start_w = fmap.to_reduced(check_common(tol, time_limit, warm_start_w, problem.n_features))

    checked = {}  # the last allowance computed: its point and parts (the certificate reuses them at that point)

    def allowance(w, bound=False, terms=0):  # what the certificate will add for the objective at w (its
        # evaluation summed `terms` pairs one by one; cvxrank.rounding), and with bound for the planes' own lower
        # bound (its model_rounding), on the scale of (9)
        x = w if fmap is None else fmap.to_full(w)
        t = abs_scores(problem, x)
        live = None  # the local oracle lists the pairs whose hinge may not be 0 at w (one sweep)
        if isinstance(oracle, PairFreeOracle) and variant.margin is None:
            def live(slack):
                return oracle.live_weights(w, slack) / (2.0 * problem.lam)
        primal = primal_rounding(problem, x, t, live, terms, pair_free=True)  # (its L: the oracle's sums)
        model = model_rounding(problem, x, t) if bound else None
        checked.update(x=np.array(x, dtype=np.float64), primal=primal, model=model, terms=terms)
        return 2.0 * problem.lam * (primal + (model or 0.0))

    run = cutting_plane(oracle, problem.lam, tol=tol, max_iter=max_iter, time_limit=time_limit, verbose=verbose,
                        warm_start_w=warm_start_w, keep_points=problem.needs_pairs, allowance=allowance, **options)
    if fmap is not None:  # back to the problem's features: w = E u
        run.w, run.w_model = fmap.to_full(run.w), fmap.to_full(run.w_model)
        if run.points is not None:
            run.points = np.array([fmap.to_full(p) for p in run.points]).reshape(-1, problem.n_features)
    alphas = []
    if problem.needs_pairs and not run.relative_gap <= tol:
        # The pairwise dual point of the model: plane k covers the pairs violated at its point w_k.
        pairs = problem.pairs
        required = variant.margins(pairs)
        alpha = np.zeros(pairs.n_pairs)  # (no plane lifted the bound above 0: no points, and α = 0 is its point)
        for beta_k, point in zip(run.beta[1:], () if run.points is None else run.points[1:]):
            if beta_k > 0:
                alpha += beta_k * (pairs.margins(point) < required)
        alphas.append(np.minimum(alpha, 1.0) * problem.C)
    # the allowance the run computed at its final point, for the certificate (the same function at the same w)
    reuse = (bool(checked) and variant.is_default and np.array_equal(checked["x"], run.w)
             and checked["terms"] == run.objective_terms)
    backend = {"optimal": "optimal", "user_limit": "user_limit"}.get(run.status, "optimal_inaccurate")
    resid = np.linalg.norm(run.w - run.w_model) / max(1.0, float(np.linalg.norm(run.w)))
    context = warnings.catch_warnings() if run.status == "float_limit" else contextlib.nullcontext()
    with context:
        if run.status == "float_limit":
            warnings.simplefilter("ignore", InaccurateSolutionWarning)  # warned when the solve started
        report = BackendReport(
            solver="cutting_plane", version=__version__, formulation="pairfree", scale="L", status=backend,
            alphas=tuple(alphas), lower_bound=run.lower_bound, objective_L=run.objective,
            objective_terms=run.objective_terms,
            bound_rounding=run.lower_rounding if run.lower_rounding is not None or not reuse else checked["model"],
            primal_rounding=checked["primal"] if reuse else None,
            bound_name=run.lower_name,
            dual_residual=float(resid), iterations=run.iterations, setup_time=setup, solve_time=run.solve_time,
            extras={"oracle_calls": run.oracle_calls, "pairfree_relative_gap": run.relative_gap,
                    "certifiable_gap": run.floor, "solver_status": run.status, "n_pairs": oracle.n_pairs,
                    "n_documents": oracle.n_documents, "planes": int(np.count_nonzero(run.beta[1:])),
                    "features_solved": oracle.n_features, **_start_extras(run, warm_start_w)},
            history=run.history,
        )
        return finish(problem, run.w, report, tol)
