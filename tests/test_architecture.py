"""The import contract: layers point one way (README "Layout"; ``cvxrank/__init__.py``).

Every ``import cvxrank.X`` and ``from cvxrank.X import ...`` anywhere in a module, including
imports inside functions, goes to a lower layer or stays in its own package. Two packages of
one layer are independent. Nothing imports the command line.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cvxrank"

#: Lowest first. A group is a top-level module or sub-package of cvxrank.
LAYERS = [
    {"exceptions"},
    {"_text"},
    {"_memory", "_groups", "_io", "_args", "_optim", "_style", "_svmlight", "_float64", "_validation", "reporting"},
    {"_figures"},
    {"data", "metrics"},
    {"datasets", "pairs", "evaluation"},
    {"costs", "objectives", "preference_groups"},  # preference_groups: pairs whose cost factors per document
    {"variants"},
    {"problem"},
    {"clicks"},  # click logs, pairs and costs from clicks: RankingProblems for every solver
    {"certificate", "rounding"},
    {"solution"},
    {"formulations"},
    {"native"},
    {"solvers"},
    {"listwise", "path", "theorem"},
    {"estimators"},
    {"experiments", "study"},
    {"plots"},
    {"bench"},
    {"cli"},
]
LAYER = {group: i for i, groups in enumerate(LAYERS) for group in groups}


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "cvxrank"


def _imports():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("cvxrank"):
                targets = [f"cvxrank.{a.name}" for a in node.names] if node.module == "cvxrank" else [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("cvxrank")]
            else:
                continue
            for target in targets:
                yield module, target, f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def test_every_package_has_a_layer():
    groups = {_group(m) for m, _, _ in _imports()} - {"cvxrank"}
    assert groups <= set(LAYER), f"give these a layer in LAYERS: {sorted(groups - set(LAYER))}"


def test_imports_point_down_the_layers():
    wrong = []
    for module, target, where in _imports():
        source, dest = _group(module), _group(target)
        if source == "cvxrank" or source == dest or target == "cvxrank.__version__":
            continue  # the package's front door re-exports everything; the version is a constant
        if dest == "cvxrank":
            wrong.append(f"{where}: {module} imports the top-level package ({target})")
        elif LAYER[dest] >= LAYER[source]:
            wrong.append(f"{where}: {module} (layer {LAYER[source]}) imports {target} (layer {LAYER[dest]})")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def test_the_contract_can_fail(tmp_path, monkeypatch):
    """A planted upward import is caught (the test above is not vacuous)."""
    fake = tmp_path / "cvxrank"
    (fake / "pairs").mkdir(parents=True)
    (fake / "pairs" / "__init__.py").write_text("def f():\n    from cvxrank.cli import main\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    with pytest.raises(AssertionError, match="imports cvxrank.cli"):
        test_imports_point_down_the_layers()
