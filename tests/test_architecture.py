"""The import rule of docs/architecture.md, enforced on the source tree.

Each top-level package of kapla imports only itself and the packages left of
it in :data:`LAYERS`; a layer solver, network scheduler or study (a package
under ``search/layer/``, ``search/network/`` or ``explore/studies/``) never
imports another one, and nothing outside it imports it: implementations are
reached through the registry only, which finds them by their entry points.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

import kapla

#: kapla's packages (and top-level modules), from the bottom layer up.
LAYERS = ("errors", "lazy", "memo", "schemas", "workload", "arch", "dataflow", "model", "space", "search", "scheduling",
          "report", "interop", "api", "explore", "cli")
IMPLEMENTATIONS = ("search.layer", "search.network", "explore.studies")  # each subpackage: one implementation

SRC = Path(kapla.__file__).resolve().parent


def _imports(path: Path) -> list[tuple[int, str]]:
    """The kapla modules a file imports, anywhere in it: (line, dotted name without ``kapla.``), one per
    statement (``from kapla.x import y`` names ``x``, or ``x.y`` where ``y`` is a module of it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from kapla import x`` names the module x, or a name the package root exports
            names = ([f"kapla.{alias.name}" for alias in node.names if not alias.name.startswith("_")]
                     if node.module == "kapla" else [node.module])
        else:
            continue
        found.extend((node.lineno, name[len("kapla."):]) for name in names if name.startswith("kapla."))
    return found


def _implementation(module: str) -> str | None:
    """The implementation package a dotted module belongs to (``search.layer.kapla``), if any."""
    for root in IMPLEMENTATIONS:
        if module.startswith(root + "."):
            return ".".join(module.split(".")[: root.count(".") + 2])
    return None


def violations(root: Path) -> list[str]:
    """Every import under ``root`` (a copy of ``src/kapla``) that breaks the rule, one line each."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        if module == "__init__":  # the package root re-exports the API
            continue
        top = module.split(".")[0]
        if top not in rank:
            out.append(f"{rel}: package '{top}' has no place in the layers {LAYERS}")
            continue
        own = _implementation(module)
        for line, target in _imports(path):
            other = target.split(".")[0]
            impl = _implementation(target)
            if other not in rank:
                out.append(f"{rel}:{line}: imports kapla.{target}, which has no place in the layers")
            elif rank[other] > rank[top]:
                out.append(f"{rel}:{line}: imports kapla.{target}, a layer above '{top}'")
            elif impl is not None and impl != own:
                out.append(f"{rel}:{line}: imports kapla.{target}, an implementation reached only through the "
                           "registry")
    return out


def test_the_tree_keeps_the_import_rule():
    assert violations(SRC) == []


@pytest.mark.parametrize(("where", "line", "says"), [
    ("model/cost.py", "from kapla.search.base import IntraSolver", "a layer above 'model'"),
    ("space/layer/frames.py", "import kapla.scheduling.registry", "a layer above 'space'"),
    ("search/layer/random/solver.py", "from kapla.search.layer.exhaustive.solver import feed_unmet",
     "reached only through the registry"),
    ("search/network/tangram/scheduler.py", "from kapla.search.layer.random.solver import generator",
     "reached only through the registry"),
    ("scheduling/registry.py", "from kapla.search.layer.kapla import KaplaIntraSolver",
     "reached only through the registry"),
    ("api.py", "    from kapla.search.network.tangram import TangramScheduler", "reached only through the registry"),
])
def test_the_rule_catches_each_kind_of_break(tmp_path, where, line, says):
    """The check fails on a tree that breaks the rule as the tree before this
    layout did (strategies importing siblings, the registry importing every
    implementation, a layer importing one above it)."""
    tree = tmp_path / "kapla"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__"))
    target = tree / where
    body = target.read_text()
    if line.startswith(" "):  # an import inside a function counts too
        body += f"\n\ndef _late():\n{line}\n"
    else:
        body = line + "\n" + body
    target.write_text(body)
    found = violations(tree)
    assert len(found) == 1 and says in found[0] and where in found[0], found


def test_a_package_initialiser_counts_as_its_package(tmp_path):
    tree = tmp_path / "kapla"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__"))
    init = tree / "search" / "network" / "__init__.py"
    init.write_text("from kapla.search.network.layerwise import LayerwiseScheduler\n" + init.read_text())
    assert [v for v in violations(tree) if "search/network/__init__.py" in v]


def test_an_unplaced_package_is_a_break(tmp_path):
    tree = tmp_path / "kapla"
    shutil.copytree(SRC, tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "solve").mkdir()
    (tree / "solve" / "__init__.py").write_text("")
    assert any("package 'solve'" in v for v in violations(tree))
