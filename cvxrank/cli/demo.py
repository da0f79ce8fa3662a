"""The tour of cvxrank in one command, on generated data (seeded):

1. Theorem 1 (SIGIR 2006) verified numerically with the installed core solvers on every formulation each
   certifies, within work limits (iterations, oracle calls), never the clock;
2. the ECML 2006 simulation: Ranking SVM against the cost-sensitive Ranking SVM (Figs. 2 and 3),
   next to the paper's numbers, and the weighted hinge losses of SIGIR 2006's Fig. 2;
3. a small cross-validation of every method (Ranking SVM, RSVM-IR-Rank/-Query/-QP/-GD, ListMLE,
   cs-RgList) with folds by query and sign tests on NDCG@1.

Everything goes into one folder: report.md with the tables and the figures (PNG and PDF), results.json,
and the cross-validation's CSV files. The folder is assembled aside and moved into place at the
end, so an interrupted demo leaves no half-written report. The demo writes a new or empty folder,
or replaces one it made itself (keeping there any file it did not write); it never replaces a
folder of yours or of another command."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from cvxrank._figures import figure_files
from cvxrank.cli._common import frame_to_json, write_json
from cvxrank.cli.verify import report as theorem_report
from cvxrank.exceptions import CvxrankError

HELP = "the tour: Theorem 1, the ECML simulation, a small cross-validation; a Markdown report with plots"
EPILOG = """examples:
  cvxrank demo                          # writes ./cvxrank-demo/report.md and its figures
  cvxrank demo --out /tmp/demo --seed 3
  cvxrank demo --json demo.json         # also the Theorem 1 table as JSON
  cvxrank demo --quick --out /tmp/d     # seconds: smaller simulation and 3 folds
"""

#: Settings of the demo's cross-validation (small enough for the 2-minute budget on 2 cores).
CV_DATA = {"n_queries": 30, "docs_per_query": (8, 16), "n_features": 8, "n_grades": 3, "noise": 2.0}
CV_GRIDS = {"pairwise": {"lam": [0.1, 1.0]}, "listmle": {"C": [1.0, 10.0]}, "cs-rglist": {"C": [1.0, 10.0],
                                                                                         "pcf": [3.0]}}


def add_arguments(parser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed of every generated data set (default 0)")
    parser.add_argument("--out", metavar="DIR", default="cvxrank-demo",
                        help="folder for report.md, the figures and the tables (default ./cvxrank-demo): a new or "
                             "empty folder, or one an earlier demo wrote")
    parser.add_argument("--json", metavar="PATH", help="also write the Theorem 1 table as JSON")
    parser.add_argument("--quick", action="store_true",
                        help="a 4x smaller simulation (250/50/25 documents) and 3 CV folds: seconds, for a check")


#: The Theorem 1 rows of the demo: every installed core solver on every formulation it certifies on the demo's
#: problem within its work limit (OSQP's ADMM stalls on the lifted and dual forms of this weighted problem),
#: and the native pair-free cutting_plane on (9). The pure subgradient method is left to ``cvxrank verify
#: --solvers subgradient``: its O(1/k) steps need about 240,000 iterations here.
THEOREM_SOLVERS = ("clarabel", "ecos", "osqp", "scs", "cutting_plane")
_ALL_FORMS = ("primal", "lifted", "dual", "hinge")
THEOREM_FORMULATIONS = {"clarabel": _ALL_FORMS, "ecos": _ALL_FORMS, "osqp": ("primal", "hinge"), "scs": _ALL_FORMS}


def theorem_rows() -> tuple[list[str], dict]:
    """The demo's Theorem 1 solvers and formulations, those of :data:`THEOREM_SOLVERS` that are installed."""
    from cvxrank.solvers import available_solvers

    solvers = [s for s in THEOREM_SOLVERS if s in available_solvers()]
    return solvers, {s: f for s, f in THEOREM_FORMULATIONS.items() if s in solvers}


#: Where the documentation says how the ECML reproduction differs from the paper.
REPRODUCTION_DOC = "docs/reproductions.md#where-it-differs-and-why"


def uncertified_rows(theorem) -> list[str]:
    """One sentence per Theorem 1 row that did not pass, saying why (read off the row), for the report
    right below the table (:func:`cvxrank.theorem.verify_theorem1`)."""
    lines = []
    for r in theorem[theorem["verdict"] != "pass"].to_dict("records"):
        where = f"{r['solver']} on the {r['formulation']} form"
        if r["verdict"] in ("not certified", "time limit"):
            limit = ("its time limit (a safety net, not a verdict)" if r["verdict"] == "time limit"
                     else f"its work limit ({r['work']} of {r['work_limit']} iterations or oracle calls)")
            lines.append(f"- {where} is not certified: status `{r['status']}`, the solver stopped at {limit} with a "
                         f"certified relative gap of {r['relative_gap']:.1e}. A row that proves nothing counts "
                         "neither for nor against Theorem 1 "
                         f"(L = 2 lambda M holds at its w to {r['identity_error']:.1e}).")
        elif r["verdict"] == "error":
            lines.append(f"- {where} failed: {r['note']}")
        else:
            lines.append(f"- {where} FAILS the check its own certificate proves: a bug in cvxrank, please "
                         "report it.")
    return lines or ["Every row certified its tolerance and passed."]


def differences(sim) -> str:
    """One paragraph: where the ECML reproduction differs from the paper, with the link."""
    from cvxrank.experiments.simulation import METHOD_LABELS, PAPER_ECML, angle_degrees

    import numpy as np

    def norms(ws):
        return " and ".join(f"{float(np.linalg.norm(ws[m])):.2f}" for m in ("ranksvm", "cost_sensitive"))

    ours = ", ".join(f"{METHOD_LABELS[m]} {sim.angles[m]:.1f}°" for m in sim.angles)
    paper = ", ".join(f"{METHOD_LABELS[m]} {angle_degrees(PAPER_ECML['w'][m]):.1f}°" for m in PAPER_ECML["w"])
    return ("Where this differs from the paper: the paper's sample and seed are unknown, so the angles differ by "
            f"the draw (here {ours}; the paper {paper}); the paper gives no values for tau (only \"large\" and "
            "\"small\") nor for lambda, and the cost-sensitive angle depends strongly on the ratio of the taus; "
            f"the scale of w differs (norms here {norms(sim.w)}, the paper's {norms(PAPER_ECML['w'])}), which "
            "does not change the ranking; and NDCG@N = 1.0 up to N = 90, as the paper's text states, is reached by no linear "
            f"ranking of seed 0 at the paper's sizes. Details and measurements: [{REPRODUCTION_DOC}]({REPRODUCTION_DOC}).")


#: The demo's figures (file stems): each is written as PNG and PDF (:func:`cvxrank.plots.save_figures`).
DEMO_FIGURES = ("fig2_simulation", "fig3_ndcg_at_n", "sigir_fig2_hinge", "cv_metrics")

#: What the demo writes at the top of its folder (the cross-validation's files go into ``cv/``).
DEMO_FILES = frozenset({".cvxrank-owner.json", "report.md", "results.json", "cv", *figure_files(DEMO_FIGURES)})


def check_out(out: str) -> None:
    """Refuse an ``--out`` the demo may not replace: a file, the working folder (or a folder holding
    it), or a folder the demo did not make (marked by its owner file) that is not empty. The demo
    replaces only its own folder, keeping there whatever it did not write."""
    from cvxrank._io import OWNER_FILE, folder_owner

    if not os.path.exists(out):
        return
    if not os.path.isdir(out):
        raise CvxrankError(f"--out {out} exists and is not a folder")
    real, here = os.path.realpath(out), os.path.realpath(os.getcwd())
    if here == real or here.startswith(real.rstrip(os.sep) + os.sep):
        raise CvxrankError(f"--out {out} is the working folder or holds it; the demo replaces its folder as a whole: "
                           "choose a new folder (e.g. --out cvxrank-demo)")
    names = os.listdir(out)
    if not names:
        return
    marked = os.path.isfile(os.path.join(out, OWNER_FILE))
    owner = folder_owner(out)
    if marked and owner == "demo":
        return
    if owner is not None and owner != "demo":
        raise CvxrankError(f"{out} belongs to 'cvxrank {owner}'; the demo replaces only a folder it made itself: "
                           "choose a new or empty folder")
    shown = ", ".join(sorted(names)[:3]) + (", ..." if len(names) > 3 else "")
    raise CvxrankError(f"{out} holds files the demo did not write ({shown}); the demo replaces only a folder it "
                       "made itself (marked by .cvxrank-owner.json): choose a new or empty folder")


def _carry_over(old: str, new: str) -> None:
    """Move every file or folder of ``old`` that ``new`` does not have into ``new`` (into its
    sub-folders too), so replacing ``old`` by ``new`` deletes nothing but what the demo wrote again."""
    for name in os.listdir(old):
        src, dst = os.path.join(old, name), os.path.join(new, name)
        if not os.path.lexists(dst):
            os.replace(src, dst)
        elif os.path.isdir(src) and not os.path.islink(src) and os.path.isdir(dst) and not os.path.islink(dst):
            _carry_over(src, dst)


def _only_rewritten(old: str, new: str) -> bool:
    """Whether every file of ``old`` has its counterpart in ``new`` (nothing would be lost with ``old``)."""
    for name in os.listdir(old):
        src, dst = os.path.join(old, name), os.path.join(new, name)
        if not os.path.lexists(dst):
            return False
        if os.path.isdir(src) and not os.path.islink(src) and not _only_rewritten(src, dst):
            return False
    return True


def _move_into_place(tmp: str, out: str) -> None:
    """Replace ``out`` by the finished folder ``tmp``: the files of an earlier demo are replaced, any
    other file in it is kept (moved into the new folder); the old folder is removed only when nothing
    but what the demo wrote again is left in it."""
    check_out(out)  # again: the folder may have changed during the run
    old = None
    if os.path.exists(out):
        old = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(out)), prefix=".cvxrank-old-")
        os.rmdir(old)
        os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        if old is not None:
            os.replace(old, out)
        raise
    if old is not None:
        _carry_over(old, out)
        if _only_rewritten(old, out):
            shutil.rmtree(old, ignore_errors=True)
        else:  # never reached unless a move failed: keep the files rather than lose them
            raise CvxrankError(f"could not move every file of the old {out} into the new one; they are in {old}")


def run(args) -> int:

    from cvxrank.datasets import make_ranking
    from cvxrank.experiments.cv import cross_validate, query_folds
    from cvxrank.experiments.simulation import run_ecml_simulation
    from cvxrank.plots.hinge import plot_weighted_hinge
    from cvxrank.plots.ranking import plot_fold_metrics, save_figures
    from cvxrank.plots.simulation import plot_ndcg_at_n, plot_simulation_data
    from cvxrank.reporting import markdown_table
    from cvxrank._io import OWNER_FILE, _umask, check_outputs, write_atomic
    from cvxrank.theorem import verify_theorem1

    out = os.path.abspath(args.out)
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise CvxrankError(f"cannot write {args.out}: folder {parent} does not exist")
    check_out(args.out)  # before the (minute-long) run
    check_outputs([args.json], folders=[args.out], own={args.out: DEMO_FILES})
    start = time.perf_counter()
    tmp = tempfile.mkdtemp(dir=parent, prefix=".cvxrank-demo-")
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the folder follows the umask like any other
        write_json(os.path.join(tmp, OWNER_FILE), {"command": "demo"})
        # 1. Theorem 1
        data = make_ranking(n_queries=12, n_features=5, n_grades=3, random_state=args.seed)
        tau = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}
        print("cvxrank demo: Ranking SVM for IR (tau per grade pair, balanced mu per query)")
        print(f"tau = {tau}, mu = balanced (equation (10)), lambda = 0.1\n")
        solvers, formulations = theorem_rows()
        theorem = verify_theorem1(data, tau=tau, mu="balanced", lam=0.1, solvers=solvers, formulations=formulations)
        theorem_text = theorem_report(theorem, f"Theorem 1 verified numerically; generated data, seed {args.seed}")
        print(theorem_text)

        # 2. The ECML simulation and the SIGIR hinge figure
        print("\nECML 2006 simulation (section 4.1) ...")
        sim = run_ecml_simulation(random_state=args.seed, **({"sizes": (250, 50, 25)} if args.quick else {}))
        print(sim.report())
        figures = {
            "fig2_simulation": plot_simulation_data(sim),
            "fig3_ndcg_at_n": plot_ndcg_at_n(sim),
            "sigir_fig2_hinge": plot_weighted_hinge(),
        }

        # 3. A small cross-validation of every method
        print("\ncross-validation of every method on generated data ...")
        cv_data = make_ranking(**CV_DATA, random_state=args.seed)
        n_folds = 3 if args.quick else 5
        cv = cross_validate(query_folds(cv_data, n_folds, random_state=args.seed),
                            ["ranksvm", "rsvm-ir-rank", "rsvm-ir-query", "rsvm-ir-qp", "rsvm-ir-gd", "listmle",
                             "cs-rglist"], grids=CV_GRIDS, params={"rsvm-ir-gd": {"max_iter": 500}},
                            random_state=args.seed, baseline="ranksvm", progress=False)
        cv.meta["title"] = "Cross-validation (cvxrank demo)"
        summary = cv.summary[["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map"]]
        print(markdown_table(summary.assign(chosen=cv.chosen)))
        for line in cv.edge_warnings():
            print(f"warning: {line}")
        figures["cv_metrics"] = plot_fold_metrics(cv.per_fold, list(summary.columns),
                                                      title=f"Cross-validation in {n_folds} query folds")
        cv.save(os.path.join(tmp, "cv"))

        written = [os.path.basename(p) for p in save_figures(figures, tmp)]  # each as PNG and PDF
        tests = cv.sign_tests("ndcg@1", baseline="RankSVM")
        seconds = time.perf_counter() - start
        report = "\n".join([
            "# cvxrank demo", "",
            f"Generated data, seed {args.seed}; {seconds:.0f} s. Re-run with `cvxrank demo --seed {args.seed}`.", "",
            "## 1. Theorem 1 (Cao et al., SIGIR 2006), verified", "",
            "The weighted hinge problem (9), the QP (14) with `C_i = tau*mu/(2 lambda)` and its dual (18)-(19), "
            "solved by every installed core solver on the forms it certifies on, each within a limit on its work "
            "(iterations or oracle calls, never the clock: the verdicts do not depend on the machine's speed); "
            "every row's duality gap is certified.", "",
            "```text", theorem_text, "```", "",
            *[line for line in uncertified_rows(theorem)], "",
            "## 2. The simulation of Xu et al. (ECML 2006), section 4.1", "",
            "```text", sim.report(), "```", "",
            differences(sim), "",
            "![Fig. 2: data and ranking directions](fig2_simulation.png) ([PDF](fig2_simulation.pdf))", "",
            "![Fig. 3: NDCG@N](fig3_ndcg_at_n.png) ([PDF](fig3_ndcg_at_n.pdf))", "",
            "Weighted hinge losses of Fig. 2 of the SIGIR paper (slopes tau*mu):", "",
            "![SIGIR Fig. 2](sigir_fig2_hinge.png) ([PDF](sigir_fig2_hinge.pdf))", "",
            "## 3. Cross-validation of every method", "",
            f"`make_ranking({', '.join(f'{k}={v}' for k, v in CV_DATA.items())}, random_state={args.seed})` "
            f"in {n_folds} query folds; parameters chosen on the validation fold by NDCG@10 "
            f"(grids: {json.dumps(CV_GRIDS)}); RSVM-IR-GD runs 500 fixed steps of Fig. 3.", "",
            markdown_table(summary.assign(chosen=cv.chosen)), "",
            *[f"- Warning: {line}" for line in cv.edge_warnings()], "",
            "![cross-validation](cv_metrics.png) ([PDF](cv_metrics.pdf))", "",
            "Sign tests on per-query NDCG@1 against Ranking SVM (ties dropped, two-sided exact binomial):", "",
            markdown_table(tests.set_index("method"), floatfmt=".3g"), "",
            "Chosen parameters, solver status and certified gaps: `cv/selection.csv`; per-query values: "
            "`cv/per_query.csv`.", "",
        ])
        write_atomic(os.path.join(tmp, "report.md"), report)
        results = {"theorem1": frame_to_json(theorem), "simulation": sim.to_json(),
                   "cross_validation": {"summary": cv.summary.to_dict(orient="index"),
                                        "sign_tests": tests.to_dict("records")},
                   "seconds": seconds}
        write_json(os.path.join(tmp, "results.json"), results)  # every float as it is
        _move_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if args.json:
        write_json(args.json, frame_to_json(theorem))
        print(f"wrote {args.json}")
    print(f"\nwrote {os.path.join(args.out, 'report.md')} with {len(figures)} figures ({seconds:.0f} s), "
          f"each as PNG and PDF: {', '.join(written)}")
    return 0
