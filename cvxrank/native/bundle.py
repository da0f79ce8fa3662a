"""The inner problem of the cutting-plane method: a small QP over the simplex.

Given cutting planes ``R(w) ≥ a_k^T w + b_k`` (``k = 1..T``) and ``R ≥ 0``,
the model problem ``min_w λ‖w‖² + max(0, max_k a_k^T w + b_k)`` has the dual

.. math:: \\max_{\\beta \\ge 0,\\ \\sum_k \\beta_k \\le 1} \\; D(\\beta) = b^\\top \\beta
          - \\frac{1}{4\\lambda} \\beta^\\top K \\beta, \\qquad K_{jk} = a_j^\\top a_k,

with ``w(β) = -Σ_k β_k a_k / (2λ)``. :class:`Bundle` keeps the planes, their
Gram matrix ``K`` (updated by one row per new plane) and ``β``, and solves the
dual exactly by a primal active-set method over the simplex, warm-started from
the previous ``β``. Only ``T`` (tens to a few hundred) matters here, never the
number of pairs or documents.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Bundle"]


class Bundle:
    """Cutting planes ``(a_k, b_k)``, the Gram matrix of the ``a_k`` and the dual point ``β``.

    Index 0 is the plane ``R ≥ 0`` (``a = 0, b = 0``), so that ``Σ β ≤ 1``
    becomes ``Σ β = 1`` over all planes.

    Parameters
    ----------
    n_features : int
    lam : float
        ``λ`` of the model problem.
    capacity : int, default 64
        Initial room for planes (doubles when full, up to ``max_planes``).
    keep_points : bool, default False
        Also store the point each plane was taken at.
    max_planes : int, optional
        Most planes held (plane 0 included, at least 4; default: no limit). When a new plane finds the bundle
        full, the planes with ``β = 0`` go first; if that is not enough, the lighter half of the others (the
        smallest ``β``) is replaced by their aggregate (Kiwiel 1985): ``(Σ β_k a_k, Σ β_k b_k) / Σ β_k`` over
        them, a convex combination of minorants and so a minorant itself, with ``β`` their sum. The model's
        minimiser and ``D(β)`` do not change, so the bound never falls; the memory of the planes stays
        ``max_planes x n`` floats. Not with ``keep_points`` (an aggregate has no point).

    Examples
    --------
    One plane ``R(w) ≥ 1 - w`` in one dimension with ``λ = 1/2``: the model
    ``½ w² + max(0, 1 - w)`` is minimised at ``w = 1`` with value ``1/2``.

    >>> import numpy as np
    >>> bundle = Bundle(1, 0.5)
    >>> bundle.add(np.array([-1.0]), 1.0)
    >>> bundle.solve()
    >>> value, u = bundle.dual()
    >>> round(value, 9), np.round(-u / (2 * 0.5), 9).tolist()
    (0.5, [1.0])
    """

    def __init__(self, n_features: int, lam: float, *, capacity: int = 64, keep_points: bool = False,
                 max_planes: int | None = None):
        if max_planes is not None:
            if keep_points:
                raise ValueError("max_planes aggregates planes, which then have no point: not with keep_points")
            max_planes = max(4, int(max_planes))
            capacity = min(capacity, max_planes)
        self.max_planes = max_planes
        self.lam = lam
        self.n = n_features
        self.A = np.zeros((capacity, n_features))
        self.b = np.zeros(capacity)
        self.K = np.zeros((capacity, capacity))  # a_j . a_k
        self.beta = np.zeros(capacity)
        self.beta[0] = 1.0
        self.age = np.zeros(capacity, dtype=np.int64)
        self.points = np.zeros((capacity, n_features)) if keep_points else None
        self.size = 1

    def add(self, a: np.ndarray, b: float, point: np.ndarray | None = None) -> None:
        """Append the plane ``a^T w + b`` (with ``β = 0``)."""
        if self.max_planes is not None and self.size >= self.max_planes:
            self._make_room()
        if self.size == self.A.shape[0]:
            self._grow()
        k = self.size
        self.A[k] = a
        self.b[k] = b
        row = self.A[:k + 1] @ a
        self.K[k, :k + 1] = row
        self.K[:k + 1, k] = row
        self.beta[k] = 0.0
        self.age[k] = 0
        if self.points is not None:
            self.points[k] = point
        self.size += 1

    def _make_room(self) -> None:
        """Free at least one slot (``max_planes``): drop the planes with ``β = 0``, else aggregate the lighter half
        of the others (the smallest ``β``) into one (class docstring)."""
        T = self.size
        self.prune(-1)  # every plane with β = 0 (plane 0 stays)
        if self.size < T:
            return
        old = np.sort(1 + np.argsort(self.beta[1:T], kind="stable")[:max(2, (T - 1) // 2)])  # the lighter half
        weight = self.beta[old]
        total = float(weight.sum())
        mix = weight / total
        a = mix @ self.A[old]
        b = float(mix @ self.b[old])
        Ka = mix @ self.K[old, :T]  # aggregate · a_j for every j, from the Gram matrix alone
        Kaa = float(Ka[old] @ mix)
        rest = np.ones(T, dtype=bool)
        rest[old] = False
        keep = np.flatnonzero(rest)  # plane 0 first, then the others in the order they came
        k = keep.size
        rows = self.K[np.ix_(keep, keep)]
        Ka_keep = Ka[keep]
        self.A[2:k + 1] = self.A[keep[1:]]  # (a copy is read first: plane 1 may be among those kept)
        self.A[1] = a
        self.b[1], self.b[2:k + 1] = b, self.b[keep[1:]]
        beta = self.beta[keep].copy()
        self.beta[0], self.beta[1], self.beta[2:k + 1] = beta[0], total, beta[1:]
        self.age[1], self.age[2:k + 1] = 0, self.age[keep[1:]]
        self.K[0, :k + 1] = self.K[:k + 1, 0] = 0.0  # plane 0 is a = 0
        self.K[2:k + 1, 2:k + 1] = rows[1:, 1:]
        self.K[1, 2:k + 1] = self.K[2:k + 1, 1] = Ka_keep[1:]
        self.K[1, 1] = Kaa
        self.size = k + 1

    def _grow(self) -> None:
        cap = 2 * self.A.shape[0]
        if self.max_planes is not None:
            cap = min(cap, self.max_planes)
        for name in ("A", "points"):
            arr = getattr(self, name)
            if arr is not None:
                new = np.zeros((cap, self.n))
                new[:self.size] = arr[:self.size]
                setattr(self, name, new)
        K = np.zeros((cap, cap))
        K[:self.size, :self.size] = self.K[:self.size, :self.size]
        self.K = K
        for name in ("b", "beta", "age"):
            arr = getattr(self, name)
            new = np.zeros(cap, dtype=arr.dtype)
            new[:self.size] = arr[:self.size]
            setattr(self, name, new)

    def prune(self, max_age: int) -> None:
        """Drop planes whose ``β`` has been 0 for more than ``max_age`` solves (never plane 0; ``-1``: every plane
        with ``β = 0``)."""
        T = self.size
        keep = (self.age[:T] <= max_age) | (self.beta[:T] > 0)
        keep[0] = True
        if keep.all():
            return
        idx = np.flatnonzero(keep)
        k = idx.size
        self.A[:k] = self.A[idx]
        self.b[:k] = self.b[idx]
        self.K[:k, :k] = self.K[np.ix_(idx, idx)]
        self.beta[:k] = self.beta[idx]
        self.age[:k] = self.age[idx]
        if self.points is not None:
            self.points[:k] = self.points[idx]
        self.size = k

    def solve(self, tol: float = 1e-13, max_steps: int | None = None) -> None:
        """Maximise ``D(β)`` over the simplex by a primal active-set method, from the current ``β``.

        Each step solves the KKT system of the equality-constrained problem
        on the support ``S`` (``H_SS β_S + ν 1 = b_S``, ``1ᵀ β_S = 1`` with
        ``H = K / (2λ)``); a negative component sends a ratio step to the
        boundary and drops a plane, otherwise the plane with the most negative
        reduced gradient ``(Hβ - b)_j + ν`` enters. A ridge of ``1e-12`` times
        the problem's scale keeps ``H`` definite (planes may be dependent); it
        moves ``D`` by at most half that, and ``D`` is evaluated without it,
        so the lower bound stays valid whatever the accuracy of ``β``.
        """
        T = self.size
        H = self.K[:T, :T] / (2.0 * self.lam)
        scale = max(float(np.max(np.diag(H))), float(np.max(np.abs(self.b[:T]))), 1e-300)
        H = H + (1e-12 * scale) * np.eye(T)  # strictly convex; changes D by at most 1e-12 scale / 2
        c = self.b[:T]
        beta = _on_simplex(self.beta[:T].copy())
        S = beta > 0
        steps = max_steps or 50 * T + 100
        for _ in range(steps):
            idx = np.flatnonzero(S)
            k = idx.size
            kkt = np.empty((k + 1, k + 1))
            kkt[:k, :k] = H[np.ix_(idx, idx)]
            kkt[:k, k] = 1.0
            kkt[k, :k] = 1.0
            kkt[k, k] = 0.0
            rhs = np.append(c[idx], 1.0)
            try:
                sol = np.linalg.solve(kkt, rhs)
            except np.linalg.LinAlgError:
                sol = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
            x, nu = sol[:k], sol[k]
            if np.all(x > 0):
                beta[:] = 0.0
                beta[idx] = x
                reduced = H @ beta - c + nu  # ≥ 0 off the support at the optimum
                reduced[idx] = 0.0
                j = int(np.argmin(reduced))
                if reduced[j] >= -tol * scale:
                    break
                S[j] = True
            else:
                d = x - beta[idx]
                neg = d < 0
                ratios = np.full(k, np.inf)
                ratios[neg] = beta[idx][neg] / -d[neg]
                i = int(np.argmin(ratios))
                t = min(1.0, ratios[i])
                beta[idx] = beta[idx] + t * d
                beta[idx[i]] = 0.0
                beta[beta < 0] = 0.0
                S = beta > 0
        beta = _on_simplex(beta)
        self.beta[:T] = beta
        self.age[:T] = np.where(beta > 0, 0, self.age[:T] + 1)

    def dual(self) -> tuple[float, np.ndarray]:
        """``D(β)`` and ``u = Σ β_k a_k`` at the current ``β`` (plane 0 contributes nothing)."""
        T = self.size
        beta = self.beta[:T]
        u = beta @ self.A[:T]
        return float(beta @ self.b[:T] - (u @ u) / (4.0 * self.lam)), u


def _on_simplex(beta: np.ndarray) -> np.ndarray:
    """``β`` with its negative entries set to 0, scaled to sum 1; all of it on plane 0 (``R ≥ 0``) when nothing is
    left. Only trivial planes (``a = 0, b = 0``: taken where no pair is violated) leave a ``β`` summing to 0: their
    Gram matrix is 0 and the active set's ridge underflows; on NumPy 1.24 the solve then returned no positive
    weight, and dividing by the sum gave NaN."""
    beta[beta < 0] = 0.0
    total = float(beta.sum())
    if total > 0 and np.isfinite(total):
        beta /= total
    else:
        beta[:] = 0.0
        beta[0] = 1.0
    return beta
