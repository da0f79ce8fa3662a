"""The memory budget: refuse to materialise what would not fit, before allocating it.

Two things in cvxrank grow with ``pairs x features`` or with a file's size
and can exhaust the machine's memory: the difference matrix ``D = P X`` that
the ``primal``, ``dual`` and ``hinge`` formulations hand to CVXPY, and
reading a large LETOR file. Before either, cvxrank estimates the bytes it
needs and compares them with the *memory budget*; above it, a
:class:`MemoryBudgetError` says what to do instead (the ``lifted``
formulation or the pair-free ``cutting_plane`` solver keep ``D`` factored),
rather than a swap storm or an out-of-memory kill an hour later.

The budget, first match wins:

1. :func:`set_memory_budget` (``None`` resets it);
2. the environment variable ``CVXRANK_MEMORY_BUDGET``: bytes (``"2000000000"``),
   a size with a unit (``"512MiB"``, ``"2GB"``, ``"1.5GiB"``), a share of the
   available memory (``"75%"``), or ``"off"`` for no limit;
3. half of the memory available when the check runs (``MemAvailable`` of
   ``/proc/meminfo``, else ``os.sysconf``), or 2 GiB when neither is known.

This module imports nothing of the package's own but its exceptions.
"""

from __future__ import annotations

import os
import re

from cvxrank.exceptions import ValidationError

__all__ = [
    "ENV_VAR",
    "MemoryBudgetError",
    "available_memory",
    "check_difference_matrix",
    "check_cvxpy_formulation",
    "check_generated",
    "check_letor_files",
    "check_memory",
    "check_model_file",
    "check_pairs",
    "check_problem",
    "cvxpy_formulation_bytes",
    "difference_bytes",
    "difference_matrix_bytes",
    "fits_memory",
    "format_bytes",
    "formulation_bytes",
    "generated_bytes",
    "get_memory_budget",
    "letor_read_bytes",
    "letor_values",
    "model_read_bytes",
    "newton_bytes",
    "pair_set_bytes",
    "parse_size",
    "peak_rss",
    "problem_bytes",
    "reset_peak_rss",
    "set_memory_budget",
]

#: Environment variable holding the budget.
ENV_VAR = "CVXRANK_MEMORY_BUDGET"
#: Share of the available memory used when no budget is set.
DEFAULT_FRACTION = 0.5
#: Budget when the available memory cannot be read.
FALLBACK_BUDGET = 2 * 2**30
#: Peak memory of a CVXPY problem holding ``D``, in multiples of ``D``'s own bytes (compilation copies it).
#: Every constant of this module is set just above a measured peak: ``docs/reliability.md``, "The memory budget".
CVXPY_COPIES = 16
#: Peak bytes per stored value (a grade, an ``index:value`` token) when scikit-learn reads a LETOR
#: file, whatever the number of digits of the values.
LETOR_BYTES_PER_VALUE = 32
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}
_override: int | None = None
_UNLIMITED = -1


class MemoryBudgetError(ValidationError):
    """An operation would need more memory than the budget allows; the message says what to do instead."""


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation without swapping, or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def parse_size(text, what: str = "memory budget") -> int:
    """Bytes from ``"512MiB"``, ``"2GB"``, ``"1e9"``, ``"75%"`` (of the available memory) or ``"off"`` (-1).

    Examples
    --------
    >>> parse_size("1.5KiB"), parse_size("2 GB"), parse_size("1e6"), parse_size("off")
    (1536, 2000000000, 1000000, -1)
    """
    if isinstance(text, bool):
        raise ValidationError(f"{what} must be a size such as '2GiB', got {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
        if not value > 0 or value == float("inf"):
            raise ValidationError(f"{what} must be a positive number of bytes, got {text!r}")
        return int(value)
    s = str(text).strip().lower()
    if s in ("off", "none", "unlimited", "inf"):
        return _UNLIMITED
    if s.endswith("%"):
        try:
            share = float(s[:-1]) / 100.0
        except ValueError:
            share = float("nan")
        if not 0 < share <= 1:
            raise ValidationError(f"{what} {text!r}: a percentage must be in (0, 100]")
        avail = available_memory()
        return int(share * (avail if avail is not None else FALLBACK_BUDGET / DEFAULT_FRACTION))
    match = re.fullmatch(r"([0-9.]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)", s)
    if not match or match.group(2) not in _UNITS:
        raise ValidationError(f"{what} {text!r} is not a size: use bytes or a unit (e.g. 512MiB, 2GB), "
                              "a percentage of the available memory (e.g. 75%), or 'off'")
    try:
        value = float(match.group(1)) * _UNITS[match.group(2)]
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ValidationError(f"{what} {text!r} must be a positive size")
    return int(value)


def set_memory_budget(value) -> None:
    """Set the budget for this process: bytes, a size string (see :func:`parse_size`), or None to reset.

    Examples
    --------
    >>> set_memory_budget("1GiB"); get_memory_budget()[0]
    1073741824
    >>> set_memory_budget(None)
    """
    global _override
    _override = None if value is None else parse_size(value)


def get_memory_budget() -> tuple[int | None, str]:
    """The budget in bytes (None: no limit) and where it comes from, for messages."""
    if _override is not None:
        return (None if _override == _UNLIMITED else _override), "set by cvxrank._memory.set_memory_budget"
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        budget = parse_size(env, f"{ENV_VAR}={env!r}:")
        return (None if budget == _UNLIMITED else budget), f"{ENV_VAR}={env.strip()}"
    avail = available_memory()
    if avail is None:
        return FALLBACK_BUDGET, f"the default {format_bytes(FALLBACK_BUDGET)}; set {ENV_VAR} to change it"
    return int(DEFAULT_FRACTION * avail), (f"half of the {format_bytes(avail)} available; set {ENV_VAR} "
                                           "to change it")


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``.

    Examples
    --------
    >>> format_bytes(1536), format_bytes(3 * 2**30)
    ('1.5 KiB', '3.0 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n:.1f} TiB"  # pragma: no cover


def check_memory(nbytes: float, what: str, advice: str) -> None:
    """Raise :class:`MemoryBudgetError` when ``nbytes`` exceeds the budget.

    Parameters
    ----------
    nbytes : float
        Estimated peak bytes of the operation.
    what : str
        The operation, e.g. ``"materialising D = P X (...)"``.
    advice : str
        What to do instead.
    """
    budget, source = get_memory_budget()
    if budget is not None and nbytes > budget:
        raise MemoryBudgetError(f"{what} needs about {format_bytes(nbytes)}, more than the memory budget of "
                                f"{format_bytes(budget)} ({source}); {advice}")


def fits_memory(nbytes: float) -> bool:
    """Whether ``nbytes`` is within the budget (for callers that can skip the work instead of failing)."""
    budget = get_memory_budget()[0]
    return budget is None or nbytes <= budget


def difference_bytes(n_pairs: int, n_features: int, nnz: int | None = None) -> int:
    """Bytes of ``D = P X`` from its size alone: dense ``8 ℓ n`` (``nnz`` None), sparse CSR ``12 nnz + 8 (ℓ + 1)``.

    Parameters
    ----------
    n_pairs, n_features : int
        ``ℓ`` and ``n`` (pairs counted, not formed).
    nnz : int, optional
        A bound on the stored entries of a sparse ``D``: the non-zeros of each pair's two rows of ``X``
        (:func:`cvxrank.pairs.pair_degrees` counts them without forming a pair). None for a dense ``X``.

    Returns
    -------
    int

    Examples
    --------
    >>> difference_bytes(1000, 5), difference_bytes(1000, 5, nnz=3000)
    (40000, 44008)
    """
    if nnz is None:
        return 8 * int(n_pairs) * int(n_features)
    return 12 * int(nnz) + 8 * (int(n_pairs) + 1)


def difference_matrix_bytes(pairs) -> int:
    """Bytes of ``D = P X`` for a :class:`~cvxrank.pairs.PairSet`: dense ``8 ℓ n``, sparse CSR ``12 nnz(D)``.

    ``nnz(D)`` is bounded by the non-zeros of each pair's two rows, counted
    without forming ``D`` (:func:`difference_bytes`).
    """
    X = pairs.data.X
    if hasattr(X, "indptr"):
        row_nnz = (X.indptr[1:] - X.indptr[:-1]).astype("int64")
        nnz = int(row_nnz[pairs.better].sum() + row_nnz[pairs.worse].sum())
        return difference_bytes(pairs.n_pairs, pairs.n_features, nnz)
    return difference_bytes(pairs.n_pairs, pairs.n_features)


def cvxpy_formulation_bytes(n_documents: int, n_features: int, n_pairs: int, d_bytes: int) -> int:
    """Estimated peak bytes of a CVXPY formulation holding ``D`` (``primal``, ``dual``, ``hinge``) of
    ``d_bytes`` (:func:`difference_bytes`): ``D`` compiled about :data:`CVXPY_COPIES` times, plus
    :func:`problem_bytes` of the ``"cvxpy"`` route. Pairs are counted, not formed."""
    return CVXPY_COPIES * int(d_bytes) + problem_bytes(n_documents, n_features, n_pairs, 0, "cvxpy")


def formulation_bytes(pairs) -> int:
    """Estimated peak bytes of a CVXPY formulation holding ``D`` (``primal``, ``dual``, ``hinge``):
    ``D`` compiled about :data:`CVXPY_COPIES` times, plus :func:`problem_bytes` of the ``"cvxpy"`` route."""
    return cvxpy_formulation_bytes(pairs.data.n_documents, pairs.n_features, pairs.n_pairs,
                                   difference_matrix_bytes(pairs))


#: What to use instead of materialising ``D`` when nothing more specific is known.
D_ADVICE = ("use the lifted formulation (formulation='lifted' keeps D = P X factored) or the pair-free "
            "solver solver='cutting_plane', or raise the budget")


def check_cvxpy_formulation(n_documents: int, n_features: int, n_pairs: int, d_bytes: int, *, dense: bool,
                            advice: str = D_ADVICE) -> None:
    """Refuse a CVXPY formulation holding ``D`` of ``d_bytes`` (:func:`difference_bytes`) when its
    :func:`cvxpy_formulation_bytes` exceed the budget: from counts, before a pair or ``D`` is formed.

    Parameters
    ----------
    n_documents, n_features, n_pairs : int
        The problem's size (pairs counted, not formed).
    d_bytes : int
        Bytes of ``D`` itself.
    dense : bool
        Whether ``D`` would be dense (for the message).
    advice : str
        What to do instead (the alternatives that apply).

    Raises
    ------
    MemoryBudgetError
        Above the budget; the message names ``D``'s size, the estimate, the budget and ``advice``.
    """
    check_memory(
        cvxpy_formulation_bytes(n_documents, n_features, n_pairs, d_bytes),
        f"materialising D = P X ({n_pairs:,} pairs x {n_features:,} features, "
        f"{'dense' if dense else 'sparse'}, {format_bytes(d_bytes)}) for a CVXPY formulation "
        f"(compilation copies it about {CVXPY_COPIES} times, and adds about {CVXPY_PAIR_BYTES:,} bytes a pair)",
        advice,
    )


def check_difference_matrix(pairs) -> None:
    """Refuse to materialise ``D`` for a CVXPY formulation when its compiled size exceeds the budget."""
    check_cvxpy_formulation(pairs.data.n_documents, pairs.n_features, pairs.n_pairs,
                            difference_matrix_bytes(pairs), dense=not hasattr(pairs.data.X, "indptr"))


#: Peak bytes per pair of forming the pairs of graded documents (:func:`cvxrank.pairs.make_pairs`): the
#: two document indices, the query and the grade pair of each, the incidence matrix ``P`` (two entries
#: a pair) and the temporaries of their construction; 132 measured, 76 held once formed (with the weights).
PAIR_SET_BYTES = 160
#: Where to go when the pairs themselves do not fit: the solvers that never form them.
PAIRFREE_ADVICE = ("the pair-free solvers never form pairs: solver='cutting_plane' (hinge loss) or "
                   "solver='truncated_newton' (squared hinge); or use fewer or shorter queries, or raise the budget")


def pair_set_bytes(n_pairs: int) -> int:
    """Estimated peak bytes of forming ``n_pairs`` pairs and their weights: :data:`PAIR_SET_BYTES` a pair.

    Examples
    --------
    >>> pair_set_bytes(1000)
    160000
    """
    return PAIR_SET_BYTES * int(n_pairs)


def check_pairs(n_pairs: int, n_documents: int, advice: str = PAIRFREE_ADVICE) -> None:
    """Refuse to form ``n_pairs`` pairs (counted from the grades, not formed) above the budget.

    Raises
    ------
    MemoryBudgetError
        When :func:`pair_set_bytes` exceeds the budget; the message names the pair count and ``advice``.
    """
    check_memory(pair_set_bytes(n_pairs),
                 f"forming the {n_pairs:,} pairs of {n_documents:,} documents (about {PAIR_SET_BYTES} bytes a "
                 "pair: their documents, queries, grade pairs and incidence matrix)", advice)


def _open_text(path):
    """``path`` opened for reading its (decompressed, for ``.gz`` and ``.bz2``) bytes."""
    path = os.fspath(path)
    if path.endswith(".gz"):
        import gzip

        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        import bz2

        return bz2.open(path, "rb")
    return open(path, "rb")


def letor_values(path) -> tuple[int, int]:
    """``(values, size)`` of a LETOR file: its values (a grade per line, an ``index:value`` per token)
    and the length of its text, counted over the whole decompressed text in chunks of 4 MiB.

    The whole text, not a sample: a long comment header or a compressed file would fool an estimate
    from the first MiB or from the file's size on disk. The
    decompressed size is counted while streaming rather than taken from the gzip trailer, which
    stores it modulo 2^32, only for the last member of a multi-member file, and which bzip2 lacks.
    """
    size = values = 0
    with _open_text(path) as fh:
        for chunk in iter(lambda: fh.read(2**22) + fh.readline(), b""):
            size += len(chunk)
            values += chunk.count(b":") - chunk.count(b"qid:") + chunk.count(b"\n")
    return values, size


def letor_read_bytes(path) -> int:
    """Estimated peak bytes of reading a LETOR file: :data:`LETOR_BYTES_PER_VALUE` per value counted
    by :func:`letor_values` (0 for an empty file)."""
    values, size = letor_values(path)
    return LETOR_BYTES_PER_VALUE * max(values, 1) if size else 0


def check_letor_files(paths, *, values=None, sizes=None) -> None:
    """Refuse to read LETOR files (read together) whose estimated footprint exceeds the budget, before reading.

    ``values`` (the number of values, a grade or an ``index:value`` each, counted in each file's whole
    decompressed text) and ``sizes`` (its length in bytes) come from the reader's scan; without them
    each file is counted by :func:`letor_values`."""
    paths = [os.fspath(p) for p in paths]
    if values is None:
        values, sizes = zip(*(letor_values(p) for p in paths)) if paths else ((), ())
    need = int(LETOR_BYTES_PER_VALUE * sum(max(v, 1) for v in values))
    size = sum(os.path.getsize(p) for p in paths) if sizes is None else sum(sizes)
    check_memory(need, f"reading {', '.join(paths)} ({format_bytes(size)} of text)",
                 "split the file, read a subset of its queries, or raise the budget")


#: Peak bytes per feature of a CVXPY problem (the variable ``w``, its bounds, the objective's
#: quadratic term and their compiled copies); at least what those arrays provably hold
#: (tests/test_memory_estimates.py), measured peaks in docs/reliability.md.
CVXPY_FEATURE_BYTES = 768
#: Peak bytes per pair of a CVXPY problem beyond ``D`` (the slack ``xi``, its constraints and their
#: compiled copies), for the primal, dual, hinge and lifted forms (tests/test_memory_estimates.py).
CVXPY_PAIR_BYTES = 2048
#: Peak bytes per feature of a native solver: the cutting-plane bundle fills up to 64 planes of ``n_features``.
NATIVE_FEATURE_BYTES = 512
#: Peak bytes per pair of a native solver that enumerates pairs (``subgradient``, ``gd``); the pair-free
#: solvers hold none.
NATIVE_PAIR_BYTES = 384
#: Peak bytes per document of every route (scores, orders, grades, their sorted copies).
DOCUMENT_BYTES = 128
ROUTES = ("cvxpy", "lifted", "native", "pairfree")


def problem_bytes(n_documents: int, n_features: int, n_pairs: int, nnz_x: int, route: str) -> int:
    """Estimated peak bytes of solving a problem by ``route``, beyond ``D = P X`` itself.

    Parameters
    ----------
    n_documents, n_features, n_pairs : int
        The problem's size (pairs counted, not formed).
    nnz_x : int
        Stored entries of ``X``.
    route : {"cvxpy", "lifted", "native", "pairfree"}
        ``"cvxpy"``: the ``primal``, ``dual`` and ``hinge`` formulations (``D`` itself is checked
        by :func:`check_difference_matrix`): :data:`CVXPY_FEATURE_BYTES` per feature and
        :data:`CVXPY_PAIR_BYTES` per pair. ``"lifted"``: the same, plus ``s = X w`` (``nnz(X)``
        entries of 12 bytes) compiled about :data:`CVXPY_COPIES` times. ``"native"``
        (``subgradient``, ``gd``): :data:`NATIVE_FEATURE_BYTES` per feature and
        :data:`NATIVE_PAIR_BYTES` per pair; ``"pairfree"`` (``cutting_plane``,
        ``truncated_newton``): per feature only. Every route adds :data:`DOCUMENT_BYTES` per document.

    Returns
    -------
    int
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    docs = DOCUMENT_BYTES * n_documents
    if route in ("cvxpy", "lifted"):
        lifted = CVXPY_COPIES * 12 * nnz_x if route == "lifted" else 0
        return CVXPY_FEATURE_BYTES * n_features + CVXPY_PAIR_BYTES * n_pairs + lifted + docs
    pairs = NATIVE_PAIR_BYTES * n_pairs if route == "native" else 0
    return NATIVE_FEATURE_BYTES * n_features + pairs + docs


_ROUTE_TEXT = {"cvxpy": "a CVXPY formulation", "lifted": "the lifted CVXPY formulation",
               "native": "a native solver", "pairfree": "even the leanest solver (pair-free, native)"}


def check_problem(n_documents: int, n_features: int, n_pairs: int, nnz_x: int, route: str,
                  alternatives=None, advice: str | None = None) -> None:
    """Refuse a solve whose :func:`problem_bytes` exceed the budget, before the solver allocates anything.

    A typo'd feature index ``100000000:0.2`` makes ``n_features`` 10^8 and every weight vector that long;
    one long query makes ``n_pairs`` grow with the square of its documents.

    Parameters
    ----------
    n_documents, n_features, n_pairs, nnz_x, route
        As for :func:`problem_bytes` (pairs counted, not formed).
    alternatives : sequence of str, optional
        The leaner ways that apply to this problem, named in the message (default: ``"use the pair-free
        solver solver='cutting_plane'"`` for every route but ``"pairfree"``).
    advice : str, optional
        What to do instead, in place of the advice made of ``alternatives``.
    """
    need = problem_bytes(n_documents, n_features, n_pairs, nnz_x, route)
    if alternatives is None:
        alternatives = ["use the pair-free solver solver='cutting_plane'"] if route != "pairfree" else []
    per_feature = CVXPY_FEATURE_BYTES if route in ("cvxpy", "lifted") else NATIVE_FEATURE_BYTES
    hints = []
    if per_feature * n_features >= need - per_feature * n_features:  # the weight vectors weigh most
        hints.append("check the data's largest feature index (one typo'd index makes every weight vector that long)")
    hints += [*alternatives, "use fewer pairs or queries", "raise the budget"]
    check_memory(need, f"solving a problem of {n_features:,} features, {n_documents:,} documents and "
                 f"{n_pairs:,} pairs with {_ROUTE_TEXT[route]}",
                 advice if advice is not None else ", ".join(hints[:-1]) + ", or " + hints[-1])


def newton_bytes(n_features: int, band: int) -> int:
    """Peak bytes of the cutting-plane solver's Newton phase: its dense Hessians (the current one, a
    trial one, and :func:`numpy.linalg.solve`'s copy: ``3 x 8 n_features^2``) and the band's dense
    differences (``2 x 8 band n_features``)."""
    return 8 * (3 * n_features * n_features + 2 * band * n_features)


#: Peak bytes per entry of ``X`` when generating data (:mod:`cvxrank.datasets`): the matrix and the
#: finiteness check's mask; a sparse draw (``density < 1``) adds the uniform draw, its mask and the CSR copy.
GENERATED_ENTRY_BYTES = 12
GENERATED_SPARSE_ENTRY_BYTES = 20
#: Peak bytes per generated document (grades, query ids, latent scores, their orders).
GENERATED_DOCUMENT_BYTES = 144


def generated_bytes(n_documents: float, n_features: int, density: float = 1.0) -> int:
    """Estimated peak bytes of generating ``n_documents x n_features`` ranking data.

    Parameters
    ----------
    n_documents : float
        Documents (the expected count when drawn at random).
    n_features : int
    density : float, default 1.0
        Below 1 the data are drawn sparse (:data:`GENERATED_SPARSE_ENTRY_BYTES` an entry).

    Returns
    -------
    int
    """
    entry = GENERATED_ENTRY_BYTES if density >= 1 else GENERATED_SPARSE_ENTRY_BYTES
    return int(n_documents * (GENERATED_DOCUMENT_BYTES + entry * n_features))


def check_generated(n_documents: float, n_features: int, what: str, density: float = 1.0) -> None:
    """Refuse to generate data whose :func:`generated_bytes` exceed the budget, before drawing anything."""
    check_memory(generated_bytes(n_documents, n_features, density),
                 f"generating {what} (about {n_documents:,.0f} documents x {n_features:,} features)",
                 "generate fewer queries or features, or raise the budget")


#: Peak bytes per number of a model file (:func:`cvxrank.estimators.load_model`): the Python float JSON
#: parses it into and its slot in the list (32), then its float64 in the weight vector (8).
MODEL_VALUE_BYTES = 40


def model_read_bytes(size: int, values: int) -> int:
    """Estimated peak bytes of reading a model file of ``size`` bytes holding at most ``values`` numbers:
    the bytes read and the text decoded from them (``2 size``), and :data:`MODEL_VALUE_BYTES` a number.

    Examples
    --------
    >>> model_read_bytes(1000, 50)
    4000
    """
    return 2 * int(size) + MODEL_VALUE_BYTES * int(values)


def check_model_file(path, size: int, values: int = 0) -> None:
    """Refuse to read (``values`` 0: from its size alone, before reading) or to parse a model file whose
    :func:`model_read_bytes` exceed the budget.

    Parameters
    ----------
    path : str or path-like
        The model file, for the message.
    size : int
        Its length in bytes.
    values : int, default 0
        A bound on its numbers (its commas, plus one), once its bytes are read.
    """
    what = f"{size:,} bytes" + (f", up to {values:,} numbers" if values else "")
    check_memory(model_read_bytes(size, values), f"reading the model file {os.fspath(path)} ({what})",
                 "raise the budget (a model holds a weight per feature: a stray large feature index at "
                 "training makes it that wide)")


# -- measuring ------------------------------------------------------------------
def _status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _ru_maxrss() -> int:
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # kB on Linux


def reset_peak_rss() -> int:
    """Reset this process's peak-RSS mark where Linux allows it (``/proc/self/clear_refs``); return the
    current resident set size in bytes (the peak so far where the mark cannot be reset)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    rss = _status_bytes("VmRSS")
    return rss if rss is not None else _ru_maxrss()


def peak_rss() -> int:
    """This process's peak resident set size in bytes since the last :func:`reset_peak_rss` (or start)."""
    hwm = _status_bytes("VmHWM")
    return hwm if hwm is not None else _ru_maxrss()
