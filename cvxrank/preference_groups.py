"""Preferences whose cost factors per document: groups of documents shown together, a weight per member.

Propensity SVM-Rank (Joachims, Swaminathan & Schnabel, WSDM 2017) prefers a clicked document to
every other document shown in its session, at the weight ``1/p`` of the position it was clicked
at. Merged over the sessions that showed the same documents (a *group* ``g``), the loss (9) of
Cao et al. (SIGIR 2006) is

.. math:: R(w) = \\sum_g \\sum_{i \\in g} a_{g,i} \\sum_{j \\in g,\\, j \\ne i} \\ell\\big(1 - (s_i - s_j)\\big),
          \\qquad s = X w,

with ``a_{g,i}`` the summed weights of ``i``'s clicks in the sessions of ``g`` (0 for a document
never clicked there) and ``ℓ`` the hinge ``[t]_+`` (or the squared hinge ``[t]_+²`` of
:mod:`cvxrank.variants`). The cost of the pair ``(i, j)`` is ``a_{g,i}``: it **factors per
document**, so the pair-free oracle of :mod:`cvxrank.native.document_oracle` evaluates ``R`` from
prefix sums over each group's sorted scores, without forming a pair.

As explicit pairs (:meth:`PreferenceGroups.pairs`) the same loss is: one pair ``(i, j)`` for every
member ``i`` of positive weight and every other member ``j`` of its group, identical pairs of
different groups merged into one whose weight is the sum of theirs (the same function of ``w``:
identical pairs have identical difference vectors). That is the merged pair set of
:func:`cvxrank.clicks.click_pairs` with ``rule="propensity"``, in its order (by query, then
better row, then worse row), and what a CVXPY solver compiles; Theorem 1 gives the QP (14) the
costs ``C_i = c_i/(2λ)``.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from cvxrank._memory import check_pairs
from cvxrank.data import RankingData
from cvxrank.exceptions import ValidationError
from cvxrank.pairs import PairSet, merge_pairs, preference_pairs

__all__ = ["PreferenceGroups"]


def _expand(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(j, starts[j] + k)`` for every ``j`` and ``0 <= k < counts[j]``, in the order of ``j`` then ``k``."""
    total = int(counts.sum())
    owner = np.repeat(np.arange(counts.shape[0]), counts)
    inner = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.repeat(starts, counts) + inner


class PreferenceGroups:
    """Groups of documents of one query, each member with a weight: the pairs ``(i, j)`` of a group at cost ``a_i``.

    Parameters
    ----------
    data : RankingData
        The documents (their grades are not read).
    group : array-like of int, shape (n_members,)
        Group of each member (any integer labels).
    document : array-like of int, shape (n_members,)
        Row of ``data.X`` of each member. A group holds documents of one query, each once.
    weight : array-like of float, shape (n_members,)
        ``a_{g,i} >= 0``, finite: the cost of every pair in which the member is preferred.

    Attributes
    ----------
    data : RankingData
    group, document, weight : ndarray, shape (n_members,)
        Members sorted by group (codes ``0 .. n_groups - 1`` in the order of the labels), then by
        document.
    offsets : ndarray of int64, shape (n_groups + 1,)
        Group ``g`` holds the members ``offsets[g]:offsets[g + 1]``.

    Raises
    ------
    ValidationError
        For mismatched lengths, a document out of range, a group spanning two queries or holding a
        document twice, a negative or non-finite weight, or no pair at all.

    Examples
    --------
    >>> import numpy as np
    >>> docs = RankingData(np.eye(3), [0, 0, 1], qid=[1, 1, 1])
    >>> groups = PreferenceGroups(docs, group=[0, 0, 0], document=[0, 1, 2], weight=[0.0, 0.0, 2.0])
    >>> groups.n_pairs
    2
    >>> pairs, weights = groups.pairs()
    >>> pairs.better.tolist(), pairs.worse.tolist(), weights.tolist()
    ([2, 2], [0, 1], [2.0, 2.0])
    """

    def __init__(self, data, group, document, weight):
        if not isinstance(data, RankingData):
            raise ValidationError(f"preference groups take RankingData, got {type(data).__name__}")
        group = np.asarray(group).ravel()
        document = np.asarray(document).ravel()
        try:
            weight = np.asarray(weight, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise ValidationError("weight must be numbers") from None
        if not (group.shape == document.shape == weight.shape):
            raise ValidationError(f"group, document and weight need one entry per member, got shapes {group.shape}, "
                                  f"{document.shape} and {weight.shape}")
        for name, arr in (("group", group), ("document", document)):
            if arr.size and arr.dtype.kind not in "iu":
                raise ValidationError(f"{name} must hold integers")
        m = data.n_documents
        if document.size and (document.min() < 0 or document.max() >= m):
            raise ValidationError(f"document must hold rows of the data (0..{m - 1})")
        if not np.all(np.isfinite(weight)) or np.any(weight < 0):
            raise ValidationError("weights must be non-negative and finite")
        _, code = np.unique(group, return_inverse=True)
        code = code.ravel().astype(np.int64)
        document = document.astype(np.int64)
        srt = np.lexsort((document, code))
        code, document, weight = code[srt], document[srt], weight[srt]
        same = (code[1:] == code[:-1])
        if np.any(same & (document[1:] == document[:-1])):
            raise ValidationError("a group holds a document twice")
        query = data.query_index[document]
        if np.any(same & (query[1:] != query[:-1])):
            raise ValidationError("a group holds documents of two queries")
        n_groups = int(code[-1]) + 1 if code.size else 0
        offsets = np.zeros(n_groups + 1, dtype=np.int64)
        np.cumsum(np.bincount(code, minlength=n_groups), out=offsets[1:])
        self.data, self.group, self.document, self.weight, self.offsets = data, code, document, weight, offsets
        for arr in (code, document, weight, offsets):
            arr.setflags(write=False)
        if self.n_group_pairs == 0:
            raise ValidationError("no preference pairs: no group has a member of positive weight and another member")

    # -- sizes ---------------------------------------------------------------------------
    @property
    def n_groups(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_members(self) -> int:
        return int(self.group.shape[0])

    @cached_property
    def sizes(self) -> np.ndarray:
        """Members of each group."""
        return np.diff(self.offsets)

    @cached_property
    def held_documents(self) -> np.ndarray:
        """The documents some group holds, ascending, each once (the rows of ``data.X`` the problem reads)."""
        return np.unique(self.document)

    @property
    def n_group_pairs(self) -> int:
        """Pairs before merging: ``Σ_g #{i ∈ g : a_{g,i} > 0} (|g| - 1)`` (an upper bound on :attr:`n_pairs`)."""
        return int(np.sum((self.weight > 0) * (self.sizes[self.group] - 1)))

    @cached_property
    def n_pairs(self) -> int:
        """Pairs of the merged pair set (:meth:`pairs`), counted without forming them where a document is
        preferred in one group only (``|g| - 1`` pairs); documents preferred in several groups have the union
        of their groups counted, from their own pairs (under the memory budget)."""
        live = self.weight > 0
        docs = self.document[live]
        several = np.bincount(docs, minlength=self.data.n_documents) > 1
        if not several.any():
            return self.n_group_pairs
        multi = live & several[self.document]
        single = live & ~multi
        total = int(np.sum(self.sizes[self.group[single]] - 1))
        better, worse = self._expanded(np.flatnonzero(multi))
        keys = np.unique(better * np.int64(self.data.n_documents) + worse)
        return total + int(keys.shape[0])

    # -- explicit pairs --------------------------------------------------------------------
    def _expanded(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(better, worse)`` rows of every pair in which one of ``members`` is preferred, group form."""
        g = self.group[members]
        counts = self.sizes[g] - 1
        check_pairs(int(counts.sum()), self.data.n_documents)
        owner, k = _expand(self.offsets[g], self.sizes[g])
        keep = k != members[owner]  # the member itself: not a pair
        return self.document[members[owner[keep]]], self.document[k[keep]]

    def pairs(self) -> tuple[PairSet, np.ndarray]:
        """The merged explicit pairs and their weights ``c = Σ_g a_{g,i}`` (formed once, then kept).

        Order: by query (the order of ``data.query_ids``), then better row, then worse row, as the merged
        pairs of :func:`cvxrank.clicks.click_pairs`.

        Raises
        ------
        cvxrank.MemoryBudgetError
            When the pairs (group form, counted before any is formed) would exceed the memory budget.
        """
        return self._pairs

    @cached_property
    def _pairs(self) -> tuple[PairSet, np.ndarray]:
        members = np.flatnonzero(self.weight > 0)
        g = self.group[members]
        owner, k = _expand(self.offsets[g], self.sizes[g])
        keep = k != members[owner]
        src = members[owner[keep]]
        better, worse, weights = merge_pairs(self.data, self.document[src], self.document[k[keep]], self.weight[src])
        pairs = preference_pairs(self.data, better, worse)
        weights.setflags(write=False)
        return pairs, weights

    def weight_of(self, *, better, worse, **_) -> np.ndarray:
        """The weight of each pair ``(better, worse)`` (rows of ``X``): the sum of ``a_{g,i}`` over the groups that
        hold both with ``better`` of positive weight. A pair rule (:func:`cvxrank.costs.evaluate_pair_rule`): the
        costs of a :class:`~cvxrank.problem.RankingProblem` made from these groups.

        Raises
        ------
        ValidationError
            For a pair the groups do not hold.
        """
        pairs, weights = self.pairs()
        m = np.int64(self.data.n_documents)
        keys = pairs.better * m + pairs.worse
        order = np.argsort(keys, kind="stable")
        want = np.asarray(better, dtype=np.int64) * m + np.asarray(worse, dtype=np.int64)
        at = np.minimum(np.searchsorted(keys[order], want), keys.shape[0] - 1)
        found = keys[order][at] == want
        if not found.all():
            i = int(np.flatnonzero(~found)[0])
            raise ValidationError(f"the preference groups hold no pair of documents {int(np.asarray(better)[i])} over "
                                  f"{int(np.asarray(worse)[i])}")
        return np.array(weights[order][at])

    def total_weight(self) -> float:
        """``Σ_i c_i`` over the pairs, without forming them: ``Σ_g Σ_{d ∈ g} a_{g,d} (|g| − 1)`` (merging identical
        pairs across groups sums their weights, so the total is the same)."""
        return float(np.dot(self.weight, self.sizes[self.group] - 1)) if self.n_members else 0.0

    def document_weights(self) -> np.ndarray:
        """``W_d = Σ_{pairs i ∋ d} c_i`` per document (as the better or the worse one), without forming pairs:
        ``Σ_g a_{g,d} (|g| - 1) + (A_g - a_{g,d})`` with ``A_g`` the total weight of group ``g``."""
        total = np.add.reduceat(self.weight, self.offsets[:-1]) if self.n_members else np.zeros(0)
        per_member = self.weight * (self.sizes[self.group] - 1) + (total[self.group] - self.weight)
        return np.bincount(self.document, weights=per_member, minlength=self.data.n_documents)

    def document_degrees(self) -> np.ndarray:
        """Pairs (group form) each document belongs to, as the better or the worse one: an upper bound on its
        degree in the merged pairs, for the memory estimate of ``D = P X``."""
        live = (self.weight > 0).astype(np.int64)
        live_count = np.add.reduceat(live, self.offsets[:-1]) if self.n_members else np.zeros(0, dtype=np.int64)
        per_member = live * (self.sizes[self.group] - 1) + (live_count[self.group] - live)
        return np.bincount(self.document, weights=per_member, minlength=self.data.n_documents).astype(np.int64)

    def __repr__(self) -> str:
        return (f"PreferenceGroups(n_groups={self.n_groups}, n_members={self.n_members}, "
                f"n_documents={self.data.n_documents})")
