"""Import cycles among logdoctor's modules, counting function-level imports (issue 20 part 3).

Why: `tests/test_layering.py` checked module-level imports only, so cycles through an import inside a function
(api -> crossattempt -> api) went unseen. A cycle here is a strongly connected component of two or more modules in
the graph of every `import logdoctor...` statement that can run, wherever it sits (module or function level); a
package and its own submodules are one unit (as in test_layering). Imports under `if TYPE_CHECKING:` never run
(annotations only): --with-types counts them too.

    python tools/import_graph.py              # the count and each cycle's modules; exit 1 when there is one
    python tools/import_graph.py --with-types # also imports under `if TYPE_CHECKING:`
    python tools/import_graph.py --only api crossattempt matching classify.runtime   # cycles touching these
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "logdoctor"


def module_name(path: Path, pkg: Path = PKG) -> str:
    parts = [p for p in path.relative_to(pkg).with_suffix("").parts if p != "__init__"]
    return ".".join(parts) or "__init__"


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def imports(path: Path, pkg: Path = PKG, with_types: bool = False) -> Iterator[str]:
    """The logdoctor modules `path` imports, at any depth (function level included)."""
    tree = ast.parse(path.read_text())
    skip = set() if with_types else _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("logdoctor"):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("logdoctor")]
        for n in names:
            mod = n.removeprefix("logdoctor").lstrip(".")
            rel = pkg / mod.replace(".", "/")
            if mod and (rel.with_suffix(".py").exists() or rel.is_dir()):
                yield mod


def graph(pkg: Path = PKG, with_types: bool = False) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for path in sorted(pkg.rglob("*.py")):
        me = module_name(path, pkg)
        edges = g.setdefault(me, set())
        for m in imports(path, pkg, with_types):
            if m == me or m.startswith(me + ".") or me.startswith(m + "."):
                continue  # a package and its own submodules
            edges.add(m)
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of two or more modules (Tarjan), each sorted; sorted by first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def touching(found: list[list[str]], only: list[str]) -> list[list[str]]:
    def mine(m: str) -> bool:
        return any(m == o or m.startswith(o + ".") for o in only)

    return [c for c in found if any(mine(m) for m in c)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-types", action="store_true", help="also count imports under `if TYPE_CHECKING:`")
    ap.add_argument("--only", nargs="*", default=None, help="report only cycles that touch these modules")
    ap.add_argument("--pkg", type=Path, default=PKG, help="the package folder (default: this checkout's)")
    args = ap.parse_args(argv)
    found = cycles(graph(args.pkg, args.with_types))
    if args.only:
        found = touching(found, args.only)
    print(f"{len(found)} import cycle{'s' if len(found) != 1 else ''}")
    for c in found:
        print("  " + " <-> ".join(c))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
