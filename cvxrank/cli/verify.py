"""Solve the weighted hinge problem (9), the QP (14) with C_i = tau*mu/(2 lambda) and its dual
(18)-(19) with several solvers; print each row as it finishes, checked against its own certificate.
Every solver runs within a limit on its work (iterations or oracle calls), not on the clock, so the
verdicts are the same on a quiet and on a busy machine.
Exit code 0 when verified (every certified row passes and at least one does), 1 otherwise."""

from __future__ import annotations

import math
import sys

from cvxrank.cli._common import add_data_arguments, data_from_args, frame_to_json, split, write_json

HELP = "check Theorem 1 / Proposition 1: hinge form = QP = dual, within each solution's certificate"
EPILOG = """examples:
  cvxrank verify                                  # generated data, tau = mu = 1 (Ranking SVM)
  cvxrank verify --tau 2-1=2,2-0=3,1-0=1 --mu balanced --lam 0.05
  cvxrank verify --data train.letor --json verify.json
  cvxrank verify --solvers clarabel,osqp,subgradient --work-limit subgradient=50000
  cvxrank verify --formulations primal,lifted,dual,hinge --time-limit 60

default rows: clarabel on the primal QP (14) and the dual (18)-(19), ecos on the primal QP and the
hinge problem (9), scs on the lifted QP and the dual, and the native cutting_plane solver on (9),
pair-free: each certifies its tolerance within its work limit on generated data and on a LETOR file
of 13,543 pairs and 300 features (ECOS's dual and OSQP's lifted and dual forms stall on some weighted
problems). osqp (primal) and the pure subgradient method are not in the default rows: on that file
OSQP needs about 20,000 iterations (longer than all the default rows together), and subgradient
steps (O(1/k)) stay far from their 1e-4 after 20,000 steps. Name them with --solvers. Work limits
(the registry's SolverSpec.work_limit): clarabel and ecos 100 iterations, scs 10,000, osqp 100,000,
subgradient 300,000, cutting_plane 3,000 oracle calls.

A row passes when its certificate proves its tolerance (status optimal; 1e-6, the subgradient method
1e-4), L = 2 lambda M holds at its own w to float64 rounding, |w - w_ref| <= b(row) + b(ref) with
b = sqrt(2 gap_M) the distance each certificate proves, and |L - L_ref| <= the larger certified gap.
A row that could not certify its tolerance within its work limit is "not certified" and counts
neither way. --time-limit is an opt-in safety net, off by default: a row it stops is reported as
"time limit" (a safety net, not a verdict) and counts neither way either.
"""

#: Printed columns: (name, width, format).
_COLUMNS = [("formulation", 11, "s"), ("solver", 13, "s"), ("status", 18, "s"), ("verdict", 13, "s"),
            ("work", 13, "work"), ("L", 15, ".9g"), ("M", 15, ".9g"), ("identity_error", 9, ".1e"),
            ("relative_gap", 9, ".1e"), ("w_distance", 9, ".1e"), ("w_bound", 9, ".1e"), ("time", 8, ".2f")]
_HEADERS = {"work": "work/limit", "identity_error": "|L-2lM|/L", "relative_gap": "rel.gap", "w_distance": "|w-wref|",
            "w_bound": "bound", "time": "time(s)"}


def add_arguments(parser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--lam", type=float, help="lambda of (9) (default cvxrank.DEFAULT_LAM = 0.5)")
    parser.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair, e.g. 2-1=2,2-0=3,1-0=1 (default all 1)")
    parser.add_argument("--mu", metavar="none|balanced", help="query weights: none (default) or balanced, (10)")
    parser.add_argument("--solvers", metavar="S1,S2",
                        help="solvers (default: installed clarabel,ecos,scs + cutting_plane; also osqp, subgradient, "
                             "...)")
    parser.add_argument("--formulations", metavar="F1,F2",
                        help="for every CVXPY solver: primal,lifted,dual,hinge (default per solver: clarabel "
                             "primal,dual; ecos primal,hinge; scs lifted,dual; osqp primal; others primal,dual)")
    parser.add_argument("--work-limit", metavar="S=N,...",
                        help="iteration (cutting_plane: oracle-call) cap per solver, e.g. subgradient=50000 "
                             "(default: the registry's work limit of each solver)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="opt-in safety net, off by default: seconds per solver run through its own option "
                             "(ECOS has none); a row it stops is reported as 'time limit', not judged")
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")


def parse_work_limits(text: str | None) -> dict | None:
    """``"subgradient=1000000,osqp=20000"`` -> ``{"subgradient": 1000000, "osqp": 20000}`` (None for None)."""
    from cvxrank.exceptions import ValidationError

    if text is None:
        return None
    limits = {}
    for item in split(text):
        name, sep, value = item.partition("=")
        try:
            n = int(value.replace("_", ""))
        except ValueError:
            n = None
        if not sep or not name.strip() or n is None or n < 1:
            raise ValidationError(f"--work-limit {item!r} is not SOLVER=N with N a positive whole number")
        limits[name.strip().lower()] = n
    return limits


def _cell(value, width: int, fmt: str, row: dict | None = None) -> str:
    if fmt == "work":
        limit = (row or {}).get("work_limit")
        if value is None or (isinstance(value, float) and math.isnan(value)):
            text = ""
        else:
            text = f"{int(value)}/{int(limit)}" if limit is not None and not (
                isinstance(limit, float) and math.isnan(limit)) else f"{int(value)}"
        return text.rjust(width)
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
    return " ".join(_cell(row.get(n), w, f, row) for n, w, f in _COLUMNS).rstrip()


def limits_line(rows: list[dict], time_limit) -> str:
    """The work limits of the planned rows (:func:`cvxrank.theorem.plan_rows`) and the time limit, in one line."""
    from cvxrank.theorem import work_unit

    seen = {}
    for r in rows:
        seen.setdefault(r["solver"], r["work_limit"])
    parts = [f"{s} {'its own cap' if n is None else f'{n:,} {work_unit(s)}'}" for s, n in seen.items()]
    clock = (f"time limit {time_limit:g} s per solver run (a safety net, not a verdict)" if time_limit is not None
             else "no time limit")
    return f"work limits: {', '.join(parts)}; {clock}"


def headline(df) -> str:
    """The verdict in one line: it says "verified" only when every certified row passes and one does."""
    a = df.attrs
    counts = df["verdict"].value_counts()
    parts = [f"{a['n_passed']} of {a['n_certified']} certified rows pass"]
    for name in ("not certified", "error"):
        if counts.get(name, 0):
            parts.append(f"{counts[name]} {name}")
    if counts.get("time limit", 0):
        parts.append(f"{counts['time limit']} stopped by the time limit (a safety net, not a verdict)")
    if a["verified"]:
        return f"VERIFIED: {', '.join(parts)}."
    if a["n_certified"] == 0:
        return f"NOT VERIFIED: no row certified its tolerance ({', '.join(parts)})."
    return f"NOT VERIFIED: {', '.join(parts)}; a certified row failed (a bug: please report it)."


def legend(df) -> str:
    return "\n".join([
        "L = hinge objective (9) at the row's w, M = QP objective (14); |L-2lM|/L: Theorem 1's identity at that w;",
        "work/limit: iterations (cutting_plane: oracle calls) done and the solver's work limit; rel.gap: certified",
        "relative duality gap; |w-wref|: distance to the reference w; bound: b(row) + b(ref), b = sqrt(2 gap_M),",
        "the distance to w* each certificate proves. pass: certified, identity to rounding, |w-wref| <= bound and",
        "|L-Lref| <= the larger certified gap. not certified: the solver did not reach its tolerance within its",
        "work limit; it proves nothing and counts neither way. time(s) is information, never a criterion.",
    ])


def run(args) -> int:
    from tqdm.auto import tqdm

    from cvxrank._validation import POSITIVE, check
    from cvxrank.costs import DEFAULT_LAM, Costs, check_lam
    from cvxrank.theorem import plan_rows, verify_theorem1

    from cvxrank._io import check_outputs

    costs = Costs.from_text(args.tau, args.mu)  # checked before any data is read or solved
    args.lam = DEFAULT_LAM if args.lam is None else check_lam(args.lam)
    work_limits = parse_work_limits(args.work_limit)
    solvers, formulations = split(args.solvers), split(args.formulations)
    rows = plan_rows(solvers, formulations, work_limits)  # checked before any data is read or solved
    if args.time_limit is not None:
        check("--time-limit", args.time_limit, POSITIVE)
    check_outputs([args.json], [args.data])  # before the solves, never onto the data
    data, desc = data_from_args(args)
    print(f"Theorem 1 (Cao et al., SIGIR 2006) checked numerically; {desc}; lambda = {args.lam:g}; "
          f"C_i = tau*mu/(2 lambda)", flush=True)
    print(limits_line(rows, args.time_limit), flush=True)
    print(header(), flush=True)
    df = verify_theorem1(data, costs=costs, lam=args.lam, solvers=solvers, formulations=formulations,
                         work_limits=work_limits, time_limit=args.time_limit, progress=None,
                         on_row=lambda row: tqdm.write(format_row(row), file=sys.stdout))
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


def report(df, title: str) -> str:
    """The whole verification as text: title, table, legend, notes and the headline."""
    a = df.attrs
    rows = [{"solver": s, "work_limit": n} for s, n in a["work_limits"].items()]
    lines = [title, f"{a['n_pairs']} pairs, {a['n_features']} features, lambda = {a['lam']:g}; reference "
             f"{a['reference']} (relative gap {a['reference_relative_gap']:.1e})", limits_line(rows, a["time_limit"]),
             "", header()]
    lines += [format_row(row) for row in df.to_dict("records")]
    lines += ["", legend(df)]
    lines += [f"note {r.formulation}/{r.solver}: {r.note}" for r in df.itertuples() if isinstance(r.note, str) and r.note]
    lines.append(headline(df))
    return "\n".join(lines)
