"""Problem instances of a study: generated families with a size knob, LETOR files, user data.

An :class:`Instance` is a *recipe*: it is small, picklable and hashable into
the study definition, and :meth:`Instance.load` makes the data inside the
worker process that runs it (so a Dask worker generates its own data instead
of receiving it). Families and what their ``size`` means:

===========  ==========================================  =====================================
family       data                                        ``size``
===========  ==========================================  =====================================
``ohsumed``  :func:`cvxrank.datasets.make_ohsumed_like`   queries (about 150 documents and
             (3 grades 70/16/14 %, 45 features)           5,700 pairs each; 106 = OHSUMED)
``web``      :func:`cvxrank.datasets.make_web_like`       queries (about 100 documents, 5
             (5 grades, 136 features)                     grades, 3,000 pairs each)
``ecml``     :func:`cvxrank.datasets.make_ecml_simulation`  ``s``: grade sizes ``(10s, 2s, s)``,
             (one query, 2 features, section 4.1/ECML)    ``32 s²`` pairs; 100 = the paper
``letor``    :func:`cvxrank.load_letor` of a file          the first ``size`` queries (None: all)
``data``     a :class:`~cvxrank.RankingData` given         its number of queries (fixed)
``loader``   ``loader(size, seed)`` called in the worker   passed to the loader
===========  ==========================================  =====================================

A held-out test split (for the ``ndcg10`` column): ``test_fraction`` adds
``ceil(size x test_fraction)`` further queries from the same generator (the
same relevance model), or the next queries of a LETOR file; the ECML
simulation has one query, so its test set is a second draw with seed
``seed + 1``.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
from dataclasses import dataclass, field

import numpy as np

from cvxrank._memory import check_generated
from cvxrank._validation import POSITIVE_INT, Interval, check
from cvxrank.data import RankingData, load_letor
from cvxrank.datasets import make_ecml_simulation, make_ohsumed_like, make_web_like
from cvxrank.exceptions import ValidationError

__all__ = ["FAMILIES", "GENERATED", "Instance", "make_instances"]

#: Generated families and their generators ``f(size, seed)``.
GENERATED = {
    "ohsumed": lambda n, seed: make_ohsumed_like(n_queries=n, random_state=seed),
    "web": lambda n, seed: make_web_like(n_queries=n, random_state=seed),
}

GENERATED_MAKERS = {"ohsumed": make_ohsumed_like, "web": make_web_like}

#: Every family name an :class:`Instance` may have.
FAMILIES = ("ohsumed", "web", "ecml", "letor", "data", "loader")


def _check_size(size, family):
    if size is None and family in ("letor", "data", "loader"):
        return None
    return check(f"size of a {family!r} instance", size, POSITIVE_INT)


def _generated_shape(family: str, size: int, test_fraction: float) -> tuple[float, int]:
    """Expected ``(documents, features)`` an instance of a generated family draws (train and test)."""
    if family == "ecml":
        return 13 * size * (2 if test_fraction else 1), 2
    params = inspect.signature(GENERATED_MAKERS[family]).parameters
    lo, hi = params["docs_per_query"].default
    n = size + (math.ceil(size * test_fraction) if test_fraction else 0)
    return n * (lo + hi) / 2, params["n_features"].default


def _split_queries(data: RankingData, n_train: int, n_test: int, what: str):
    """The first ``n_train`` queries (in order of first appearance) and the ``n_test`` after them."""
    _, first = np.unique(data.qid, return_index=True)
    order = data.qid[np.sort(first)]
    if n_train + n_test > order.size:
        raise ValidationError(f"{what} has {order.size} queries, fewer than the {n_train} + {n_test} "
                              "(train + test) asked for")
    train = data.select_queries(order[:n_train]) if n_train < order.size else data
    test = data.select_queries(order[n_train:n_train + n_test]) if n_test else None
    return train, test


def _fingerprint(data: RankingData) -> str:
    h = hashlib.sha256()
    X = data.X
    for part in ((X.data, X.indices, X.indptr) if hasattr(X, "indptr") else (np.ascontiguousarray(X),)):
        h.update(np.ascontiguousarray(part).tobytes())
    h.update(np.ascontiguousarray(data.y).tobytes())
    h.update(repr(data.qid.tolist()).encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True, eq=False)
class Instance:
    """A problem instance of a study (see the module docstring for the families).

    Build one with :meth:`generated`, :meth:`letor`, :meth:`from_data` or
    :meth:`from_loader` rather than directly.

    Attributes
    ----------
    name : str
        The ``instance`` column of the results.
    family : str
    size : int or None
        The size knob (the ``size`` column).
    seed : int
    test_fraction : float
    path, test_path : str or None
        LETOR files.
    """

    name: str
    family: str
    size: int | None = None
    seed: int = 0
    test_fraction: float = 0.0
    path: str | None = None
    test_path: str | None = None
    data: RankingData | None = field(default=None, repr=False)
    test: RankingData | None = field(default=None, repr=False)
    loader: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValidationError(f"unknown instance family {self.family!r}; choose from {', '.join(FAMILIES)}")
        if not isinstance(self.name, str) or not self.name or "," in self.name:
            raise ValidationError(f"instance name must be a non-empty string without commas, got {self.name!r}")
        object.__setattr__(self, "size", _check_size(self.size, self.family))
        check("test_fraction", self.test_fraction, Interval(0, 1, closed="left"))

    # -- constructors ------------------------------------------------------
    @classmethod
    def generated(cls, family: str, size: int, *, seed: int = 0, test_fraction: float = 0.0,
                  name: str | None = None) -> Instance:
        """An instance of a generated family: ``"ohsumed"``, ``"web"`` or ``"ecml"``.

        Examples
        --------
        >>> inst = Instance.generated("ecml", 5, test_fraction=0.5)
        >>> train, test = inst.load()
        >>> train.n_documents, test.n_documents
        (65, 65)
        """
        if family not in tuple(GENERATED) + ("ecml",):
            raise ValidationError(f"unknown generated family {family!r}; choose from "
                                  f"{', '.join(tuple(GENERATED) + ('ecml',))}")
        instance = cls(name or family, family, size, seed, test_fraction)
        # before any study starts: the data a worker would draw must fit the budget
        check_generated(*_generated_shape(family, instance.size, test_fraction), f"the {family} instance of size {size}")
        return instance

    @classmethod
    def letor(cls, path, *, size: int | None = None, test_path=None, test_fraction: float = 0.0,
              name: str | None = None) -> Instance:
        """A LETOR/SVMlight file (its first ``size`` queries); test data from ``test_path`` or the next queries."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValidationError(f"LETOR file {path} does not exist")
        if test_path is not None:
            test_path = os.fspath(test_path)
            if not os.path.isfile(test_path):
                raise ValidationError(f"LETOR test file {test_path} does not exist")
            if test_fraction:
                raise ValidationError("give test_path or test_fraction, not both")
        stem = os.path.splitext(os.path.basename(path))[0]
        return cls(name or stem.replace(",", "_"), "letor", size, 0, test_fraction, path=os.path.abspath(path),
                   test_path=None if test_path is None else os.path.abspath(test_path))

    @classmethod
    def from_data(cls, name: str, data: RankingData, test: RankingData | None = None) -> Instance:
        """User data (shipped to the workers with the task)."""
        for what, d in (("data", data), ("test", test)):
            if d is not None and not isinstance(d, RankingData):
                raise ValidationError(f"{what} must be RankingData, got {type(d).__name__}")
        if test is not None and test.n_features != data.n_features:
            raise ValidationError(f"test data has {test.n_features} features, training data {data.n_features}")
        return cls(name, "data", data.n_queries, data=data, test=test)

    @classmethod
    def from_loader(cls, name: str, loader, size=None, *, seed: int = 0) -> Instance:
        """Data made inside the worker by ``loader(size, seed)``.

        ``loader`` must be picklable by reference (a module-level function)
        and return RankingData or ``(train, test)``.
        """
        if not callable(loader):
            raise ValidationError(f"loader must be callable, got {type(loader).__name__}")
        return cls(name, "loader", size, seed, loader=loader)

    # -- use -----------------------------------------------------------------
    def _n_test(self, n: int) -> int:
        return math.ceil(n * self.test_fraction) if self.test_fraction else 0

    def load(self) -> tuple[RankingData, RankingData | None]:
        """``(train, test)`` data; ``test`` is None without a split."""
        fam, n = self.family, self.size
        if fam in GENERATED:
            k = self._n_test(n)
            return _split_queries(GENERATED[fam](n + k, self.seed), n, k, self.name)
        if fam == "ecml":
            sizes = (10 * n, 2 * n, n)
            train = make_ecml_simulation(sizes=sizes, random_state=self.seed)
            test = make_ecml_simulation(sizes=sizes, random_state=self.seed + 1) if self.test_fraction else None
            return train, test
        if fam == "letor":
            data = load_letor(self.path)
            if self.test_path is not None:
                train = _split_queries(data, n, 0, self.path)[0] if n else data
                return train, load_letor(self.test_path, n_features=data.n_features)
            n_all = np.unique(data.qid).size
            if n is None:
                k = self._n_test(n_all)
                return _split_queries(data, n_all - k, k, self.path)
            return _split_queries(data, n, self._n_test(n), self.path)
        if fam == "data":
            return self.data, self.test
        out = self.loader(n, self.seed)
        train, test = out if isinstance(out, tuple) else (out, None)
        if not isinstance(train, RankingData) or (test is not None and not isinstance(test, RankingData)):
            raise ValidationError(f"loader of instance {self.name!r} must return RankingData or (train, test)")
        return train, test

    def describe(self) -> dict:
        """A JSON-able description that changes whenever the data would (for the study hash)."""
        d = {"name": self.name, "family": self.family, "size": self.size, "seed": self.seed,
             "test_fraction": self.test_fraction}
        for key in ("path", "test_path"):
            p = getattr(self, key)
            if p is not None:
                st = os.stat(p)
                d[key] = {"path": p, "bytes": st.st_size, "mtime": int(st.st_mtime)}
        if self.data is not None:
            d["data"] = _fingerprint(self.data)
            d["test"] = None if self.test is None else _fingerprint(self.test)
        if self.loader is not None:
            d["loader"] = f"{getattr(self.loader, '__module__', '?')}.{getattr(self.loader, '__qualname__', '?')}"
        return d

    def __repr__(self) -> str:
        return f"Instance({self.name!r}, family={self.family!r}, size={self.size})"

    def __getstate__(self) -> dict:
        """A loader defined in ``__main__`` (a notebook cell, a script on stdin) is pickled by value
        (cloudpickle, when installed): a worker process cannot import it by name."""
        state = dict(self.__dict__)
        loader = state.get("loader")
        if loader is not None and getattr(loader, "__module__", None) == "__main__":
            try:
                import cloudpickle
            except ImportError:  # pickled by name: a worker started by a guarded script still finds it
                return state
            state["loader"] = _ByValue(cloudpickle.dumps(loader))
        return state

    def __setstate__(self, state: dict) -> None:
        loader = state.get("loader")
        if isinstance(loader, _ByValue):
            import pickle

            state = {**state, "loader": pickle.loads(loader.data)}  # noqa: S301 - the study's own task
        for key, value in state.items():
            object.__setattr__(self, key, value)


@dataclass(frozen=True)
class _ByValue:
    """A function pickled by value (cloudpickle's bytes)."""

    data: bytes


def make_instances(specs, sizes=None, *, seed: int = 0, test_fraction: float = 0.0) -> list[Instance]:
    """Instances from command-line style names.

    Parameters
    ----------
    specs : sequence of str
        ``"ohsumed"``, ``"web"``, ``"ecml"`` (one instance per size) or
        ``"letor:PATH"`` (one instance per size; all queries when ``sizes``
        is None).
    sizes : sequence of int, optional
        Size knobs; required for generated families.

    Examples
    --------
    >>> [(i.name, i.size) for i in make_instances(["ohsumed", "ecml"], [1, 2])]
    [('ohsumed', 1), ('ohsumed', 2), ('ecml', 1), ('ecml', 2)]
    """
    out = []
    for spec in specs:
        family, _, arg = str(spec).partition(":")
        if family == "letor":
            if not arg:
                raise ValidationError("write a LETOR instance as letor:PATH")
            for size in (sizes or [None]):
                out.append(Instance.letor(arg, size=size, test_fraction=test_fraction))
        elif family in tuple(GENERATED) + ("ecml",):
            if arg:
                raise ValidationError(f"instance {spec!r}: only letor takes an argument (letor:PATH)")
            if not sizes:
                raise ValidationError(f"instance {family!r} needs sizes (e.g. sizes=[1, 2, 4])")
            out.extend(Instance.generated(family, s, seed=seed, test_fraction=test_fraction) for s in sizes)
        else:
            raise ValidationError(f"unknown instance {spec!r}; choose from ohsumed, web, ecml, letor:PATH")
    return out
