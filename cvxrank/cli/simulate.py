"""Reproduce the simulation of section 4.1 of Xu et al. (ECML 2006): Ranking SVM against the
cost-sensitive Ranking SVM on three Gaussian grades in the plane. Prints both weight vectors, their
angles and NDCG@N next to the paper's numbers; optionally writes the JSON and the figures (the
paper's Figs. 2 and 3, and Fig. 2 of the SIGIR 2006 paper). Exit code 1 if a solution is not
certified optimal."""

from __future__ import annotations

import os

from cvxrank._figures import figure_files
from cvxrank.cli._common import parse_tau, write_json
from cvxrank.exceptions import CvxrankError

HELP = "reproduce the ECML 2006 simulation (Figs. 2 and 3) and its figures"
EPILOG = """examples:
  cvxrank simulate                                   # the paper's sizes, seed 0, default tau
  cvxrank simulate --seed 3 --json sim.json --plots figures/
  cvxrank simulate --tau 2-1=1,2-0=1,1-0=0.05 --lam 0.1
  cvxrank simulate --tau estimate                    # tau by the heuristic of Fig. 1
  cvxrank simulate --sizes 250,50,25                 # a 16x smaller problem (20,000 pairs)

Grades are 0, 1, 2 (= r1, r2, r3); --tau 2-1=... is the r3-r2 penalty. --plots DIR writes
fig2_simulation, fig3_ndcg_at_n and sigir_fig2_hinge, each as .png and .pdf (DIR is created if its
parent exists).
"""

#: The figures ``--plots`` draws (file stems).
FIGURE_STEMS = ("fig2_simulation", "fig3_ndcg_at_n", "sigir_fig2_hinge")

#: File names written by ``--plots``: each figure as PNG and PDF.
FIGURES = tuple(figure_files(FIGURE_STEMS))


def add_arguments(parser) -> None:
    from cvxrank.experiments._defaults import SIMULATION_LAM

    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated data (default 0)")
    parser.add_argument("--lam", type=float, default=SIMULATION_LAM, help=f"lambda of the hinge form (default {SIMULATION_LAM})")
    parser.add_argument("--tau", metavar="H-L=V,...|estimate",
                        help="tau of the cost-sensitive method per grade pair, or 'estimate' "
                             "(default 2-1=1,2-0=1,1-0=0.1)")
    parser.add_argument("--solver", default="clarabel", help="solver name (default clarabel)")
    parser.add_argument("--formulation", default="dual", choices=("primal", "lifted", "dual", "hinge"),
                        help="formulation solved (default dual)")
    parser.add_argument("--sizes", metavar="N1,N2,N3", default="1000,200,100",
                        help="documents of grades r1,r2,r3 (default the paper's 1000,200,100)")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    parser.add_argument("--plots", metavar="DIR", help="write the three figures (PNG and PDF) into DIR")


def _sizes(text: str) -> tuple:
    parts = text.split(",")
    try:
        sizes = tuple(int(p) for p in parts)
    except ValueError:
        sizes = ()
    if len(sizes) != 3 or min(sizes) < 1:
        raise CvxrankError(f"--sizes must be three positive integers N1,N2,N3, got {text!r}")
    return sizes


def _check_plot_dir(path: str) -> str:
    """The folder for --plots: existing, or creatable because its parent exists."""
    full = os.path.abspath(path)
    if os.path.exists(full) and not os.path.isdir(full):
        raise CvxrankError(f"--plots {path} exists and is not a folder")
    parent = os.path.dirname(full)
    if not os.path.isdir(full) and not os.path.isdir(parent):
        raise CvxrankError(f"--plots {path}: its parent folder {parent} does not exist")
    return path


def write_figures(result, folder: str) -> list[str]:
    """Draw Figs. 2 and 3 (ECML) and Fig. 2 (SIGIR) of ``result`` into ``folder``, each as PNG and PDF
    (:func:`cvxrank.plots.save_figures`); return the paths."""
    from cvxrank.plots import (
        plot_ndcg_at_n,
        plot_simulation_data,
        plot_weighted_hinge,
        save_figures,
    )

    axes = (plot_simulation_data(result, show_paper=True), plot_ndcg_at_n(result), plot_weighted_hinge())
    return save_figures(dict(zip(FIGURE_STEMS, axes)), folder)


def run(args) -> int:
    from cvxrank.experiments.simulation import run_ecml_simulation

    sizes = _sizes(args.sizes)
    tau = parse_tau(args.tau)
    folder = _check_plot_dir(args.plots) if args.plots else None
    if args.json:
        json_folder = os.path.dirname(os.path.abspath(args.json))
        # the JSON may go into the --plots folder, which is created after the run
        if not (os.path.isdir(json_folder) or (folder and json_folder == os.path.abspath(folder))):
            raise CvxrankError(f"--json {args.json}: folder {json_folder} does not exist")
    result = run_ecml_simulation(random_state=args.seed, lam=args.lam, tau=tau, solver=args.solver,
                                 sizes=sizes, formulation=args.formulation)
    print(result.report())
    print(f"time: {result.times['total']:.1f} s")
    if folder:
        os.makedirs(folder, exist_ok=True)
    if args.json:
        write_json(args.json, result.to_json())
        print(f"wrote {args.json}")
    if folder:
        for path in write_figures(result, folder):
            print(f"wrote {path}")
    return 0 if result.certified else 1
