"""The ``cvxrank`` command line.

Every failure the user can cause ends in one line on stderr and exit code 2;
outputs are written to a temporary file and renamed into place, so nothing is
left half-written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import pandas as pd

from cvxrank import __version__
from cvxrank.exceptions import CvxrankError

__all__ = ["main"]

EPILOG_VERIFY = """examples:
  cvxrank verify                                  # generated data, tau = mu = 1 (Ranking SVM)
  cvxrank verify --tau 2-1=2,2-0=3,1-0=1 --mu balanced --lam 0.05
  cvxrank verify --data train.letor --solvers clarabel,subgradient --json verify.json
  cvxrank verify --formulations primal,lifted,dual,hinge
"""

EPILOG_DEMO = """examples:
  cvxrank demo
  cvxrank demo --seed 3 --json demo.json
"""


def _grade(text: str):
    """A grade as written on the command line: int when integral, else float."""
    text = text.strip()
    return int(text) if text.isdigit() else float(text)


def _parse_tau(text: str | None):
    """``"2-1=3,2-0=3,1-0=0.5"`` -> ``{(2, 1): 3.0, (2, 0): 3.0, (1, 0): 0.5}``."""
    if text is None:
        return None
    table = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        hi, dash, lo = key.strip().partition("-")
        if not (sep and dash):
            raise CvxrankError(f"--tau item {item!r} is not HIGHER-LOWER=VALUE (e.g. 2-1=3)")
        try:
            table[(_grade(hi), _grade(lo))] = float(value)
        except ValueError:
            raise CvxrankError(f"--tau item {item!r} is not HIGHER-LOWER=VALUE with numbers") from None
    return table


def _parse_mu(text: str | None):
    if text is None or text == "none":
        return None
    if text == "balanced":
        return "balanced"
    raise CvxrankError(f"--mu must be 'none' or 'balanced', got {text!r}")


def _split(text: str | None):
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CvxrankError(f"cannot write {path}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cvxrank-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _format_table(df: pd.DataFrame) -> str:
    shown = df.drop(columns=["note"]).copy()
    for col in ("w_error", "w_bound", "identity_error", "objective_error", "relative_gap"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.1e}")
    for col in ("L", "M"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.8g}")
    shown["time"] = shown["time"].map(lambda v: f"{v:.3f}s")
    shown["passed"] = shown["passed"].map({True: "PASS", False: "FAIL"})
    return shown.to_string(index=False)


def _verify_report(df: pd.DataFrame, title: str) -> str:
    a = df.attrs
    tol = a["tolerances"]
    lines = [
        title,
        f"{a['n_pairs']} pairs, {a['n_features']} features, lambda = {a['lam']:g}; "
        f"C_i = tau*mu/(2 lambda) (Theorem 1); reference w: {a['reference']} (smallest certified gap)",
        "",
        _format_table(df),
        "",
        "w_error = |w - w_ref|/|w_ref|; w_bound = sqrt(2 G)/|w_ref|, the bound on |w - w*|/|w_ref| that the row's gap G proves;",
        "L = hinge objective (9) at the row's w, M = QP objective (14); identity_error = |L - 2 lambda M|/L;",
        "objective_error = solver's own optimum vs the reference; relative_gap = certified duality gap.",
        f"PASS: status optimal, w_error <= {tol['w']:g}, relative_gap <= {tol['gap']:g}, "
        f"objective_error <= {tol['objective']:g}, identity_error <= {tol['identity']:g}.",
        f"{int(df['passed'].sum())} of {len(df)} rows pass.",
    ]
    notes = df.loc[df["note"].fillna("") != "", ["formulation", "solver", "note"]]
    for row in notes.itertuples():
        lines.append(f"note {row.formulation}/{row.solver}: {row.note}")
    return "\n".join(lines)


def _to_json(df: pd.DataFrame) -> str:
    records = json.loads(df.to_json(orient="records"))
    attrs = {k: v for k, v in df.attrs.items()}
    return json.dumps({"meta": attrs, "rows": records}, indent=2) + "\n"


def _data_from_args(args):
    from cvxrank.data import load_letor
    from cvxrank.datasets import make_ranking

    if args.data:
        return load_letor(args.data), f"data: {args.data}"
    data = make_ranking(n_queries=args.queries, n_features=args.features, n_grades=args.grades,
                        random_state=args.seed)
    return data, f"data: generated (make_ranking, {args.queries} queries, {args.features} features, " \
                 f"{args.grades} grades, seed {args.seed})"


def cmd_verify(args) -> int:
    from cvxrank.theorem import verify_theorem1

    data, desc = _data_from_args(args)
    df = verify_theorem1(data, tau=_parse_tau(args.tau), mu=_parse_mu(args.mu), lam=args.lam,
                         solvers=_split(args.solvers),
                         formulations=_split(args.formulations) or ("primal", "dual"))
    print(_verify_report(df, f"Theorem 1 (Cao et al., SIGIR 2006) verified numerically; {desc}"))
    if args.json:
        write_atomic(args.json, _to_json(df))
        print(f"wrote {args.json}")
    return 0 if df["passed"].any() else 1


def cmd_demo(args) -> int:
    from cvxrank.datasets import make_ranking
    from cvxrank.theorem import verify_theorem1

    data = make_ranking(n_queries=12, n_features=5, n_grades=3, random_state=args.seed)
    tau = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}
    print("cvxrank demo: Ranking SVM for IR (tau per grade pair, balanced mu per query)")
    print(f"tau = {tau}, mu = balanced (equation (10)), lambda = 0.1\n")
    df = verify_theorem1(data, tau=tau, mu="balanced", lam=0.1, formulations=("primal", "lifted", "dual", "hinge"))
    print(_verify_report(df, f"Theorem 1 verified numerically; generated data, seed {args.seed}"))
    if args.json:
        write_atomic(args.json, _to_json(df))
        print(f"wrote {args.json}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cvxrank",
        description="Learning to rank with convex optimisation: the Ranking SVM family as CVXPY problems, "
                    "interchangeable solvers, certified solutions.",
        epilog="run 'cvxrank COMMAND --help' for a command's options and examples",
    )
    parser.add_argument("--version", action="version", version=f"cvxrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser("demo", help="verify Theorem 1 on generated data with every installed solver",
                          description="Verify Theorem 1 (SIGIR 2006) on a generated data set with every "
                                      "installed solver and print the table.",
                          epilog=EPILOG_DEMO, formatter_class=argparse.RawDescriptionHelpFormatter)
    demo.add_argument("--seed", type=int, default=0, help="seed of the generated data (default 0)")
    demo.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    demo.set_defaults(func=cmd_demo)

    verify = sub.add_parser("verify", help="check Theorem 1 / Proposition 1: hinge form = QP = dual",
                            description="Solve the weighted hinge problem (9), the QP (14) with "
                                        "C_i = tau*mu/(2 lambda) and its dual (18)-(19) with several solvers; "
                                        "print the agreement table. Exit code 1 if no row passes.",
                            epilog=EPILOG_VERIFY, formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("--data", metavar="FILE", help="a LETOR/SVMlight file with qid (default: generated data)")
    verify.add_argument("--queries", type=int, default=10, help="generated data: number of queries (default 10)")
    verify.add_argument("--features", type=int, default=5, help="generated data: features (default 5)")
    verify.add_argument("--grades", type=int, default=3, help="generated data: grades (default 3)")
    verify.add_argument("--seed", type=int, default=0, help="generated data: seed (default 0)")
    verify.add_argument("--lam", type=float, default=0.1, help="lambda of (9) (default 0.1)")
    verify.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair, e.g. 2-1=2,2-0=3,1-0=1 (default all 1)")
    verify.add_argument("--mu", metavar="none|balanced", help="query weights: none (default) or balanced, (10)")
    verify.add_argument("--solvers", metavar="S1,S2", help="solvers (default: installed clarabel,ecos,osqp,scs + subgradient)")
    verify.add_argument("--formulations", metavar="F1,F2", help="for CVXPY solvers: primal,lifted,dual,hinge (default primal,dual)")
    verify.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    verify.set_defaults(func=cmd_verify)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    pd.set_option("display.width", 200)
    try:
        return args.func(args)
    except (CvxrankError, ValueError, OSError) as exc:
        print(f"cvxrank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"cvxrank {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
