"""
# Cross-validation on real LETOR data

Teaches: the papers' experiment on real data: parameters chosen on held-out queries, NDCG@k, MAP
and sign tests on ../shared/data/lightgbm_rank (skipped when the data set is absent).

Train on train.letor with lambda chosen on 20% of its queries, test on test.letor; the table
has NDCG@1/3/5/10, MAP and P@k per method, and sign tests on per-query NDCG@1 against Ranking SVM.
`cvxrank cv --train ... --test ...` runs every method; this example runs three to stay quick.
"""
from pathlib import Path

import cvxrank as cr
from cvxrank.experiments.cv import cross_validate, holdout_split
from cvxrank.reporting import markdown_table

# The data set sits beside the repository: ../shared/data/lightgbm_rank from the repository root
# (the docs gallery runs this script from examples/, one folder down).
CANDIDATES = [Path("../shared/data/lightgbm_rank"), Path("../../shared/data/lightgbm_rank")]
FOLDER = next((p for p in CANDIDATES if (p / "train.letor").exists()), None)


def main():
    if FOLDER is None:
        print("skipped: ../shared/data/lightgbm_rank is absent")
        return
    train, test = cr.load_letor([FOLDER / "train.letor", FOLDER / "test.letor"])
    print(f"train: {train}\ntest:  {test}")
    splits = holdout_split(train, test, vali_fraction=0.2, random_state=0)
    result = cross_validate(splits, ["ranksvm", "rsvm-ir-qp", "listmle"], baseline="ranksvm",
                            grids={"pairwise": {"lam": [1.0, 10.0]}, "listmle": {"C": [1.0, 10.0]}})
    print(markdown_table(result.summary[["ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "map"]]))
    print(markdown_table(result.sign_tests("ndcg@1", baseline="RankSVM").set_index("method"), floatfmt=".3g"))


if __name__ == "__main__":
    main()
