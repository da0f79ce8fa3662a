"""Solve the weighted hinge problem (9), the QP (14) with C_i = tau*mu/(2 lambda) and its dual
(18)-(19) with several solvers; print each row as it finishes, checked against its own certificate.
Exit code 0 when verified (every certified row passes and at least one does), 1 otherwise."""

from __future__ import annotations

import math

from cvxrank.cli._common import add_data_arguments, data_from_args, frame_to_json, split, write_json

HELP = "check Theorem 1 / Proposition 1: hinge form = QP = dual, within each solution's certificate"
EPILOG = """examples:
  cvxrank verify                                  # generated data, tau = mu = 1 (Ranking SVM)
  cvxrank verify --tau 2-1=2,2-0=3,1-0=1 --mu balanced --lam 0.05
  cvxrank verify --data train.letor --solvers clarabel,subgradient --json verify.json
  cvxrank verify --formulations primal,lifted,dual,hinge --time-limit 60

A row passes when its certificate proves its tolerance (status optimal), L = 2 lambda M holds at its
own w to float64 rounding, |w - w_ref| <= b(row) + b(ref) with b = sqrt(2 gap_M) the distance each
certificate proves, and |L - L_ref| <= the larger certified gap. A row that could not certify its
tolerance within its limits is "not certified" and counts neither way.
"""

#: Printed columns: (name, width, format).
_COLUMNS = [("formulation", 11, "s"), ("solver", 11, "s"), ("status", 18, "s"), ("verdict", 13, "s"),
            ("L", 15, ".9g"), ("M", 15, ".9g"), ("identity_error", 9, ".1e"), ("relative_gap", 9, ".1e"),
            ("w_distance", 9, ".1e"), ("w_bound", 9, ".1e"), ("time", 8, ".2f")]
_HEADERS = {"identity_error": "|L-2lM|/L", "relative_gap": "rel.gap", "w_distance": "|w-wref|",
            "w_bound": "bound", "time": "time(s)"}


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--lam", type=float, default=0.1, help="lambda of (9) (default 0.1)")
    parser.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair, e.g. 2-1=2,2-0=3,1-0=1 (default all 1)")
    parser.add_argument("--mu", metavar="none|balanced", help="query weights: none (default) or balanced, (10)")
    parser.add_argument("--solvers", metavar="S1,S2",
                        help="solvers (default: installed clarabel,ecos,osqp,scs + subgradient)")
    parser.add_argument("--formulations", metavar="F1,F2",
                        help="for CVXPY solvers: primal,lifted,dual,hinge (default primal,dual)")
    parser.add_argument("--time-limit", type=float, default=10.0, metavar="SECONDS",
                        help="seconds each solver may run, through its own option (default 10; ECOS has none)")
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")


def _cell(value, width: int, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    elif fmt == "s":
        text = str(value)
    else:
        text = format(value, fmt)
    return text.rjust(width) if fmt != "s" else text.ljust(width)


def header() -> str:
    return " ".join(_HEADERS.get(n, n).rjust(w) if f != "s" else n.ljust(w) for n, w, f in _COLUMNS).rstrip()


def format_row(row: dict) -> str:
    """One line of the table, as printed while the verification runs."""
    return " ".join(_cell(row.get(n), w, f) for n, w, f in _COLUMNS).rstrip()


def headline(df: pd.DataFrame) -> str:
    """The verdict in one line: it says "verified" only when every certified row passes and one does."""
    a = df.attrs
    counts = df["verdict"].value_counts()
    parts = [f"{a['n_passed']} of {a['n_certified']} certified rows pass"]
    for name in ("not certified", "error"):
        if counts.get(name, 0):
            parts.append(f"{counts[name]} {name}")
    if a["verified"]:
        return f"VERIFIED: {', '.join(parts)}."
    if a["n_certified"] == 0:
        return f"NOT VERIFIED: no row certified its tolerance ({', '.join(parts)})."
    return f"NOT VERIFIED: {', '.join(parts)}; a certified row failed (a bug: please report it)."


def legend(df: pd.DataFrame) -> str:
    return "\n".join([
        "L = hinge objective (9) at the row's w, M = QP objective (14); |L-2lM|/L: Theorem 1's identity at that w;",
        "rel.gap: certified relative duality gap; |w-wref|: distance to the reference w; bound: b(row) + b(ref),",
        "b = sqrt(2 gap_M), the distance to w* each certificate proves. pass: certified, identity to rounding,",
        "|w-wref| <= bound and |L-Lref| <= the larger certified gap. not certified: the solver did not reach its",
        "tolerance within its limits; it proves nothing and counts neither way.",
    ])


def run(args) -> int:
    from cvxrank.costs import Costs
    from cvxrank.theorem import verify_theorem1

    from cvxrank._io import check_outputs

    costs = Costs.from_text(args.tau, args.mu)  # checked before any data is read or solved
    check_outputs([args.json], [args.data])  # before the solves, never onto the data
    data, desc = data_from_args(args)
    print(f"Theorem 1 (Cao et al., SIGIR 2006) checked numerically; {desc}; lambda = {args.lam:g}; "
          f"C_i = tau*mu/(2 lambda); time limit {args.time_limit:g} s per solver", flush=True)
    print(header(), flush=True)
    df = verify_theorem1(data, costs=costs, lam=args.lam, solvers=split(args.solvers),
                         formulations=split(args.formulations) or ("primal", "dual"),
                         time_limit=args.time_limit, on_row=lambda row: print(format_row(row), flush=True))
    a = df.attrs
    print(f"\n{a['n_pairs']} pairs, {a['n_features']} features; reference {a['reference']} "
          f"(relative gap {a['reference_relative_gap']:.1e}, distance bound {a['reference_distance_bound']:.1e})")
    print(legend(df))
    for row in df.itertuples():
        if isinstance(row.note, str) and row.note:
            print(f"note {row.formulation}/{row.solver}: {row.note}")
    print(headline(df))
    if args.json:
        write_json(args.json, frame_to_json(df))
        print(f"wrote {args.json}")
    return 0 if a["verified"] else 1


def report(df: pd.DataFrame, title: str) -> str:
    """The whole verification as text: title, table, legend, notes and the headline."""
    a = df.attrs
    lines = [title, f"{a['n_pairs']} pairs, {a['n_features']} features, lambda = {a['lam']:g}; reference "
             f"{a['reference']} (relative gap {a['reference_relative_gap']:.1e})", "", header()]
    lines += [format_row(row) for row in df.to_dict("records")]
    lines += ["", legend(df)]
    lines += [f"note {r.formulation}/{r.solver}: {r.note}" for r in df.itertuples() if isinstance(r.note, str) and r.note]
    lines.append(headline(df))
    return "\n".join(lines)
