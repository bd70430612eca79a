"""The import graph of ``src/reasonscope`` points one way: down.

The graph is read from the source with :mod:`ast`. Every import counts as a dependency: module-level,
function-level (a lazy import is still a dependency, only a later one) and ``if TYPE_CHECKING`` (a type
named in a signature is still knowledge of that module). ``from .pkg.mod import name`` depends on the
module it names, ``pkg.mod`` (and on ``pkg.mod.name`` when that is a submodule); ``from .pkg import name``
on ``pkg/__init__`` and, when ``name`` is a submodule, on that submodule too.
Registry strings (``"reasonscope.behavior.entry:FAMILY"``) are not imports and are not counted.

Checked at two grains: between modules (files) and between the top-level entries of the package (the
files and folders directly under ``src/reasonscope``). Neither graph has a cycle (no strongly connected
component of more than one node), every edge runs from a higher layer to a lower one (:data:`LAYERS`), no
family imports the command line, the run pipeline or another family, no shared module imports a family,
and the run pipeline names no family.

``python tests/test_layers.py`` prints the layer picture: which entry sits on which layer, and the
cycles and upward edges, if any.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from reasonscope.registry import FAMILY_NAMES

SRC = Path(__file__).resolve().parents[1] / "src" / "reasonscope"
FAMILIES = FAMILY_NAMES  # the built-in families, named once, in the registry (plugins live outside src/)

# Top-level entries of the package by layer, top first. An entry may import only entries on its own layer
# or below it (and within its own layer, no cycle); families never import each other.
LAYERS: dict[str, tuple[str, ...]] = {
    "command line": ("__init__", "_moved", "cli", "testing", "integrations"),
    "run pipeline": ("pipeline",),
    "assembly": ("plan", "registry"),
    "families": FAMILIES,
    "shared services": ("family", "metric_specs", "shared_settings", "report", "view", "scorers", "models", "judge",
                        "stats", "compare", "data", "execution", "prompts", "output_files", "demo", "llama_server"),
    "store and shared types": ("storage", "types", "text", "_lazy"),
}
PIPELINE = set(LAYERS["run pipeline"])
COMMAND_LINE = {"cli"}
SHARED = set(LAYERS["shared services"]) | set(LAYERS["store and shared types"])


def module_name(path: Path) -> str:
    """``src/reasonscope/a/b.py`` -> ``a.b``; a package's ``__init__.py`` -> the package (root: ``__init__``)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "__init__"


def _exists(module: str) -> bool:
    base = SRC.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path) -> set[str]:
    """The reasonscope modules a source file imports, anywhere in the file (see the module docstring)."""
    rel = path.relative_to(SRC)
    package = list(rel.parts[:-1])  # the package the file sits in (for __init__.py: the package itself)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == "reasonscope" or node.module.startswith("reasonscope.")):
                parts = node.module.split(".")[1:]
            else:
                continue
            if parts:
                out.add(".".join(parts))
            for alias in node.names:
                sub = ".".join([*parts, alias.name])
                if _exists(sub):
                    out.add(sub)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("reasonscope."):
                    out.add(alias.name.removeprefix("reasonscope."))
    return {m if m else "__init__" for m in out}


def module_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports (itself excluded)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = module_name(path)
        graph[name] = {m for m in imports_of(path) if m != name}
    return graph


def top(module: str) -> str:
    """The top-level entry a module belongs to (``behavior.entry`` -> ``behavior``)."""
    return module.split(".")[0]


def entry_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between top-level entries: an edge when any module of one imports any module of the other."""
    out: dict[str, set[str]] = defaultdict(set)
    for src, targets in graph.items():
        out[top(src)] |= {top(t) for t in targets if top(t) != top(src)}
        out.setdefault(top(src), set())
    return dict(out)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def layer_of(entry: str) -> int:
    """The entry's layer, 0 at the top."""
    for i, members in enumerate(LAYERS.values()):
        if entry in members:
            return i
    raise KeyError(f"{entry!r} is on no layer of tests/test_layers.py LAYERS: add it where it belongs")


def upward_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports from a module to one on a higher layer, or from one family to another."""
    bad = []
    for src, targets in sorted(graph.items()):
        for t in sorted(targets):
            a, b = top(src), top(t)
            if a == b:
                continue
            if layer_of(b) < layer_of(a) or (a in FAMILIES and b in FAMILIES):
                bad.append((src, t))
    return bad


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each node's floor in an acyclic graph: 0 for a node that imports nothing, else 1 + its highest import."""
    memo: dict[str, int] = {}

    def floor(v: str, seen: frozenset = frozenset()) -> int:
        if v not in memo:
            if v in seen:  # a cycle: counted once
                return 0
            memo[v] = 1 + max((floor(w, seen | {v}) for w in graph.get(v, ()) if w in graph), default=-1)
        return memo[v]

    return {v: floor(v) for v in graph}


GRAPH = module_graph()
ENTRIES = entry_graph(GRAPH)


def test_the_walker_reads_relative_absolute_lazy_and_submodule_imports():
    assert "plan" in GRAPH["pipeline.runner"]  # `from ..plan import`: a relative import two levels up
    assert "storage.store" in GRAPH["report.build"]
    assert "report.build" in GRAPH["pipeline.runner"]  # imported inside a function
    assert "scorers.cache" in GRAPH["family"]  # `from .scorers.cache import` inside a method
    assert "report" not in GRAPH["pipeline.runner"]  # `from ..report.build import` names the module, not the package
    assert imports_of(SRC / "cli" / "__init__.py") >= {"cli.root"}


def test_every_entry_has_a_layer():
    for entry in ENTRIES:
        layer_of(entry)


def test_no_cycle_between_modules():
    assert cycles(GRAPH) == []


def test_no_cycle_between_top_level_entries():
    assert cycles(ENTRIES) == []


def test_every_import_points_down():
    assert upward_edges(GRAPH) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_no_family_imports_the_command_line_or_the_run_pipeline(family):
    bad = sorted((m, t) for m, ts in GRAPH.items() if top(m) == family for t in ts
                 if top(t) in COMMAND_LINE | PIPELINE | {"plan", "registry"})
    assert bad == []


def test_no_shared_module_imports_a_family_or_anything_above():
    above = set(FAMILIES) | PIPELINE | COMMAND_LINE | {"plan", "registry"}
    bad = sorted((m, t) for m, ts in GRAPH.items() if top(m) in SHARED for t in ts if top(t) in above)
    assert bad == []


def test_the_run_pipeline_names_no_family():
    modules = [m for m in GRAPH if top(m) in PIPELINE]
    assert "pipeline.runner" in modules
    for name in modules:
        path = SRC.joinpath(*name.split(".")).with_suffix(".py")
        if not path.is_file():
            path = SRC.joinpath(*name.split("."), "__init__.py")
        text = path.read_text(encoding="utf-8")
        assert not {top(t) for t in GRAPH[name]} & set(FAMILIES), f"{name} imports a family"
        tree = ast.parse(text)
        named = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} | \
                {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not named & set(FAMILIES), f"{name} names the families {sorted(named & set(FAMILIES))}"


def test_cycle_finder_and_layer_check_catch_a_made_up_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert floors({"x": {"y"}, "y": {"z"}, "z": set()}) == {"x": 2, "y": 1, "z": 0}
    assert upward_edges({"storage.store": {"pipeline.runner"}, "pipeline.runner": {"storage.store"}}) == [
        ("storage.store", "pipeline.runner")]
    assert upward_edges({"behavior.x": {"evidence.y"}}) == [("behavior.x", "evidence.y")]


def picture() -> str:
    """The layer picture: each layer with its entries, then cycles and upward edges."""
    lines = []
    for name, members in LAYERS.items():
        present = [m for m in members if m in ENTRIES]
        lines.append(f"{name}: {', '.join(present)}")
    f = floors(ENTRIES)
    lines.append(f"entries: {len(ENTRIES)}, floors (entry graph): {max(f.values()) + 1}")
    lines.append(f"module cycles: {cycles(GRAPH)}")
    lines.append(f"entry cycles: {cycles(ENTRIES)}")
    ups = upward_edges(GRAPH)
    lines.append(f"upward imports ({len(ups)}):")
    lines += [f"  {a} -> {b}" for a, b in ups]
    return "\n".join(lines)


if __name__ == "__main__":
    print(picture())
