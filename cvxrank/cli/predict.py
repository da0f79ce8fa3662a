"""Score the documents of a LETOR/SVMlight file with a saved model: one score a line, in file order,
as SVMrank's svm_rank_classify writes them (higher ranks first within a query)."""

from __future__ import annotations

from cvxrank.cli._common import write_atomic

HELP = "score a LETOR file with a saved model (one score a line, SVMrank-compatible)"
EPILOG = """examples:
  cvxrank predict model.json test.letor                 # scores to stdout
  cvxrank predict model.json test.letor --output test.scores
  cvxrank evaluate test.letor --scores test.scores      # then evaluate them
"""


def add_arguments(parser) -> None:
    parser.add_argument("model", metavar="MODEL", help="a JSON model written by 'cvxrank fit'")
    parser.add_argument("data", metavar="DATA", help="a LETOR/SVMlight file (qid optional)")
    parser.add_argument("--output", metavar="PATH", help="write the scores here instead of stdout")


def format_scores(scores) -> str:
    """One score a line, shortest text that reads back as the same float."""
    return "".join(f"{float(s)!r}\n" for s in scores)


def predict_file(model_path: str, data_path: str):
    """Scores of ``data_path``'s documents under the model in ``model_path`` (feature counts must match)."""
    from cvxrank.data import load_letor
    from cvxrank.estimators import load_model
    from cvxrank.exceptions import ValidationError

    model = load_model(model_path)
    data = load_letor(data_path, n_features=None)
    if data.n_features > model.n_features_in_:
        raise ValidationError(f"{data_path} has features up to {data.n_features}, but the model was fitted "
                              f"with {model.n_features_in_}")
    import numpy as np

    # The file's highest feature index may simply be lower than the model's: the missing trailing
    # features count as zeros, without padding X to the model's width (BaseRanker.scores).
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, in one line
        scores = model.scores(data.X)
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValidationError(f"the model gives {bad.size} non-finite score(s) on {data_path} (first: document "
                              f"{bad[0] + 1}, {scores[bad[0]]}); its weights are too large for this data; "
                              "nothing written")
    return model, data, scores


def run(args) -> int:
    from cvxrank._io import check_outputs

    check_outputs([args.output], [args.model, args.data])
    _, _, scores = predict_file(args.model, args.data)
    text = format_scores(scores)
    if args.output:
        write_atomic(args.output, text)
        print(f"wrote {len(scores)} scores to {args.output}")
    else:
        print(text, end="")
    return 0
