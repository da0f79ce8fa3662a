"""results.json and every --json output keep floats as they are: DataFrame.to_json
rounded to 10 digits, so a certified gap of 3.9e-11 was stored as 0.0."""

import json

import numpy as np
import pandas as pd

from cvxrank._io import frame_to_json
from cvxrank._io import plain_json as plain


def test_frame_to_json_round_trips_every_float():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(50) * 10.0 ** rng.integers(-15, 15, 50), [3.9e-11, 0.1 + 0.2]])
    df = pd.DataFrame({"relative_gap": values, "n": np.arange(values.size)})
    df.attrs["tol"] = np.float64(1 / 3)
    back = json.loads(json.dumps(frame_to_json(df)))
    assert [row["relative_gap"] for row in back["rows"]] == values.tolist()  # exact, not approx
    assert back["meta"]["tol"] == 1 / 3
    # what the old code stored, for contrast: the 3.9e-11 gap became 0.0
    assert json.loads(df.to_json(orient="records"))[-2]["relative_gap"] == 0.0


def test_plain_turns_numpy_and_non_finite_into_json():
    out = plain({1: np.float32(0.5), "a": (np.int64(2), np.array([np.nan, np.inf])), "b": [float("-inf")]})
    assert out == {"1": 0.5, "a": [2, [None, None]], "b": [None]}
    json.dumps(out, allow_nan=False)  # strict JSON
