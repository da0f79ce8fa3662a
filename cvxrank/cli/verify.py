"""Solve the weighted hinge problem (9), the QP (14) with C_i = tau*mu/(2 lambda) and its dual
(18)-(19) with several solvers; print the agreement table. Exit code 1 if no row passes."""

from __future__ import annotations

from cvxrank.cli._common import add_data_arguments, data_from_args, frame_to_json, parse_mu, parse_tau, split, \
    write_json

HELP = "check Theorem 1 / Proposition 1: hinge form = QP = dual"
EPILOG = """examples:
  cvxrank verify                                  # generated data, tau = mu = 1 (Ranking SVM)
  cvxrank verify --tau 2-1=2,2-0=3,1-0=1 --mu balanced --lam 0.05
  cvxrank verify --data train.letor --solvers clarabel,subgradient --json verify.json
  cvxrank verify --formulations primal,lifted,dual,hinge
"""


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--lam", type=float, default=0.1, help="lambda of (9) (default 0.1)")
    parser.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair, e.g. 2-1=2,2-0=3,1-0=1 (default all 1)")
    parser.add_argument("--mu", metavar="none|balanced", help="query weights: none (default) or balanced, (10)")
    parser.add_argument("--solvers", metavar="S1,S2",
                        help="solvers (default: installed clarabel,ecos,osqp,scs + subgradient)")
    parser.add_argument("--formulations", metavar="F1,F2",
                        help="for CVXPY solvers: primal,lifted,dual,hinge (default primal,dual)")
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")


def format_table(df: pd.DataFrame) -> str:
    import pandas as pd  # here, not at the top: cvxrank --help must not load pandas

    shown = df.drop(columns=["note"]).copy()
    for col in ("w_error", "w_bound", "identity_error", "objective_error", "relative_gap"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.1e}")
    for col in ("L", "M"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.8g}")
    shown["time"] = shown["time"].map(lambda v: f"{v:.3f}s")
    shown["passed"] = shown["passed"].map({True: "PASS", False: "FAIL"})
    return shown.to_string(index=False)


def report(df: pd.DataFrame, title: str) -> str:
    """The agreement table of :func:`cvxrank.theorem.verify_theorem1` with its legend."""
    a = df.attrs
    tol = a["tolerances"]
    lines = [
        title,
        f"{a['n_pairs']} pairs, {a['n_features']} features, lambda = {a['lam']:g}; "
        f"C_i = tau*mu/(2 lambda) (Theorem 1); reference w: {a['reference']} (smallest certified gap)",
        "",
        format_table(df),
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


def run(args) -> int:
    from cvxrank.theorem import verify_theorem1

    data, desc = data_from_args(args)
    tau = parse_tau(args.tau)
    df = verify_theorem1(data, tau=tau, mu=parse_mu(args.mu), lam=args.lam, solvers=split(args.solvers),
                         formulations=split(args.formulations) or ("primal", "dual"))
    print(report(df, f"Theorem 1 (Cao et al., SIGIR 2006) verified numerically; {desc}"))
    if args.json:
        write_json(args.json, frame_to_json(df))
        print(f"wrote {args.json}")
    return 0 if df["passed"].any() else 1
