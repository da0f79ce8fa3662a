"""mkdocs-gallery settings that the YAML cannot hold: the teaching order of the examples."""

from pathlib import Path

ORDER = ["quick_example", "pairwise_transform", "theorem1_by_hand", "cost_sensitive_simulation",
         "choosing_tau_and_mu", "learning_from_clicks", "explore_a_formulation", "listwise", "letor_cross_validation"]


class TeachingOrder:
    """Sort key: the examples in ORDER first, in that order; any other after them by name."""

    def __call__(self, path):
        stem = Path(path).stem
        return (ORDER.index(stem) if stem in ORDER else len(ORDER), stem)


conf = {"within_subsection_order": TeachingOrder}
