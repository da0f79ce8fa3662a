"""Model files: a fitted ranker as plain JSON (weights, settings, feature count, version), never pickle.

A model file looks like::

    {
      "format": "cvxrank-model",
      "format_version": 1,
      "cvxrank_version": "0.1.0",
      "estimator": "RankSVMIR",
      "params": {"lam": 0.1, "tau": [[2, 1, 0.5], [2, 0, 0.9], [1, 0, 0.2]], ...},
      "n_features": 46,
      "coef": [0.12, -0.03, ...],
      "fitted": {"lam": 0.1, "tau": [[2, 1, 0.5], ...], "n_iter": 14},
      "solve": {"solver": "clarabel", "status": "optimal", "relative_gap": 2.1e-10, ...}
    }

Grade-pair tables (``tau``) are stored as ``[higher, lower, value]`` triples
and per-query tables (``mu``, ``margin``) as ``[query id, value]`` pairs, because JSON keys
are strings; arrays (per-pair margins, bounds per feature) as lists. A margin given as a
function of the pairs is code, which a model file never holds: saving such a model is refused.
Loading reads nothing but this structure: the estimator class is looked up in :data:`ESTIMATORS` by name, never imported
from the file, and every key is checked, so a file cannot make cvxrank run
anything.
"""

from __future__ import annotations

import json
import math
import os
import stat

import numpy as np

from cvxrank import __version__
from cvxrank._io import read_input
from cvxrank._memory import check_model_file
from cvxrank._validation import FINITE, NONNEG_INT, POSITIVE, POSITIVE_INT, Interval, check
from cvxrank.costs import Costs, abbreviate, query_table
from cvxrank.estimators.clicks import ClickRankSVM
from cvxrank.estimators.listwise import CsRgList, ListMLE
from cvxrank.estimators.pairwise import CostSensitiveRankSVM, RankSVM, RankSVMIR
from cvxrank.exceptions import ValidationError

__all__ = ["ESTIMATORS", "FORMAT", "FORMAT_VERSION", "save_model", "load_model", "model_to_dict", "model_from_dict"]

FORMAT = "cvxrank-model"
#: Bumped when a model file written by this version cannot be read by an older one.
FORMAT_VERSION = 1
_KEYS = {"format", "format_version", "cvxrank_version", "estimator", "params", "n_features", "coef", "fitted",
         "solve"}
_FITTED_KEYS = {"lam", "C", "tau", "n_iter", "eta", "propensities", "n_pairs"}
#: The fitted attributes of :class:`ClickRankSVM` a model file keeps (``eta_``, ``propensities_``, ``n_pairs_``).
_CLICK_FITTED = ("eta", "propensities", "n_pairs")


#: Estimator classes a model file may name.
ESTIMATORS = {cls.__name__: cls for cls in (RankSVM, CostSensitiveRankSVM, RankSVMIR, ListMLE, CsRgList, ClickRankSVM)}


def _encode_tau(tau):
    if tau is None or isinstance(tau, str):
        return tau
    return [[_number(hi), _number(lo), v] for hi, lo, v in Costs(tau=tau).to_json()["tau"]]


def _decode_tau(value, where):
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(t, list) and len(t) == 3 for t in value):
        raise ValidationError(f"{where} must be a list of [higher, lower, value] triples")
    table = {}
    for hi, lo, v in value:
        for x in (hi, lo, v):
            if not FINITE.admits(x):
                raise ValidationError(f"{where} holds {x!r}, not a finite number")
        table[(hi, lo)] = float(v)
    return Costs(tau=table).tau  # the one place costs are validated


def _decode_query_pairs(value, where, what):
    """``[[qid, value], ...]`` back to ``{qid: value}`` (qids are strings or numbers, values finite numbers)."""
    if not all(isinstance(item, list) and len(item) == 2 for item in value):
        raise ValidationError(f"{where} must be a list of [query id, {what}] pairs")
    table = {}
    for key, v in value:
        if not (isinstance(key, str) or FINITE.admits(key)) or not FINITE.admits(v):
            raise ValidationError(f"{where} holds [{abbreviate(key)}, {abbreviate(v)}], not [query id, finite number]")
        table[key] = float(v)
    return table


def _decode_mu(value, where):
    """``[[qid, μ], ...]`` back to ``{qid: μ}``, checked by :class:`~cvxrank.costs.Costs`."""
    return Costs(mu=_decode_query_pairs(value, where, "weight")).mu


def _encode_query_table(table) -> list:
    """``{qid: value}`` as ``[[qid, value], ...]`` (qids strings or numbers)."""
    return [[k if isinstance(k, str) else _number(k), float(v)] for k, v in table.items()]


def _encode_margin(value):
    """A ``margin`` parameter as JSON: a name or None as is, per query as pairs, per pair as a list."""
    if value is None or isinstance(value, str):
        return value
    if callable(value):
        raise ValidationError(f"cannot store margin={abbreviate(value)} in a model file: a function of the pairs is "
                              "code, which a model file never holds; give the margins per query ({query id: margin}) "
                              "or a built-in margin, or keep the model in memory")
    if isinstance(value, dict):
        return _encode_query_table(query_table(value, "margin", allow_zero=True))
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(f"cannot store parameter margin={abbreviate(value)} in a JSON model file") from None
    if not np.all(np.isfinite(values)):
        raise ValidationError(f"cannot store parameter margin={abbreviate(values)} in a JSON model file: "
                              "it is not finite")
    return values.tolist()


def _decode_margin(value, where):
    """``[[qid, margin], ...]`` back to ``{qid: margin}``; anything else is left to the estimator's checks."""
    if not (isinstance(value, list) and value and all(isinstance(item, list) for item in value)):
        return value
    return query_table(_decode_query_pairs(value, where, "margin"), where, allow_zero=True)


def _number(v):
    v = v.item() if hasattr(v, "item") else v
    if not Interval().admits(v):
        raise ValidationError(f"cannot store {v!r} in a model file: not a number")
    return v


def _json_value(name, value):
    """A parameter value as JSON, or a clear error."""
    if name == "tau":
        return _encode_tau(value)
    if name == "margin":
        return _encode_margin(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if name in ("lower", "upper") and value is not None:
        from cvxrank.variants import Variant

        if getattr(Variant(**{name: value}), name) is None:
            return None  # -inf / inf: no bound, which None says (JSON holds no infinity)
    if name == "mu" and isinstance(value, dict):
        return _encode_query_table(Costs(mu=value).mu)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise ValidationError(f"cannot store parameter {name}={abbreviate(value)} in a JSON model file") from None
    return value


def model_to_dict(model) -> dict:
    """The JSON document of a fitted model (see the module docstring)."""
    from sklearn.utils.validation import check_is_fitted

    name = type(model).__name__
    if name not in ESTIMATORS or ESTIMATORS[name] is not type(model):
        raise ValidationError(f"only cvxrank estimators can be saved, got {name}")
    check_is_fitted(model, "coef_")
    from cvxrank._io import plain_json

    if not all(math.isfinite(float(c)) for c in model.coef_):
        raise ValidationError(f"the fitted weights of this {name} are not all finite (the fit diverged: try a "
                              "larger lambda or smaller C); no model file written")
    params = {k: _json_value(k, v) for k, v in model.get_params(deep=False).items()}
    fitted = {"lam": getattr(model, "lam_", None), "C": getattr(model, "C_", None),
              "tau": _encode_tau(getattr(model, "tau_", None)), "n_iter": int(getattr(model, "n_iter_", 0))}
    if isinstance(model, ClickRankSVM):  # propensities as used, NaN (no value at a position) stored as null
        props = getattr(model, "propensities_", None)
        fitted.update(eta=getattr(model, "eta_", None), n_pairs=int(model.n_pairs_),
                      propensities=None if props is None else [float(v) for v in props])
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "cvxrank_version": __version__,
        "estimator": name,
        "params": params,
        "n_features": int(model.n_features_in_),
        "coef": [float(c) for c in model.coef_],
        "fitted": plain_json(fitted),  # an infinite C or gap is stored as null
        "solve": plain_json(dict(getattr(model, "solve_summary_", {}) or {})),
    }


def save_model(model, path) -> None:
    """Write a fitted model to ``path`` as JSON (atomically: temporary file, then rename)."""
    from cvxrank._io import write_atomic

    doc = model_to_dict(model)
    write_atomic(os.fspath(path), json.dumps(doc, indent=2, allow_nan=False) + "\n")


class _NonFiniteLiteral(ValueError):
    """A ``NaN``/``Infinity`` literal met while parsing; :func:`load_model` names the file."""


def _reject_constant(name):
    raise _NonFiniteLiteral(name)


def model_from_dict(doc, *, source="model") -> object:
    """Rebuild a fitted estimator from :func:`model_to_dict`'s document, checking every key."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValidationError(f"{source} is not a cvxrank model file (no \"format\": \"{FORMAT}\")")
    version = doc.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:
        raise ValidationError(
            f"{source} has model format {version!r} (written by cvxrank {doc.get('cvxrank_version', '?')}); "
            f"cvxrank {__version__} reads format {FORMAT_VERSION}"
        )
    missing, extra = sorted(_KEYS - set(doc)), sorted(set(doc) - _KEYS)
    if missing or extra:
        raise ValidationError(f"{source} is not a valid model file: "
                              + "; ".join(s for s in (f"missing keys {missing}" if missing else "",
                                                      f"unknown keys {extra}" if extra else "") if s))
    name = doc["estimator"]
    if not isinstance(name, str) or name not in ESTIMATORS:
        raise ValidationError(f"{source} names estimator {name!r}; known: {', '.join(ESTIMATORS.keys())}")
    cls = ESTIMATORS[name]
    params = doc["params"]
    if not isinstance(params, dict):
        raise ValidationError(f"{source}: params must be an object")
    known = set(cls().get_params(deep=False))
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValidationError(f"{source}: {name} has no parameters {unknown}")
    params = dict(params)
    if "tau" in params:
        params["tau"] = _decode_tau(params["tau"], f"{source}: params.tau")
    if isinstance(params.get("mu"), list):
        params["mu"] = _decode_mu(params["mu"], f"{source}: params.mu")
    if "margin" in params:
        params["margin"] = _decode_margin(params["margin"], f"{source}: params.margin")
    n = doc["n_features"]
    check(f"{source}: n_features", n, POSITIVE_INT)
    coef = doc["coef"]
    if not isinstance(coef, list) or len(coef) != n or not all(FINITE.admits(c) for c in coef):
        raise ValidationError(f"{source}: coef must be a list of {n} finite numbers")
    fitted = doc["fitted"]
    if not isinstance(fitted, dict):
        raise ValidationError(f"{source}: fitted must be an object")
    if set(fitted) - _FITTED_KEYS:
        raise ValidationError(f"{source}: unknown keys in fitted: {sorted(set(fitted) - _FITTED_KEYS)}")
    for attr in ("lam", "C"):
        if not POSITIVE.or_none().admits(fitted.get(attr)):  # JSON's null is None
            raise ValidationError(f"{source}: fitted.{attr} must be a positive number or null, got {fitted[attr]!r}")
    n_iter = fitted.get("n_iter", 0)
    if not NONNEG_INT.or_none().admits(n_iter):
        raise ValidationError(f"{source}: fitted.n_iter must be a non-negative integer, got {n_iter!r}")
    if set(fitted) & set(_CLICK_FITTED) and cls is not ClickRankSVM:
        raise ValidationError(f"{source}: fitted keys {sorted(set(fitted) & set(_CLICK_FITTED))} belong to ClickRankSVM")
    if not FINITE.or_none().admits(fitted.get("eta")):
        raise ValidationError(f"{source}: fitted.eta must be a number or null, got {fitted['eta']!r}")
    if not NONNEG_INT.or_none().admits(fitted.get("n_pairs")):
        raise ValidationError(f"{source}: fitted.n_pairs must be a non-negative integer or null, got {fitted['n_pairs']!r}")
    props = fitted.get("propensities")
    if props is not None and not (isinstance(props, list) and all(v is None or POSITIVE.admits(v) for v in props)):
        raise ValidationError(f"{source}: fitted.propensities must be a list of positive numbers (null: no value) "
                              "or null")
    if isinstance(fitted.get("tau"), str):
        raise ValidationError(f"{source}: fitted.tau must be a list of [higher, lower, value] triples or null")
    solve = doc["solve"]
    if not isinstance(solve, dict) or not all(
            v is None or isinstance(v, (str, bool, int)) or FINITE.admits(v) for v in solve.values()):
        raise ValidationError(f"{source}: solve must be an object of numbers, strings, booleans or nulls")
    model = cls(**params)
    model.coef_ = np.array(coef, dtype=np.float64)
    model.n_features_in_ = n
    model.n_iter_ = int(n_iter or 0)
    for attr in ("lam", "C"):
        if fitted.get(attr) is not None:
            setattr(model, attr + "_", fitted[attr])
    if "tau" in fitted:
        model.tau_ = _decode_tau(fitted["tau"], f"{source}: fitted.tau")
    if cls is ClickRankSVM:
        model.eta_ = None if fitted.get("eta") is None else float(fitted["eta"])
        model.propensities_ = None if props is None else np.array([np.nan if v is None else v for v in props],
                                                                  dtype=np.float64)
        model.n_pairs_ = fitted.get("n_pairs")
        model.propensity_estimate_ = None  # the estimate's standard errors and counts are not stored
    model.solve_summary_ = dict(doc["solve"])
    model.result_ = None  # the full SolveResult (dual point, history) is not stored
    return model


def _check_model_size(path) -> None:
    """Refuse a regular model file whose bytes and text alone would exceed the memory budget, before reading it."""
    try:
        info = os.stat(path)
    except OSError:
        return  # reading names the error
    if stat.S_ISREG(info.st_mode):
        check_model_file(path, info.st_size)


def load_model(path):
    """Read a model file written by :func:`save_model`.

    Raises
    ------
    ValidationError
        When the file cannot be read, is not JSON, not a cvxrank model, of
        another format version, or has missing, unknown or malformed keys.
        Parameter values (``params``) are only checked to be parameters of
        the named estimator; the estimator validates their values when it is
        fitted again.
    cvxrank._memory.MemoryBudgetError
        When reading it would exceed the memory budget (:func:`cvxrank._memory.check_model_file`:
        from its size before reading, from its numbers before parsing).
    """
    path = os.fspath(path)
    try:
        _check_model_size(path)
        raw = read_input(path)
        check_model_file(path, len(raw), raw.count(b",") + 1)  # before the text and its numbers are parsed
        text = raw.decode("utf-8")
        del raw  # not held while the text is parsed
        doc = json.loads(text, parse_constant=_reject_constant)
    except _NonFiniteLiteral as exc:
        raise ValidationError(f"{path} is not a valid cvxrank model file: it holds {exc}, which is not a finite "
                              "number") from None
    except ValidationError:  # a FIFO nothing writes to (read_input names it), or the memory budget
        raise
    except FileNotFoundError:
        raise ValidationError(f"model file {path} does not exist") from None
    except UnicodeDecodeError:
        raise ValidationError(f"{path} is not a cvxrank model file (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not a cvxrank model file (invalid JSON: {exc})") from None
    except RecursionError:
        raise ValidationError(f"{path} is not a cvxrank model file (JSON nested too deeply)") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise ValidationError(f"{path} is not a cvxrank model file ({exc})") from None
    except OSError as exc:
        raise ValidationError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    return model_from_dict(doc, source=path)
