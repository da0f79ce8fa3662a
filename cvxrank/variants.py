"""Variants of the papers' problem: loss, margins, elastic net and bounds on ``w``, each certified.

A :class:`Variant` extends the weighted hinge problem (9)/SIGIR to

.. math::

    \\min_{l \\le w \\le u}\\; L(w) = \\sum_i c_i\\, \\ell\\big(m_i - \\langle w, d_i \\rangle\\big)
        + \\lambda \\|w\\|^2 + \\rho_L \\|w\\|_1,
    \\qquad \\ell(t) = [t]_+ \\ \\text{(hinge)} \\ \\text{or}\\ [t]_+^2 \\ \\text{(squared hinge)},

with per-pair margins ``m_i`` (1 in the papers; the grade or gain difference of the pair; one
per query; or a function of the pairs), an ℓ1 weight ``ρ_L`` (elastic net) and bounds
``l ≤ w ≤ u`` (non-negative or monotone features). The default variant is the papers' problem.
On the QP scale ``M = L / (2λ)``, with ``C_i = c_i / (2λ)`` and ``ρ = ρ_L / (2λ)``,

.. math:: M(w) = \\varphi(w) + \\sum_i C_i\\, \\ell(m_i - \\langle w, d_i \\rangle), \\qquad
          \\varphi(w) = \\tfrac12 \\|w\\|^2 + \\rho \\|w\\|_1 + I_{[l, u]}(w).

**The dual of every variant.** Writing ``C_i ℓ(t) = sup_α (α t − h_i(α))`` with
``h_i = I_{[0, C_i]}`` (hinge) or ``h_i(α) = α² / (4 C_i)`` on ``α ≥ 0`` (squared hinge), weak
duality gives, for every such ``α``,

.. math:: M(w^*) \\ge D(\\alpha) = \\sum_i \\big(m_i \\alpha_i - h_i(\\alpha_i)\\big) - \\varphi^*(D^\\top \\alpha),
          \\qquad \\varphi^*(v) = \\sum_j \\big(v_j u_j - \\tfrac12 u_j^2 - \\rho |u_j|\\big),\\
          u_j = \\operatorname{clip}\\big(S_\\rho(v_j), l_j, u_j\\big),

``S_ρ`` the soft threshold (the maximiser of a concave one-dimensional function over an
interval is its unconstrained maximiser clipped to the interval). With ``m = 1``, ``ρ = 0`` and
no bounds it is the dual (18)-(19). ``φ`` is 1-strongly convex, so ``‖w − w*‖ ≤ sqrt(2 gap_M)``
for every variant. The dual point of a ``w`` is read off the optimality conditions
(``α_i = C_i [m_i > <w, d_i>]`` for the hinge, ``α_i = 2 C_i [m_i − <w, d_i>]_+`` for the squared
hinge), or taken from a solver's constraint duals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from weakref import WeakKeyDictionary

import numpy as np

from cvxrank.costs import MAX_C, abbreviate, evaluate_pair_rule, per_query_values, query_table
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet

__all__ = ["LOSSES", "MARGINS", "MAX_L1", "Variant", "variant_certificate"]

#: Losses of a pair's margin shortfall ``t = m_i − <w, d_i>``.
LOSSES = ("hinge", "squared_hinge")
#: Built-in margin rescalings (besides 1, margins per query, by a function of the pairs, and per pair).
MARGINS = ("grade_difference", "gain_difference")


def _bound(value, n: int, what: str, default: float) -> np.ndarray:
    if value is None:
        return np.full(n, default)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"{what} must be numbers, got {type(value).__name__}") from None
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ValidationError(f"{what} must be one number or one per feature ({n}), got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValidationError(f"{what} has a NaN")
    return arr


#: The largest ℓ1 weight ``ρ_L``, as :data:`cvxrank.costs.MAX_C` bounds ``λ`` and ``C``: with ``λ`` down to
#: ``1/(2 MAX_C)``, ``ρ = ρ_L / (2λ)`` stays below ``1e200`` and ``ρ ‖w‖₁`` finite in float64.
MAX_L1 = MAX_C


def _no_bound(value, key: str, side: float):
    """A bound as the variant keeps it: None for no bound, which an infinite scalar (``lower=-inf``,
    ``upper=inf``) or an array infinite on that side everywhere also means; the value itself otherwise."""
    if value is None or callable(value) or isinstance(value, (str, bytes, bool)):
        return value
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return value  # refused with its message by bounds()
    if arr.size and np.all(arr == side):
        return None
    if arr.ndim == 0:
        if np.isnan(arr):
            raise ValidationError(f"{key} must be a number or None (no bound), got {value!r}")
        if np.isinf(arr):
            raise ValidationError(f"{key}={value!r} excludes w = 0 (the bounds must allow it: lower <= 0 <= upper)")
    return value


_MARGIN_FORMS = (f"None, {', '.join(repr(m) for m in MARGINS)}, a mapping {{query id: margin}}, "
                 "a function of the pairs or one number per pair")


def _parse_margin(margin):
    """The margin as the variant keeps it, checked once: None, a built-in name, a function of the pairs,
    ``{query id: float}`` or a read-only float64 array (one number per pair)."""
    if margin is None or callable(margin):
        return margin
    if isinstance(margin, str):
        if margin not in MARGINS:
            raise ValidationError(f"unknown margin {abbreviate(margin)}; choose one of {_MARGIN_FORMS}")
        return margin
    if isinstance(margin, Mapping):
        if not margin:
            raise ValidationError("margin per query is empty: give {query id: margin} for every query with pairs")
        return query_table(margin, "margin", allow_zero=True, most=MAX_L1)
    try:
        m = np.array(margin, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"margin must be {_MARGIN_FORMS}, got {abbreviate(margin)}") from None
    if m.ndim != 1 or not np.all(np.isfinite(m)) or np.any(m < 0) or np.any(m > MAX_L1):
        raise ValidationError(f"margin must be one non-negative number per pair, each at most {MAX_L1:g} "
                              f"(a margin times C_i must stay finite in float64), got {abbreviate(m)}")
    m.setflags(write=False)
    return m


@dataclass(frozen=True, eq=False, repr=False)
class Variant:
    """A variant of the weighted hinge problem (9) (module docstring); the default is the papers'.

    Parameters
    ----------
    loss : {"hinge", "squared_hinge"}, default "hinge"
        ``[t]_+`` (the papers) or ``[t]_+²`` (the L2 loss of LIBLINEAR's rank SVM).
    margin : None, "grade_difference", "gain_difference", mapping, callable or array of shape (n_pairs,)
        Required margin ``m_i`` of each pair: 1 (the papers), the grade difference
        ``y_better − y_worse``, the gain difference ``2^{y_better} − 2^{y_worse}``, one margin per
        query ``{query id: m_q >= 0}`` (every query with pairs needs one), a function of the pairs
        called as ``margin(higher=, lower=, qid=, better=, worse=)`` with one array per argument
        (:func:`cvxrank.costs.evaluate_pair_rule`), or given per pair. Functions and arrays follow
        the pair order of :func:`cvxrank.pairs.make_pairs` (by query, then the better document's
        grade descending, then document position). Each margin is non-negative and finite, at most
        :data:`MAX_L1`; not all zero. The margins of a pair set are computed once (a function is
        called once per pair set). The pair-free solvers take 1 and the built-in margins only.
    l1 : float, default 0
        ``ρ_L`` of the elastic net, on the scale of (9): ``L`` gains ``ρ_L ‖w‖₁``. In
        ``[0, MAX_L1]`` (:data:`MAX_L1`, 1e100): beyond it ``ρ = ρ_L / (2λ)`` overflows float64.
    lower, upper : None, float or array of shape (n_features,)
        Bounds on ``w`` (e.g. ``lower=0`` for non-negative weights). ``lower=-inf`` and ``upper=inf``
        (or arrays of them) mean no bound and are kept as None, so every solver that takes no bounds
        takes them and a model file stores them; ``lower=inf``, ``upper=-inf`` and NaN are refused.
    constraints : callable, optional
        ``constraints(w) -> list`` of CVXPY constraints on the variable ``w``
        (e.g. ``lambda w: [w[0] >= w[1]]``). The certificate is the
        Lagrangian dual value at the solver's constraint duals (module
        docstring): affine constraints enter it exactly, convex ones through
        their linearisation at the solution (a relaxation, tight at the
        optimum: :meth:`cvxrank.formulations.Formulation.edits`); the
        violation of the constraints at the returned ``w`` is bounded by
        ``certificate.infeasibility``, and ``"optimal"`` needs it within
        ``certificate.feasibility_tol``. Constraints must be convex under
        CVXPY's rules (DCP) and hold finite numbers.

    Examples
    --------
    >>> Variant(loss="squared_hinge", l1=0.1, lower=0.0).is_default
    False

    Margins per query, or by a rule of the pairs (here the gap of the grades, halved):

    >>> Variant(margin={"q1": 1.0, "q2": 2.0}).margin
    {'q1': 1.0, 'q2': 2.0}
    >>> Variant(margin=lambda higher, lower, **_: (higher - lower) / 2)
    Variant(loss='hinge', margin=<function <lambda>>, l1=0.0, lower=None, upper=None, constraints=None)
    """

    loss: str = "hinge"
    margin: object = None
    l1: float = 0.0
    lower: object = None
    upper: object = None
    constraints: object = None

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise ValidationError(f"unknown loss {abbreviate(self.loss)}; choose one of {', '.join(LOSSES)}")
        if self.constraints is not None and not callable(self.constraints):
            raise ValidationError("constraints must be a function w -> list of CVXPY constraints")
        if isinstance(self.l1, bool) or not isinstance(self.l1, (int, float, np.integer, np.floating)) \
                or not np.isfinite(self.l1) or self.l1 < 0:
            raise ValidationError(f"l1 must be a non-negative finite number, got {abbreviate(self.l1)}")
        if self.l1 > MAX_L1:
            raise ValidationError(
                f"l1={self.l1!r} is too large: l1 must lie in [0, {MAX_L1:g}]; beyond it rho = l1 / (2 lam) and "
                "rho ||w||_1 overflow float64")
        object.__setattr__(self, "l1", float(self.l1))
        object.__setattr__(self, "margin", _parse_margin(self.margin))
        object.__setattr__(self, "_margins_of", WeakKeyDictionary())  # PairSet -> its margins, computed once
        for key, side in (("lower", -np.inf), ("upper", np.inf)):
            object.__setattr__(self, key, _no_bound(getattr(self, key), key, side))

    def __repr__(self) -> str:
        """The fields, with arrays, mappings and functions abbreviated (:func:`cvxrank.costs.abbreviate`)."""
        shown = ", ".join(f"{f.name}={abbreviate(getattr(self, f.name), 'queries')}" for f in fields(self))
        return f"Variant({shown})"

    def __getstate__(self) -> dict:
        """The fields only: the margins computed per pair set are not copied or pickled."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_margins_of", WeakKeyDictionary())

    @property
    def is_default(self) -> bool:
        """True for the papers' problem (hinge, margin 1, no ℓ1, no bounds)."""
        return (self.loss == "hinge" and self.margin is None and self.l1 == 0
                and self.lower is None and self.upper is None and self.constraints is None)

    @property
    def extensions(self) -> frozenset:
        """How the variant departs from the papers' problem besides its loss: a subset of
        ``{"margin", "margin_per_pair", "l1", "bounds", "constraints"}`` (``"margin"``: a built-in
        margin per grade pair, which the pair-free solvers take; ``"margin_per_pair"``: margins given
        per pair, per query or by a function of the pairs, which only solvers that form the pairs
        take: a solver that cannot refuses the variant naming ``margin_per_pair``).

        Examples
        --------
        >>> sorted(Variant(loss="squared_hinge", margin="grade_difference", lower=0.0).extensions)
        ['bounds', 'margin']
        """
        parts = set()
        if self.margin is not None:
            parts.add("margin" if isinstance(self.margin, str) else "margin_per_pair")
        if self.l1 != 0:
            parts.add("l1")
        if self.lower is not None or self.upper is not None:
            parts.add("bounds")
        if self.constraints is not None:
            parts.add("constraints")
        return frozenset(parts)

    # -- text form ----------------------------------------------------------------
    def describe(self) -> str:
        """A short text naming the variant: ``"papers"`` for the default, else ``key=value`` items joined
        by ``+`` (what :meth:`from_text` reads; arrays, margins per query or by a function, and
        constraints show as ``given``, which :meth:`from_text` does not read back).

        Examples
        --------
        >>> Variant(loss="squared_hinge", margin="grade_difference", l1=0.1).describe()
        'loss=squared_hinge+margin=grade_difference+l1=0.1'
        """
        if self.is_default:
            return "papers"
        parts = [] if self.loss == "hinge" else [f"loss={self.loss}"]
        if self.margin is not None:
            parts.append(f"margin={self.margin if isinstance(self.margin, str) else 'given'}")
        if self.l1 != 0:
            parts.append(f"l1={self.l1:g}")
        for key in ("lower", "upper"):
            value = getattr(self, key)
            if value is not None:
                parts.append(f"{key}={value:g}" if np.ndim(value) == 0 else f"{key}=given")
        if self.constraints is not None:
            parts.append("constraints=given")
        return "+".join(parts)

    @classmethod
    def from_text(cls, text: str) -> Variant:
        """Read :meth:`describe`'s form: ``papers`` (or ``hinge``), or ``+``-joined items ``loss=…``,
        ``margin=…``, ``l1=…``, ``lower=…``, ``upper=…``; a bare ``squared_hinge`` is ``loss=squared_hinge``.
        ``lower=-inf`` and ``upper=inf`` are no bound, as in the constructor.

        Examples
        --------
        >>> Variant.from_text("squared_hinge+margin=gain_difference")
        Variant(loss='squared_hinge', margin='gain_difference', l1=0.0, lower=None, upper=None, constraints=None)
        """
        text = str(text).strip()
        if text in ("papers", "hinge", "default"):
            return cls()
        kwargs = {}
        for item in text.split("+"):
            key, sep, value = item.strip().partition("=")
            if not sep and key in LOSSES:
                key, value = "loss", key
            if key not in ("loss", "margin", "l1", "lower", "upper") or not value or key in kwargs:
                raise ValidationError(
                    f"cannot read the variant {text!r}: write papers, or items loss=hinge|squared_hinge, "
                    f"margin={'|'.join(MARGINS)}, l1=V, lower=V, upper=V joined by '+' (e.g. squared_hinge+l1=0.1)")
            if key in ("l1", "lower", "upper"):
                try:
                    number = float(value)
                except ValueError:
                    raise ValidationError(f"variant {text!r}: {key} must be a number, got {value!r}") from None
                if np.isnan(number) or (key == "l1" and not np.isfinite(number)):
                    raise ValidationError(f"variant {text!r}: {key} must be {'finite' if key == 'l1' else 'a number'}, "
                                          f"got {value!r}")
                kwargs[key] = number
            else:
                kwargs[key] = value
        return cls(**kwargs)

    # -- per-problem values ------------------------------------------------------
    def margins(self, pairs: PairSet) -> np.ndarray:
        """``m_i`` of every pair, in the order of ``pairs`` (computed once per pair set, read-only).

        Raises
        ------
        ValidationError
            For a built-in margin on pairs not formed from grades, margins per query that miss a
            query with pairs or name one the data lacks, a function that raises or returns other
            than one non-negative finite number per pair, per-pair margins of the wrong length,
            or margins that are all zero.
        """
        if self.margin is None:
            return np.ones(pairs.n_pairs)
        m = self._margins_of.get(pairs)
        if m is None:
            m = self._compute_margins(pairs)
            if pairs.n_pairs and not np.any(m > 0):
                raise ValidationError("every pair has margin 0: w = 0 is optimal whatever the data, nothing to learn")
            m.setflags(write=False)
            self._margins_of[pairs] = m
        return m

    def _compute_margins(self, pairs: PairSet) -> np.ndarray:
        """``m_i`` of every pair from the margin as given (:meth:`margins` checks and keeps them)."""
        if callable(self.margin):
            return np.array(evaluate_pair_rule(self.margin, pairs, "margin", most=MAX_L1))
        if isinstance(self.margin, dict):
            per_query = per_query_values(self.margin, pairs.data.query_ids, pairs.pairs_per_query > 0, "margin")
            return per_query[pairs.query]
        if isinstance(self.margin, str):
            y = np.asarray(pairs.data.y, dtype=np.float64)
            hi, lo = y[pairs.better], y[pairs.worse]
            with np.errstate(over="ignore", invalid="ignore"):  # 2**1100 is inf: refused below
                m = hi - lo if self.margin == "grade_difference" else np.exp2(hi) - np.exp2(lo)
            if pairs.source != "grades" or np.any(m <= 0):
                raise ValidationError(f"margin={self.margin!r} needs pairs formed from grades "
                                      "(better grade first); give margins per pair instead")
            if not np.all(np.isfinite(m)) or np.any(m > MAX_L1):
                raise ValidationError(f"margin={self.margin!r}: margins must be positive and finite, at most "
                                      f"{MAX_L1:g}; the grades reach {y.max(initial=0):g}, whose differences "
                                      "leave float64 (rescale the grades, or give margins per pair)")
            return m
        if self.margin.shape != (pairs.n_pairs,):
            raise ValidationError(f"margin must be {pairs.n_pairs} non-negative finite numbers (one per pair), "
                                  f"got {abbreviate(self.margin)}")
        return np.array(self.margin)

    def bounds(self, n_features: int) -> tuple[np.ndarray, np.ndarray]:
        """``(l, u)`` of every feature (``±inf`` where unbounded)."""
        lo = _bound(self.lower, n_features, "lower", -np.inf)
        hi = _bound(self.upper, n_features, "upper", np.inf)
        if np.any(lo > hi):
            raise ValidationError("a lower bound exceeds its upper bound: the problem is infeasible")
        if np.any(lo > 0) or np.any(hi < 0):
            raise ValidationError("the bounds must allow w = 0 (lower <= 0 <= upper)")
        return lo, hi

    def check(self, n_features: int) -> None:
        """Validate the bounds against the number of features."""
        self.bounds(n_features)

    # -- objectives (QP scale M) -------------------------------------------------
    def shortfall(self, pairs: PairSet, w) -> np.ndarray:
        """``[m_i − <w, d_i>]_+`` of every pair."""
        return np.maximum(0.0, self.margins(pairs) - pairs.margins(w))

    def qp_objective(self, pairs: PairSet, w, C, lam: float) -> float:
        """``M(w)`` (``+inf`` outside the bounds)."""
        w = np.asarray(w, dtype=np.float64)
        lo, hi = self.bounds(w.size)
        if np.any(w < lo) or np.any(w > hi):
            return np.inf
        t = self.shortfall(pairs, w)
        loss = t if self.loss == "hinge" else t * t
        rho = self.l1 / (2.0 * lam)
        return float(0.5 * w @ w + rho * np.abs(w).sum() + np.dot(C, loss))

    def dual_objective(self, pairs: PairSet, alpha, C, lam: float, affine=()) -> float:
        """``D(α)`` of the module docstring (a lower bound on ``M(w*)`` for every feasible ``α``).

        ``affine`` holds ``(A, c, ν)`` of user constraints ``A w + c ≤ 0`` (``ν ≥ 0``) or
        ``A w + c = 0`` (any ``ν``): the Lagrangian dual value
        ``Σ m α − h(α) + Σ νᵀc − φ*(Dᵀα − Σ Aᵀν)``.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        m = self.margins(pairs)
        if self.loss == "hinge":
            h = 0.0
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                h = float(np.sum(np.where(C > 0, alpha * alpha / (4.0 * np.where(C > 0, C, 1.0)),
                                          np.where(alpha > 0, np.inf, 0.0))))
        v = pairs.rmatvec(alpha)
        shift = 0.0
        for A, c, nu in affine:
            v = v - A.T @ nu
            shift += float(nu @ c)
        rho = self.l1 / (2.0 * lam)
        lo, hi = self.bounds(v.size)
        u = np.clip(np.sign(v) * np.maximum(np.abs(v) - rho, 0.0), lo, hi)
        conj = float(np.sum(v * u - 0.5 * u * u - rho * np.abs(u)))
        return float(np.dot(m, alpha) - h - conj + shift)

    def primal_from_dual(self, pairs: PairSet, alpha, lam: float) -> np.ndarray:
        """The ``w`` that attains ``φ*(Dᵀα)``: ``clip(S_ρ(Dᵀα), l, u)`` (for ``(16)`` when ``ρ = 0``, no bounds)."""
        v = pairs.rmatvec(np.asarray(alpha, dtype=np.float64))
        lo, hi = self.bounds(v.size)
        rho = self.l1 / (2.0 * lam)
        return np.clip(np.sign(v) * np.maximum(np.abs(v) - rho, 0.0), lo, hi)

    def kkt_alpha(self, pairs: PairSet, w, C) -> np.ndarray:
        """The dual point the optimality conditions give at ``w``."""
        t = self.margins(pairs) - pairs.margins(w)
        if self.loss == "hinge":
            return np.where(t > 0, C, 0.0)
        return 2.0 * C * np.maximum(t, 0.0)

    def clip_alpha(self, alpha, C) -> np.ndarray:
        """A candidate ``α`` made dual-feasible."""
        alpha = np.maximum(np.asarray(alpha, dtype=np.float64), 0.0)
        return np.minimum(alpha, C) if self.loss == "hinge" else np.where(C > 0, alpha, 0.0)


def variant_certificate(variant: Variant, pairs: PairSet, C, lam: float, w, alphas=(), affine=()):
    """``(M(w), best D(α), α, affine duals)`` over the candidates: the ``alphas`` given (clipped) and the KKT point.

    ``affine`` holds ``(A, c, ν, kind)`` of the user's affine constraints with the solver's duals
    (``kind`` ``"<="`` or ``"=="``); an inequality's ``ν`` is clipped to ``ν ≥ 0``, an equality's is
    tried with both signs (CVXPY's sign convention aside, any ``ν`` gives a valid bound). The last
    value is the ``(A, c, ν)`` of the best bound (empty without constraints).
    """
    C = np.asarray(C, dtype=np.float64)
    primal = variant.qp_objective(pairs, w, C, lam)
    candidates = [variant.clip_alpha(a, C) for a in alphas if a is not None]
    candidates.append(variant.kkt_alpha(pairs, w, C))
    if affine:
        fixed = [(A, c, np.maximum(nu, 0.0)) for A, c, nu, kind in affine if kind == "<="]
        free = [(A, c, nu) for A, c, nu, kind in affine if kind == "=="]
        choices = [fixed + [(A, c, s * nu) for A, c, nu in free] for s in (1.0, -1.0)]
        best = max(((variant.dual_objective(pairs, a, C, lam, ch), a, ch) for a in candidates for ch in choices),
                   key=lambda t: t[0])
        return primal, best[0], best[1], best[2]
    values = [variant.dual_objective(pairs, a, C, lam) for a in candidates]
    best = int(np.argmax(values))
    return primal, values[best], candidates[best], []
