"""Run a solver comparison study: instances x sizes x formulations x solvers x tolerance profiles x
cost settings (lambda, tau, mu and the variant of the problem). Every run is one row of OUT/results.csv (written as runs finish, so an interrupted
study resumes where it stopped); each run has its own worker process and time limit, so a solver
that hangs or crashes gives a 'timeout' or 'error' row. At the end OUT/report.md holds success
rates, shifted geometric means of runtime, performance profiles, growth exponents, versions and
the CPU, with figures in OUT/figures/.

Instances: 'ohsumed' (generated like OHSUMED: 3 grades, 45 features, ~150 documents a query;
size = queries), 'web' (5 grades, 136 features, ~100 documents a query; size = queries), 'ecml'
(the ECML 2006 simulation; size s gives 10s/2s/s documents per grade), 'letor:PATH' (size = the
first queries of the file; no --sizes for all). Native solvers (subgradient, gd, ...) run once
per cell with formulation 'native'. The defaults (formulations, solvers, profile, time limit,
reference, iteration caps) are those of cvxrank.study.Study, read from one place
(cvxrank.study.defaults): the same study gives the same table from here and from Python."""

from __future__ import annotations

import shlex

from cvxrank._validation import POSITIVE, POSITIVE_INT, Interval
from cvxrank.cli._common import MAX_ITER, check_option, parse_mu, parse_tau, split
from cvxrank.exceptions import CvxrankError
from cvxrank.study.defaults import DEFAULTS

HELP = "compare solvers and formulations on a grid of instances and tolerance profiles"
EPILOG = """examples:
  cvxrank compare --instances ohsumed --sizes 1,2,4 --formulations primal,lifted,dual,hinge \\
      --solvers clarabel,ecos,osqp,scs --profiles low,mid --out study --jobs 2 --timeout 60
  cvxrank compare ... --max-iter 10000          # cap iterations: the table no longer depends on timing
  cvxrank compare ... --repeats 3                # each run 3 times: median times and their spread
  cvxrank compare --instances ecml --sizes 5,10,20 --solvers clarabel,subgradient --out ecml-study
  cvxrank compare --instances letor:train.txt --test-fraction 0.2 --solvers clarabel --out letor-study
  cvxrank compare --instances ohsumed --sizes 1,2 --lams 0.1,1 --mu none,balanced --out costs-study
  cvxrank compare --instances ohsumed --sizes 1,2 --variants papers,squared_hinge,margin=grade_difference \
      --solvers clarabel,osqp,cutting_plane,truncated_newton --out variants-study   # variants as an axis
  cvxrank compare ... --out study                # run again: finished rows are skipped (resume)
  cvxrank compare ... --out study --overwrite    # another definition: replace the old results
  cvxrank compare ... --scheduler tcp://10.0.0.5:8786   # on a Dask cluster (pip install 'cvxrank[dask]')
  cvxrank compare ... --scheduler local:2 --out study-dask --compare-with study  # 2 local Dask workers, same table?
"""


def add_arguments(parser) -> None:
    parser.add_argument("--instances", default="ecml",
                        help="ohsumed, web, ecml, letor:PATH (default ecml: quick; ohsumed and web are "
                             "thousands of pairs per query)")
    parser.add_argument("--sizes", default="5,10,20",
                        help="size knobs (default 5,10,20: 800 to 12,800 pairs of the ecml instance; see above)")
    formulations, solvers, profiles = (",".join(DEFAULTS[k]) for k in ("formulations", "solvers", "profiles"))
    parser.add_argument("--formulations", default=formulations,
                        help=f"primal, lifted, dual, hinge, auto (default {formulations})")
    parser.add_argument("--solvers", help="names of cvxrank.available_solvers(), which include any solver CVXPY "
                                          "has installed that can take a QP, e.g. highs (default: the installed ones "
                                          f"of {solvers})")
    parser.add_argument("--profiles", default=profiles, help=f"low (1e-3), mid (1e-6), high (1e-9) (default {profiles})")
    parser.add_argument("--lams", default="0.5", help="lambda values of (9)/SIGIR (default 0.5, cvxrank.DEFAULT_LAM)")
    parser.add_argument("--tau", metavar="H-L=V,...", help="tau per grade pair, e.g. 2-1=2,2-0=3,1-0=1 "
                                                            "(default all 1); entries for grade pairs an "
                                                            "instance lacks are left out for that instance")
    parser.add_argument("--mu", default="none", help="none and/or balanced, comma-separated (default none)")
    parser.add_argument("--variants", default="papers", metavar="V1,V2",
                        help="variants of the problem, comma-separated: papers, or '+'-joined items "
                             "loss=squared_hinge, margin=grade_difference|gain_difference, l1=V, lower=V, upper=V "
                             "(e.g. papers,squared_hinge,squared_hinge+margin=grade_difference; default papers); "
                             "a solver or formulation that cannot state one gives 'unsupported' rows")
    parser.add_argument("--test-fraction", type=float, default=0.0, dest="test_fraction",
                        help="held-out queries for the ndcg10 column, as a fraction of the size (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances (default 0)")
    reference = ":".join(DEFAULTS["reference"])
    parser.add_argument("--reference", default=reference,
                        help=f"SOLVER:FORMULATION:PROFILE of the reference solutions (default {reference})")
    parser.add_argument("--out", metavar="DIR", required=True, help="output folder (results.csv, report.md, ...)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time on this machine (default 1)")
    parser.add_argument("--timeout", type=float, default=DEFAULTS["timeout"],
                        help=f"seconds per run, a safety net: the iteration caps end runs (default "
                             f"{DEFAULTS['timeout']:g})")
    parser.add_argument("--repeats", type=int, default=DEFAULTS["repeats"],
                        help="times each run is made, each in a fresh process; the report gives median times and "
                             f"their spread (default {DEFAULTS['repeats']})")
    parser.add_argument("--max-iter", type=int, dest="max_iter",
                        help="iteration cap of every solver of the study, under each solver's own option name "
                             "(cvxrank.solvers.registry.SOLVERS), for the runs, not the reference; a run "
                             "that reaches it is a 'user_limit' row whatever the machine's speed, so the table does not depend on "
                             "timing (default: cvxrank.study.definition.iteration_cap, as for cvxrank.study.Study: "
                             "the registry's quick caps, OSQP 4000 and SCS 5000 iterations, subgradient 200000; "
                             "the other solvers' work limits of cvxrank.solve)")
    parser.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS "
                                                               "(tcp://HOST:PORT), or local:N for a LocalCluster "
                                                               "of N worker processes started for this study")
    parser.add_argument("--connect-timeout", type=float, default=5.0, dest="connect_timeout",
                        help="seconds to wait for the Dask scheduler (default 5)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace results of another study in --out, or write into a folder of another command")
    parser.add_argument("--report", metavar="PATH", help="where the Markdown report goes (default OUT/report.md)")
    parser.add_argument("--figures", metavar="DIR", help="where its figures go (default: figures/ next to it)")
    parser.add_argument("--title", default="Solver comparison study", help="title of the report")
    parser.add_argument("--compare-with", metavar="DIR", dest="compare_with",
                        help="another run of the same study (e.g. on Dask): report where its table differs, "
                             "times aside")
    parser.add_argument("--no-report", action="store_true", dest="no_report", help="write no report")
    parser.add_argument("--no-progress", action="store_true", dest="no_progress", help="no progress bar")


def _numbers(text, what, kind=float):
    try:
        return [kind(v) for v in split(text)]
    except ValueError:
        raise CvxrankError(f"--{what} must be comma-separated numbers, got {text!r}") from None


def _check_values(args) -> None:
    """Refuse option values no run could use, before the first run (a study of error rows, or one
    that fails at its end, is worse than one line now)."""
    check_option("timeout", args.timeout, POSITIVE)  # seconds
    check_option("connect-timeout", args.connect_timeout, POSITIVE)
    check_option("seed", args.seed, Interval(0, 2**32, closed="left", integer=True))
    check_option("jobs", args.jobs, POSITIVE_INT)
    check_option("repeats", args.repeats, POSITIVE_INT)
    if args.max_iter is not None:
        check_option("max-iter", args.max_iter, MAX_ITER)
    for name in ("solvers", "formulations", "profiles", "lams", "mu", "instances", "sizes", "variants"):
        values = split(getattr(args, name))
        if values and len(set(values)) != len(values):
            twice = sorted({v for v in values if values.count(v) > 1})
            raise CvxrankError(f"--{name} names {', '.join(twice)} more than once (each would give duplicate rows)")


def _variants(text):
    """The variants of ``--variants``, each checked as ``cvxrank fit`` checks its options (bounds that
    allow ``w = 0``), and no problem named twice (``lower=0,lower=-0``, ``papers,hinge``)."""
    from cvxrank.exceptions import ValidationError
    from cvxrank.variants import Variant

    variants, seen = [], {}
    for item in split(text):
        v = Variant.from_text(item)
        try:
            v.check(1)  # the bounds are one number for every feature
        except ValidationError as exc:
            raise CvxrankError(f"--variants {item}: {exc}") from None
        key = (v.loss, v.margin, float(v.l1) + 0.0,
               *(None if b is None else float(b) + 0.0 for b in (v.lower, v.upper)))  # -0 is 0
        if key in seen:
            raise CvxrankError(f"--variants names one problem twice ({seen[key]} and {item}, both "
                               f"{v.describe()}); each would give duplicate rows")
        seen[key] = item
        variants.append(v)
    return variants or [Variant()]


def study_from_args(args):
    """The :class:`~cvxrank.study.Study` the options describe (names checked before anything runs)."""
    from cvxrank.solvers import available_solvers
    from cvxrank.study import CostSetting, Study, make_instances
    from cvxrank.study.definition import check_names

    _check_values(args)
    solvers = split(args.solvers) or [s for s in DEFAULTS["solvers"] if s in available_solvers()]
    formulations, solvers, profiles = check_names(split(args.formulations), solvers, split(args.profiles))
    ref = args.reference.split(":")
    if len(ref) != 3:
        raise CvxrankError(f"--reference must be SOLVER:FORMULATION:PROFILE, got {args.reference!r}")
    check_names([ref[1]], [ref[0]], [ref[2]])
    specs = split(args.instances)
    if not specs:
        raise CvxrankError("--instances is empty")
    only_letor = all(s.startswith("letor:") for s in specs)
    sizes = None if (only_letor and args.sizes in (None, "", "all")) else _numbers(args.sizes, "sizes", int)
    taus = parse_tau(args.tau)
    if taus == "estimate":
        raise CvxrankError("--tau estimate is not supported by compare; give H-L=V values")
    mus = [parse_mu(m) for m in split(args.mu)] or [None]
    variants = _variants(args.variants)
    costs = [CostSetting(lam=lam, tau=taus, mu=mu, variant=v)
             for v in variants for mu in mus for lam in _numbers(args.lams, "lams")]
    instances = make_instances(specs, sizes, seed=args.seed, test_fraction=args.test_fraction)
    # the iteration caps are the Study's own default (iteration_cap): the API gives the same table
    return Study(instances, formulations, solvers, profiles, costs, timeout=args.timeout, reference=tuple(ref),
                 max_iter=args.max_iter, repeats=args.repeats)


def shown_path(path) -> str:
    """A path as a report shows it: relative to the working folder, never a machine's absolute path.

    Examples
    --------
    >>> shown_path("/tmp/study3/local")
    'local'
    """
    import os

    path = os.fspath(path)
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else os.path.basename(os.path.normpath(path))


def command_line(args) -> str:
    """The canonical command line of a study (quoted in its report; paths as :func:`shown_path` shows them)."""
    parts = ["cvxrank compare", f"--instances {args.instances}", f"--sizes {args.sizes}",
             f"--formulations {args.formulations}"]
    if args.solvers:
        parts.append(f"--solvers {args.solvers}")
    parts += [f"--profiles {args.profiles}", f"--lams {args.lams}"]
    if args.tau:
        parts.append(f"--tau {args.tau}")
    if args.mu != "none":
        parts.append(f"--mu {args.mu}")
    if args.variants != "papers":
        parts.append(f"--variants {args.variants}")
    if args.test_fraction:
        parts.append(f"--test-fraction {args.test_fraction:g}")
    parts.append(f"--out {shown_path(args.out)}")
    parts.append(f"--scheduler {args.scheduler}" if args.scheduler else f"--jobs {args.jobs}")
    parts.append(f"--timeout {args.timeout:g}")
    if args.max_iter is not None:
        parts.append(f"--max-iter {args.max_iter}")
    if args.repeats != DEFAULTS["repeats"]:
        parts.append(f"--repeats {args.repeats}")
    if args.seed:
        parts.append(f"--seed {args.seed}")
    if args.reference != ":".join(DEFAULTS["reference"]):
        parts.append(f"--reference {args.reference}")
    for opt in ("report", "figures", "compare_with"):
        if getattr(args, opt):
            parts.append(f"--{opt.replace('_', '-')} {shown_path(getattr(args, opt))}")
    if args.title != "Solver comparison study":
        parts.append(f"--title {shlex.quote(args.title)}")
    return " ".join(parts)


def comparison(df, folder) -> str:
    """Markdown: where the study table ``df`` differs from the one stored in ``folder``, times aside.

    A run that hit the time limit on one side only is listed with its wall time on the other side:
    a time limit turns a timing into a status, so such a run differs by its time, not its result.
    """
    import json
    from pathlib import Path

    from cvxrank.study import KEY, compare_tables, load_results
    from cvxrank.study.store import row_key

    other = load_results(folder)
    diff = compare_tables(df, other)
    meta = Path(folder) / "study.json"
    same_hash = meta.is_file() and json.loads(meta.read_text()).get("hash") == df.attrs.get("hash")
    here = {row_key(r): r for r in df.to_dict("records")}
    there = {row_key(r): r for r in other.to_dict("records")}
    runs = {row_key(r): r for r in diff.to_dict("records")}
    limit = {k for k in runs if k in here and k in there
             and (here[k]["status"] == "timeout") != (there[k]["status"] == "timeout")}
    values = [k for k in runs if k not in limit]
    log = Path(folder) / "commands.log"
    made_by = log.read_text(encoding="utf-8").splitlines()[-1].split("  ", 1)[-1] if log.is_file() else None
    lines = [(f"The same study was run a second time into `{shown_path(folder)}` (study hash "
              f"{'identical' if same_hash else 'DIFFERENT'}): {len(df)} rows here, {len(other)} there. "
              f"{len(df) - len(runs)} of {len(df)} runs are the same, times and memory aside: status, found flag, "
              "iteration count, and objective, reference, errors, residuals and gaps within a relative 1e-6.")]
    if made_by:
        lines += ["", "That folder was last written by:", "", "```", made_by, "```"]
    if limit:
        lines += ["", f"{len(limit)} run(s) hit the time limit on one side only (a timing, not a result):", "",
                  "| " + " | ".join(KEY) + " | here | there |", "|" + "---|" * (len(KEY) + 2)]
        for k in sorted(limit):
            cells = [f"{r['status']}" + ("" if r["status"] == "timeout" else
                                         f" in {r['wall_time']:.1f} s, {r['iterations']:.0f} iterations")
                     for r in (here[k], there[k])]
            lines.append("| " + " | ".join(k) + " | " + " | ".join(cells) + " |")
    if values:
        lines += ["", f"{len(values)} run(s) differ in their results:", "",
                  "| " + " | ".join(KEY) + " | column | here | there |", "|" + "---|" * (len(KEY) + 3)]
        lines += ["| " + " | ".join(str(r[c]) for c in KEY) + f" | {r['column']} | {r['a']} | {r['b']} |"
                  for r in diff.to_dict("records") if row_key(r) in values]
    return "\n".join(lines)


#: What compare writes in its folder besides the report (``--report`` may not name one of them).
FOLDER_FILES = frozenset({"results.csv", "study.json", "references.json", "commands.log"})


def _no_rows(path) -> bool:
    """Whether ``path`` is a file a failed study may leave without losing anything: its definition, or
    a table of no row (the header only)."""
    import os

    name = os.path.basename(path)
    if name == "study.json":
        return True
    if name == "results.csv":
        with open(path, "rb") as fh:
            return fh.read().count(b"\n") <= 1
    return False


def run(args) -> int:
    import os

    from cvxrank._io import LOCK_FILE, OWNER_FILE, check_outputs, writing_into

    inputs = [s[len("letor:"):] for s in split(args.instances) if s.startswith("letor:")]
    report = None if args.no_report else (args.report or os.path.join(args.out, "report.md"))
    written = FOLDER_FILES | {OWNER_FILE, LOCK_FILE} | (set() if args.figures else {"figures"})
    check_outputs([report], inputs, folders=[args.out, args.figures], own={args.out: written})
    study = study_from_args(args)
    # nothing stored yet (a full disk, an early interrupt): no empty study folder left behind
    with writing_into(args.out, "compare", overwrite=args.overwrite, disposable=_no_rows):
        return _run(args, study)


def _run(args, study) -> int:
    import os
    import time

    from cvxrank._io import append_text
    from cvxrank.study import (
        run_study,
        shifted_geometric_means,
        success_rates,
        write_report,
    )

    print(f"study {study.hash}: {len(study.instances)} instances, {study.n_runs} runs "
          f"(+ references), {args.timeout:g} s per run, output {args.out}")
    df = run_study(study, args.out, jobs=args.jobs, scheduler=args.scheduler, overwrite=args.overwrite,
                   progress=not args.no_progress, connect_timeout=args.connect_timeout)
    append_text(os.path.join(args.out, "commands.log"), f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {command_line(args)}\n")
    a = df.attrs
    print(f"{a['ran']} runs ran now; {a['skipped']} were already in {args.out} from an earlier run of this "
          "study and were not run again; statuses of all runs: "
          + ", ".join(f"{k} {v}" for k, v in df["status"].value_counts().items()))
    print("\nsuccess rate (% found):")
    print(success_rates(df).round(0).to_string())
    print("\nshifted geometric mean of wall time relative to the best (shift 10 s):")
    print(shifted_geometric_means(df, time_limit=study.timeout).round(2).to_string())
    sections = []
    if args.compare_with:
        text = comparison(df, args.compare_with)
        print("\n" + text)
        sections.append(("Same table on another run", text))
    if not args.no_report:
        path = args.report or os.path.join(args.out, "report.md")
        written = []
        write_report(df, path, time_limit=study.timeout, title=args.title, figures_dir=args.figures, study=study,
                     command=command_line(args), sections=sections, written=written)
        print()
        for each in written:  # the figures (PNG and PDF), then the report
            print(f"wrote {each}")
    return 0
