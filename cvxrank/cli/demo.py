"""Verify Theorem 1 (SIGIR 2006) on a generated data set with every installed solver and print the table."""

from __future__ import annotations

from cvxrank.cli._common import frame_to_json, write_json
from cvxrank.cli.verify import report

HELP = "verify Theorem 1 on generated data with every installed solver"
EPILOG = """examples:
  cvxrank demo
  cvxrank demo --seed 3 --json demo.json
"""


def add_arguments(parser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the table as JSON")


def run(args) -> int:
    from cvxrank.datasets import make_ranking
    from cvxrank.theorem import verify_theorem1

    data = make_ranking(n_queries=12, n_features=5, n_grades=3, random_state=args.seed)
    tau = {(2, 1): 2.0, (2, 0): 3.0, (1, 0): 1.0}
    print("cvxrank demo: Ranking SVM for IR (tau per grade pair, balanced mu per query)")
    print(f"tau = {tau}, mu = balanced (equation (10)), lambda = 0.1\n")
    df = verify_theorem1(data, tau=tau, mu="balanced", lam=0.1, formulations=("primal", "lifted", "dual", "hinge"))
    print(report(df, f"Theorem 1 verified numerically; generated data, seed {args.seed}"))
    if args.json:
        write_json(args.json, frame_to_json(df))
        print(f"wrote {args.json}")
    return 0
