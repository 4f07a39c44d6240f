"""Every operator-visible message in one Python source file, read with `ast` (never imported or run).

A message is a `raise X(...)`, an `assert cond, msg`, a `logger.error/exception/critical/warning(...)` (also
`warnings.warn`) or a `sys.exit(msg)`. Its text becomes a template: the literal parts in order, with a placeholder
(None) wherever a value is formatted in (f-strings, `%`, `.format`, `+` of a non-literal). Matching a template is
"find each literal, in order" - linear in the line, no backtracking regex.

Each site also says whether it sits on a recoverable path: a raise caught by an enclosing `try` whose handler does
not raise again, a log call inside an `except` that does not raise (logged, then the engine goes on), or a warning.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

Part = str | None  # a literal segment, or None for a formatted value
LEVELS = {"error": "error", "exception": "error", "critical": "critical", "fatal": "critical", "warning": "warning",
          "warning_once": "warning", "error_once": "error"}
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa%]")
_BRACE = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
MIN_LITERAL = 12  # a template with fewer literal characters matches too much to name anything


@dataclass(frozen=True)
class Site:
    """One message an engine can print, where it is printed, and how."""

    kind: str  # raise | assert | exit | log
    exc: str | None  # the exception class (raise/assert/exit), None for a log call
    level: str | None  # error | critical | warning for log calls, None otherwise
    template: tuple[Part, ...]
    module: str  # path in the wheel, e.g. sglang/srt/server_args.py
    qualname: str  # Class.function, or <module>
    line: int
    recoverable: str  # "" | caught | handled | warning


def literal_len(t: tuple[Part, ...]) -> int:
    return sum(len(p.strip()) for p in t if p)


def _norm(parts: list[Part]) -> tuple[Part, ...]:
    """Merge neighbours, turn newlines into placeholders (each log line is read on its own), collapse spaces."""
    out: list[Part] = []
    for p in parts:
        pieces: list[Part] = [p] if p is None else []
        if p is not None:
            for i, seg in enumerate(p.split("\n")):
                if i:
                    pieces.append(None)
                pieces.append(" ".join(seg.split()) if seg.strip() else (" " if seg else ""))
        for q in pieces:
            if q == "":
                continue
            if q is None and out and out[-1] is None:
                continue
            if q is not None and out and out[-1] is not None:
                out[-1] = out[-1] + q
                continue
            out.append(q)
    cleaned = [p if p is None else " ".join(p.split()) if p.strip() else None for p in out]
    final: list[Part] = []
    for p in cleaned:
        if p is None and final and final[-1] is None:
            continue
        final.append(p)
    return tuple(final)


def _split(text: str, pat: re.Pattern[str], esc: dict[str, str]) -> list[Part]:
    out: list[Part] = []
    pos = 0
    for m in pat.finditer(text):
        out.append(text[pos : m.start()])
        tok = m.group(0)
        out.append(esc[tok] if tok in esc else None)
        pos = m.end()
    out.append(text[pos:])
    return out


Env = Callable[[str], "list[Part] | None"]


def parts_of(node: ast.expr | None, fmt: str | None = None, env: Env | None = None) -> list[Part]:
    """The template of an expression; `fmt` = "%" when a logger's extra arguments fill %-placeholders; `env` gives
    the template a local or module-level name was last assigned (`msg = f"..."; raise ValueError(msg)`)."""
    if node is None:
        return [None]
    if isinstance(node, ast.Name) and env is not None:
        got = env(node.id)
        if got is not None:
            if fmt == "%":
                out: list[Part] = []
                for p in got:
                    out.extend([None] if p is None else _split(p, _PERCENT, {"%%": "%"}))
                return out
            return list(got)
        return [None]
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, str):
            return [None]
        if fmt == "%":
            return _split(node.value, _PERCENT, {"%%": "%"})
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            else:
                out.append(None)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return parts_of(node.left, fmt, env) + parts_of(node.right, fmt, env)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return parts_of(node.left, "%", env)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = parts_of(node.func.value, None, env)
        out = []
        for p in base:
            out.extend([None] if p is None else _split(p, _BRACE, {"{{": "{", "}}": "}"}))
        return out
    return [None]


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _name(node.func)
    return ""


def _chain(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return _chain(node.value) + "." + node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _chain(node.func) + "()"
    return "?"


def _handler_catches(h: ast.ExceptHandler, exc: str) -> bool:
    if h.type is None:
        return True
    names = [_name(e) for e in h.type.elts] if isinstance(h.type, ast.Tuple) else [_name(h.type)]
    return any(n in ("Exception", "BaseException", exc) for n in names)


def _raises(stmts: list[ast.stmt]) -> bool:
    """A raise, sys.exit or os._exit anywhere in these statements (not in nested functions)."""
    for s in stmts:
        for n in _own_nodes(s):
            if isinstance(n, ast.Raise):
                return True
            if isinstance(n, ast.Call) and _chain(n.func) in ("sys.exit", "os._exit", "exit", "quit"):
                return True
    return False


def _own_nodes(s: ast.AST):
    stack = [s]
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.append(c)


@dataclass
class _Ctx:
    qual: tuple[str, ...] = ()
    trys: tuple[ast.Try, ...] = ()  # try statements whose body we are in (innermost last)
    handler: ast.ExceptHandler | None = None  # the except clause we are in
    names: dict[str, list[Part]] = field(default_factory=dict)  # strings assigned in this function so far


class _Miner:
    def __init__(self, module: str):
        self.module = module
        self.sites: list[Site] = []
        self.module_names: dict[str, list[Part]] = {}
        self.ctx = _Ctx()

    def env(self, name: str) -> list[Part] | None:
        got = self.ctx.names.get(name)
        return got if got is not None else self.module_names.get(name)

    def parts(self, node: ast.expr | None, fmt: str | None = None) -> list[Part]:
        return parts_of(node, fmt, self.env)

    def block(self, stmts: list[ast.stmt], ctx: _Ctx) -> None:
        for i, s in enumerate(stmts):
            self.ctx = ctx
            self.stmt(s, ctx, stmts[i + 1 :])

    def remember(self, s: ast.stmt, ctx: _Ctx) -> None:
        """A string assigned to a plain name: what a later `raise X(name)` formats."""
        names = ctx.names if ctx.qual else self.module_names
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                p = self.parts(s.value)
                if any(p):
                    names[targets[0].id] = p
                else:
                    names.pop(targets[0].id, None)
        elif isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add) and isinstance(s.target, ast.Name):
            old = names.get(s.target.id)
            if old is not None:
                names[s.target.id] = old + self.parts(s.value)

    def stmt(self, s: ast.stmt, ctx: _Ctx, after: list[ast.stmt]) -> None:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.block(s.body, _Ctx(qual=(*ctx.qual, s.name)))
            self.ctx = ctx
            return
        if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.block(s.body, _Ctx(ctx.qual, (*ctx.trys, s), ctx.handler, ctx.names))
            for h in s.handlers:
                self.block(h.body, _Ctx(ctx.qual, ctx.trys, h, ctx.names))
            self.block(s.orelse, ctx)
            self.block(s.finalbody, ctx)
            return
        if isinstance(s, (ast.If, ast.While)):
            self.exprs(s.test, ctx, after)
            self.block(s.body, ctx)
            self.block(s.orelse, ctx)
            return
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.block(s.body, ctx)
            self.block(s.orelse, ctx)
            return
        if isinstance(s, (ast.With, ast.AsyncWith)):
            self.block(s.body, ctx)
            return
        if isinstance(s, ast.Match):
            for c in s.cases:
                self.block(c.body, ctx)
            return
        if isinstance(s, ast.Raise):
            self.raise_(s, ctx)
            return
        if isinstance(s, ast.Assert):
            if s.msg is not None:
                self.add("assert", "AssertionError", None, self.parts(s.msg), s, ctx, self._caught("AssertionError", ctx))
            return
        self.exprs(s, ctx, after)
        self.remember(s, ctx)

    def exprs(self, node: ast.AST, ctx: _Ctx, after: list[ast.stmt]) -> None:
        for n in _own_nodes(node):
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Name) and n.args and n.func.id[:1].isupper() \
                    and n.func.id.endswith(("Error", "Exception")):
                # an exception built here and raised or handed on elsewhere (`e = RuntimeError(...)`, set_exception)
                self.add("raise", n.func.id, None, self.parts(n.args[0]), n, ctx, "")
                continue
            if not isinstance(n.func, ast.Attribute):
                continue
            attr = n.func.attr
            owner = _chain(n.func.value).lower()
            if attr in LEVELS and ("log" in owner) and n.args:
                level = LEVELS[attr]
                t = self.parts(n.args[0], "%" if len(n.args) > 1 else None)
                rec = ""
                if level == "warning":
                    rec = "" if _raises(after) else "warning"
                elif ctx.handler is not None and not _raises(ctx.handler.body):
                    rec = "handled"
                self.add("log", None, level, t, n, ctx, rec)
            elif attr == "warn" and _chain(n.func.value) == "warnings" and n.args:
                self.add("log", None, "warning", self.parts(n.args[0]), n, ctx, "warning")
            elif attr == "exit" and _chain(n.func.value) == "sys" and n.args:
                t = self.parts(n.args[0])
                if any(p for p in t):
                    self.add("exit", "SystemExit", None, t, n, ctx, "")

    def _caught(self, exc: str, ctx: _Ctx) -> str:
        for t in reversed(ctx.trys):
            for h in t.handlers:
                if _handler_catches(h, exc):
                    return "" if _raises(h.body) else "caught"
        return ""

    def raise_(self, s: ast.Raise, ctx: _Ctx) -> None:
        if not isinstance(s.exc, ast.Call) or not s.exc.args:
            return
        exc = _name(s.exc.func)
        if not exc or not exc[:1].isupper():
            return
        self.add("raise", exc, None, self.parts(s.exc.args[0]), s, ctx, self._caught(exc, ctx))

    def add(self, kind, exc, level, parts, node, ctx, rec) -> None:
        t = _norm(parts)
        if literal_len(t) < MIN_LITERAL:
            return
        qual = ".".join(ctx.qual) or "<module>"
        self.sites.append(Site(kind, exc, level, t, self.module, qual, getattr(node, "lineno", 0), rec))


def mine_source(text: str, module: str) -> list[Site]:
    """The message sites of one source file (a file that does not parse yields none)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    m = _Miner(module)
    m.block(tree.body, _Ctx())
    return m.sites
