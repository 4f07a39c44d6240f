"""The package imports one way: a module may import its own layer or a lower one, never a higher one (function-
level imports included), and module-level imports form no cycle. The layers are the pipeline's stages
(docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

PKG = Path(__file__).resolve().parents[1] / "logdoctor"

LAYERS = [  # lowest first; a module belongs to the first (longest) prefix that names it
    (
        "core",  # the bottom layer: every module of logdoctor/core/
        "verdict.diagnosis",
        "verdict.evidence",
        "input.intake",
        "matching.catalogues",
        "verdict.confidence",
    ),
    (
        "input.formats",
        "render.visible",
        "input.sources",
        "engines",
        "input.order",
        "input.read",
        "input.stream",
        "timeline.blocks",
        "classify.corpus",
        "history",
        "timeline.hints",
    ),
    (
        "engines.levers",
        "timeline.config",
        "timeline.build",
        "timeline.phases",
        "timeline.attempts",
        "timeline.units",
        "timeline.decisive",
        "timeline.serving",
        "verdict.defects",
        "engines.atlas",
    ),
    ("matching", "classify", "hook.unitfile", "scan"),
    ("verdict.remedy", "verdict.api", "verdict.crossattempt", "verdict.signature", "classify.calibration"),
    ("render", "classify.evaluation", "hook.notify", "hook.watching", "triage", "preflight"),
    ("cli.run", "cli.about"),
    ("cli.app", "cli.commands", "cli.entry", "__init__", "__main__"),
]


def _module(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"] or ["__init__"]
    return ".".join(parts)


def _layer(mod: str) -> int:
    best, level = -1, None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (mod == n or mod.startswith(n + ".")) and len(n) > best:
                best, level = len(n), i
    assert level is not None, f"logdoctor.{mod} is in no layer: add it to LAYERS"
    return level


def _imports(path: Path):
    """(imported logdoctor module, at module level?) for every import in the file."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("logdoctor"):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("logdoctor")]
        for n in names:
            mod = n.removeprefix("logdoctor").lstrip(".")
            if mod and ((PKG / mod.replace(".", "/")).with_suffix(".py").exists() or _package_with_code(mod)):
                yield mod, id(node) in top


def _package_with_code(mod: str) -> bool:
    """A package counts as an import only when its __init__ does more than document the package: `from
    logdoctor.verdict import api` imports verdict.api, not a layer called verdict."""
    init = PKG / mod.replace(".", "/") / "__init__.py"
    return init.is_file() and any(not isinstance(n, ast.Expr) for n in ast.parse(init.read_text()).body)


def _files():
    return sorted(p for p in PKG.rglob("*.py"))


def test_no_module_imports_a_higher_layer():
    bad = []
    for path in _files():
        me = _module(path)
        for mod, _ in _imports(path):
            if _layer(mod) > _layer(me):
                bad.append(f"logdoctor.{me} (layer {_layer(me)}) imports logdoctor.{mod} (layer {_layer(mod)})")
    assert not bad, "\n".join(bad)


def test_module_level_imports_have_no_cycle():
    graph = {_module(p): {m for m, top in _imports(p) if top} for p in _files()}
    state: dict[str, int] = {}

    def visit(n, stack):
        state[n] = 1
        for m in graph.get(n, ()):
            if m == n or m.startswith(n + ".") or n.startswith(m + "."):
                continue  # a package and its own submodules
            if state.get(m) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack + [n, m]))
            if m not in state:
                visit(m, stack + [n])
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n, [])


# modules whose imports issue 20 part 3 untangled: no cycle may pass through them, counting function-level imports
CYCLE_FREE = (
    "timeline.build",
    "timeline.phases",
    "verdict.api",
    "verdict.crossattempt",
    "verdict.diagnosis",
    "verdict.confidence",
    "timeline.attempts",
    "timeline.decisive",
    "matching.decide",
    "matching.rank",
    "matching.verdict",
    "classify.runtime",
)


def _import_graph():
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", PKG.parent / "tools" / "import_graph.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_import_cycle_through_the_verdict_modules_function_level_included():
    ig = _import_graph()
    found = ig.touching(ig.cycles(ig.graph(PKG)), list(CYCLE_FREE))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_import_cycle_anywhere_function_level_included():
    """Issue 20: no import cycle in logdoctor/, counting imports inside functions (the history backends know only
    the store interface, history/factory.py picks one; matching/cache.py imports nothing above it)."""
    ig = _import_graph()
    found = ig.cycles(ig.graph(PKG))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


# the bottom of the compiled-artefact caches: what they may import from logdoctor (nothing above the atomic writer)
CACHE_MODULES = {"core.rxcache": {"core.atomic"}, "matching.cache": {"core.atomic"}}


def test_the_artefact_caches_import_nothing_above_them():
    ig = _import_graph()
    g = ig.graph(PKG)
    extra = {m: sorted(g[m] - allowed) for m, allowed in CACHE_MODULES.items() if g[m] - allowed}
    assert not extra, f"the caches must stay a bottom layer: {extra}"


def test_the_history_backends_know_only_the_store_interface():
    ig = _import_graph()
    g = ig.graph(PKG)
    backends = {"history.sqlite", "history.postgres"}
    assert not g["history.store"] & (backends | {"history.spool", "history.factory"})
    assert not g["history.sqlite"] & {"history.postgres", "history.spool", "history.factory"}
    assert "history.factory" not in g["history.postgres"]


def test_the_cycle_finder_sees_a_function_level_cycle(tmp_path):
    ig = _import_graph()
    pkg = tmp_path / "logdoctor"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from logdoctor import b\n")
    (pkg / "b.py").write_text("from logdoctor.a import f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from logdoctor import a\n")
    assert ig.cycles(ig.graph(pkg)) == [["a", "b"]]
    (pkg / "a.py").write_text("def f():\n    pass\n")
    assert ig.cycles(ig.graph(pkg)) == []
