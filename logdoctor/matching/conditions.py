"""A rule's `match` condition: parsed once into a tree of nodes (`parse`: AllNode, AnyNode, NotNode, LeafNode), which
evaluates itself over one attempt, and the leaf registry (`LEAVES`). Leaves look at the parsed structure, not at raw
text only: the inner vs. wrapper exception of a chained traceback, frames, the phase reached, the flags in force,
kernel Xid codes, systemd's verdict, which ranks failed. A leaf returns evidence lines and named captures, or None."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.limits import MATCH_CAP
from logdoctor.core.records import KERNEL, SERVICE, SYSTEMD, Record, kernel_sourced
from logdoctor.core.vocab import XID_APP, XID_HARDWARE
from logdoctor.engines import ENGINE_NAMES, each
from logdoctor.matching.prefilter import can_match, for_context
from logdoctor.timeline import decisive
from logdoctor.timeline.blocks import Block
from logdoctor.timeline.build import PHASE_INDEX, Attempt, Timeline


@dataclass
class Hit:
    """What a matched condition tree found: evidence lines, captures and how many leaves held."""

    evidence: list[tuple[int, str]] = field(default_factory=list)
    captures: dict[str, object] = field(default_factory=dict)
    leaves: int = 0

    def merge(self, other: Hit) -> None:
        self.evidence += other.evidence
        for k, v in other.captures.items():
            self.captures.setdefault(k, v)
        self.leaves += other.leaves


@dataclass
class Context:
    """Everything a leaf may look at, computed once per attempt."""

    timeline: Timeline
    attempt: Attempt
    engine: str
    levers: dict
    fatal: list[Block]
    service: list[Record]
    kernel: list[Record]
    systemd: list[Record]
    errors: list[tuple[int, str]]  # decisive exception texts "Type: message" (every section) + ERROR lines
    inner: list[tuple[int, str]]  # root causes: first section of a chain, and X of "... failed: X"
    wrapper: list[tuple[int, str]]  # the outermost exception of each fatal traceback

    @classmethod
    def build(cls, tl: Timeline, a: Attempt) -> Context:
        # the decisive error is computed once per attempt (logdoctor/timeline/decisive.py) and read here as-is
        dec = decisive.of(a)
        fatal = dec.blocks
        # user content is not the engine's word: a request echo (--log-requests) and any engine line quoting a
        # kernel report ("NVRM: ...") are left out of the text leaves; the kernel's own lines are in `kernel`
        service = [r for r in a.records if r.transport == SERVICE and not _quotes_user_or_kernel(r)]
        # kernel lines about another program's process (its pid, its memory cgroup) are not this service's evidence
        foreign = {e.line for e in a.kernel if e.values.get("foreign")}
        # the kernel's own lines only (records.kernel_sourced): an engine line quoting "NVRM: Xid" is no evidence
        kernel = [
            r
            for r in a.records
            if (r.transport == KERNEL or (r.transport == SERVICE and "NVRM:" in r.msg and kernel_sourced(r)))
            and r.line not in foreign
        ]
        systemd = [r for r in a.records if r.transport == SYSTEMD]
        errors, inner, wrapper = (
            [x for x in xs if not _quoted_kernel(x[1])] for xs in (dec.errors, dec.inner, dec.wrapper)
        )
        levers = dict(a.config.levers)
        return cls(tl, a, tl.engine, levers, fatal, service, kernel, systemd, errors, inner, wrapper)


# an engine's echo of a request it received (SGLang --log-requests "Receive: obj=GenerateReqInput(text=...",
# "Finish: obj=..."; vLLM "Received request ID: prompt: '...'"): the text in it is the user's
_REQUEST_ECHO = rxcache.compile(r"^(?:Receive|Finish): obj=\w{0,40}Req\w{0,40}\(|^Received request \S{1,200}: prompt")


def _quoted_kernel(text: str) -> bool:
    return "NVRM:" in text


def _quotes_user_or_kernel(r: Record) -> bool:
    if _REQUEST_ECHO.match(r.msg):
        return True
    return "NVRM:" in r.msg and not kernel_sourced(r)


def _rx(p, compiled):
    key = str(p)
    rx = compiled.get(key)
    if rx is None:
        try:
            rx = compiled[key] = rxcache.compile(key)
        except re.error as exc:  # only reachable for a rule that skipped lint: say which pattern
            from logdoctor.core.errors import RuleError

            raise RuleError(f"bad regex {key!r}: {exc}") from None
    return rx


def _search_lines(pats, lines, compiled, limit=3):
    pats = pats if isinstance(pats, list) else [pats]
    hit = Hit()
    for p in pats:
        rx = _rx(p, compiled)
        found = False
        for ln, text in lines:
            m = rx.search(text, 0, MATCH_CAP)  # the cap bounds a near-miss line's cost (docs/reliability.md)
            if m:
                hit.evidence.append((ln, text))
                for k, v in m.groupdict().items():
                    if v is not None:
                        hit.captures.setdefault(k, v)
                found = True
                if len(hit.evidence) >= limit:
                    break
        if found:
            return hit
    return None


def _scoped(ctx: Context, scope) -> list[Record]:
    recs = ctx.service
    fl = ctx.attempt.fatal_line
    if scope == "before_fatal" and fl:
        return [r for r in recs if r.line <= fl]
    if scope == "after_fatal" and fl:
        return [r for r in recs if r.line >= fl]
    return recs


# --------------------------------------------------------------------------------------------------------------------
# the condition tree: a rule's `match:` parsed once, when the loader reads the file (and kept in the rule cache), into
# nodes. Everything that looks at a condition is a method of the nodes or reads `walk`: evaluation, the patterns the
# loader checks and the prefilters index, the classifier's evidence-only view. The leaf registry below names leaves.


# the keys that combine conditions (the rule schema's descriptions, matching/docgen.py): `parse` builds their nodes
COMBINATORS = {
    "all": "every condition holds",
    "any": "at least one holds (the one with most leaves gives the evidence)",
    "none": "no condition holds",
    "not": "the condition does not hold",
}


class Node:
    """A parsed condition. Subclasses: AllNode, AnyNode, NotNode, LeafNode; immutable once built. `_fields` are the
    constructor's arguments; `cache_data()` is the node as plain JSON data (`from_data` builds it again: the rule
    cache keeps a rule's tree so, matching/cache.py)."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def holds(self, ctx: Context, compiled: dict) -> Hit | None:
        """A Hit when the condition holds over the attempt, else None."""
        raise NotImplementedError

    def walk(self, negated: bool = False) -> Iterator[tuple[LeafNode, bool]]:
        """Every leaf, in file order, with its polarity (True under an odd number of not/none)."""
        raise NotImplementedError

    def has_evidence(self) -> bool:
        """Some leaf that reads the log's own text (`Leaf.evidence`) holds a place here, outside not/none."""
        raise NotImplementedError

    def evidence_only(self) -> Node | None:
        """The condition with the leaves that do not read the log's text (phase, flag, engine, ...) dropped; None
        when no evidence leaf is left. An exclusion (not/none) is kept whole beside the evidence of its mapping."""
        raise NotImplementedError

    def cache_data(self) -> list:
        """["all", [...]], ["any", [...]], ["not", child] or [leaf name, value, scope] (no leaf is named like a
        combinator: the registry refuses it)."""
        raise NotImplementedError

    def _kept(self) -> Node | None:  # what an enclosing mapping keeps of this node in its evidence-only view
        return self.evidence_only()

    def _split(self) -> tuple[Node, ...]:  # the parts of a top-level condition (AllNode.parts)
        return ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, f) == getattr(other, f) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(getattr(self, f)) for f in self._fields)})"


class AllNode(Node):
    """Every child holds (`all:`, a list, or the keys of one mapping); the hits merge in order."""

    __slots__ = ("children",)
    _fields = ("children",)

    def __init__(self, children: Iterable[Node] = ()):
        self.children = tuple(children)

    def holds(self, ctx, compiled):
        hit = None
        for c in self.children:
            h = c.holds(ctx, compiled)
            if h is None:
                return None
            if hit is None:
                hit = Hit()
            hit.merge(h)
        return hit if hit is not None else Hit()

    def walk(self, negated=False):
        for c in self.children:
            yield from c.walk(negated)

    def cache_data(self):
        return ["all", [c.cache_data() for c in self.children]]

    def has_evidence(self):
        return any(c.has_evidence() for c in self.children)

    def evidence_only(self):
        kept = [k for k in (c._kept() for c in self.children) if k is not None]
        return AllNode(kept) if any(k.has_evidence() for k in kept) else None

    def _split(self):
        return self.children

    def parts(self) -> list[Node]:
        """The top-level conditions of a rule's tree (its root: the keys of `match:`), each of which the classifier
        tests alone (classify/runtime.py, near misses): every child of a top-level all/any, every top-level leaf;
        exclusions (none/not) are left out."""
        return [p for c in self.children for p in c._split()]


class AnyNode(Node):
    """At least one child holds; the one with the most leaves (the first of equals) gives the hit."""

    __slots__ = ("children",)
    _fields = ("children",)

    def __init__(self, children: Iterable[Node] = ()):
        self.children = tuple(children)

    def holds(self, ctx, compiled):
        best = None
        for c in self.children:
            h = c.holds(ctx, compiled)
            if h is not None and (best is None or h.leaves > best.leaves):
                best = h
        return best

    def walk(self, negated=False):
        for c in self.children:
            yield from c.walk(negated)

    def cache_data(self):
        return ["any", [c.cache_data() for c in self.children]]

    def has_evidence(self):
        return any(c.has_evidence() for c in self.children)

    def evidence_only(self):
        kept = [k for k in (c.evidence_only() for c in self.children) if k is not None]
        return AnyNode(kept) if kept else None

    def _split(self):
        return self.children


class NotNode(Node):
    """The child does not hold (`not:`; each item of `none:` is one)."""

    __slots__ = ("child",)
    _fields = ("child",)

    def __init__(self, child: Node):
        self.child = child

    def holds(self, ctx, compiled):
        return None if self.child.holds(ctx, compiled) is not None else Hit()

    def walk(self, negated=False):
        yield from self.child.walk(not negated)

    def cache_data(self):
        return ["not", self.child.cache_data()]

    def has_evidence(self):
        return False

    def evidence_only(self):
        return None

    def _kept(self):
        return self


class LeafNode(Node):
    """One registered leaf (`LEAVES[name]`, its `spec`) with the rule's value and the `scope:` of its mapping.
    `patterns`: the regexes its value holds (compiled and linted by the loader); `searches`: those of a regex leaf,
    which the literal prefilter may skip when a word they need is not in the log (matching/prefilter.py)."""

    __slots__ = ("name", "value", "scope", "spec", "patterns", "searches")
    _fields = ("name", "value", "scope")

    def __init__(self, name: str, value: object, scope: str | None = None):
        spec = LEAVES[name]  # the loader checked the name; a cache entry naming a leaf no longer registered is rebuilt
        self.name, self.value, self.scope, self.spec = name, value, scope, spec
        get = spec.patterns
        pats: tuple[str, ...] = (
            () if get is None else (value,) if get is regexes_of and type(value) is str else get(value)
        )
        self.patterns = pats
        self.searches = pats if spec.regex else ()

    def holds(self, ctx, compiled):
        if self.searches and not can_match(self.searches, for_context(ctx)):
            return None  # a word the pattern needs is not in the log: never compiled (matching/prefilter.py)
        h = self.spec.func(self.value, ctx, compiled, self.scope)
        if h is None:
            return None
        if h.leaves < 1:
            h.leaves = 1
        return h

    def walk(self, negated=False):
        yield self, negated

    def cache_data(self):
        return [self.name, self.value, self.scope]

    def has_evidence(self):
        return self.spec.evidence

    def evidence_only(self):
        return self if self.spec.evidence else None

    def _split(self):
        return (self,)


def from_data(data: list) -> Node:
    """The node whose `cache_data()` this is."""
    tag = data[0]
    if tag == "all":
        return AllNode([from_data(c) for c in data[1]])
    if tag == "any":
        return AnyNode([from_data(c) for c in data[1]])
    if tag == "not":
        return NotNode(from_data(data[1]))
    return LeafNode(tag, data[1], data[2])


def leaves(node: Node) -> Iterator[LeafNode]:
    """Every leaf of a condition tree, in file order (negated ones included)."""
    return (lf for lf, _ in node.walk())


def evaluate(cond, ctx: Context, compiled: dict) -> Hit | None:
    """A Hit when the condition (a parsed tree, or a `match:` value, parsed here) holds, else None."""
    return (cond if isinstance(cond, Node) else parse(cond)).holds(ctx, compiled)


def parse(cond, fail: Callable[..., None] | None = None, check: Callable[[LeafNode], None] | None = None) -> AllNode:
    """A rule's `match:` value as a tree. The root is an AllNode of one node per key of the mapping (a list reads as
    `all:` of it); below it a mapping of one leaf, `all:` or `any:` is that node, any other an AllNode of its keys'.
    `none: [a, b]` is NotNode(a), NotNode(b). `scope:` goes to the leaves of its mapping.

    `fail(key, message, value=None)` (the loader's, which adds file:line) is told every problem, in file order, and parsing goes on without the bad part; without it
    the first problem raises RuleError (an empty `match` is then the condition that always holds: a rule built in
    code writes `match={}`). `check(leaf)` sees every leaf as it is built (the loader compiles its patterns)."""
    if fail is None:
        if cond == {}:
            return AllNode()
        fail = _raise
    if isinstance(cond, list):
        cond = {"all": cond}
    if not isinstance(cond, dict) or not cond:
        fail("match", f"a condition must be a mapping, got {str(cond)[:80]!r}")
        return AllNode()
    return AllNode(_keys(cond, fail, check))


def _raise(key: str, msg: str, value: object = None) -> None:
    from logdoctor.core.errors import RuleError

    raise RuleError(msg)


def _node(cond, fail, check) -> Node | None:
    if isinstance(cond, list):
        return AllNode(n for n in (_node(c, fail, check) for c in cond) if n is not None)
    if not isinstance(cond, dict) or not cond:
        fail("match", f"a condition must be a mapping, got {str(cond)[:80]!r}")
        return None
    nodes = _keys(cond, fail, check)
    if len(nodes) == 1 and not isinstance(nodes[0], NotNode):
        return nodes[0]  # an exclusion stays in a mapping of its own: evidence_only drops it unless beside evidence
    return AllNode(nodes)


def _keys(cond: dict, fail, check) -> list[Node]:
    """One node per key of a condition mapping, in order (none: one NotNode per item)."""
    scope = cond.get("scope")
    out: list[Node] = []
    for key, val in cond.items():
        if key in ("all", "any", "none"):  # COMBINATORS taking a list
            if not isinstance(val, list):
                fail(key, f"{key}: expects a list of conditions")
                continue
            kids = [n for n in (_node(c, fail, check) for c in val) if n is not None]
            if key == "none":
                out += [NotNode(k) for k in kids]
            else:
                out.append(AllNode(kids) if key == "all" else AnyNode(kids))
        elif key == "not":
            n = _node(val, fail, check)
            if n is not None:
                out.append(NotNode(n))
        elif key in LEAVES:
            lf = LeafNode(key, val, scope)
            if check is not None:
                check(lf)
            out.append(lf)
        elif key != "scope":
            fail(key, f"unknown condition {key!r} (known: {', '.join((*LEAVES, *COMBINATORS))})")
    return out


# --------------------------------------------------------------------------------------------------------------------
# the leaf registry: every leaf condition a rule may use, named once. The loader's checks, the classifier's evidence
# set, the rule schema's condition keys and docs/rules.md's leaf table all read LEAVES (`logdoctor rules docs`).


class Leaf:
    """A registered leaf: `regex` -- its value is one or more regexes searched in the log's text (compiled and
    backtracking-checked by lint, skipped by the literal prefilter when a word they need is absent); `evidence` -- it
    reads the log's own text (the classifier's near-miss test keeps only these); `line` -- its regexes meet the text
    of a log line as written (message, error, kernel, ...: the triage scanner keeps the lines they hit,
    scan/prefilter.py; frame and file match parsed traceback frames); `patterns(value)` -- the regexes a value holds
    (those of a regex leaf, or e.g. `env:`'s value patterns), which the loader compiles and lints. A plain class
    (no dataclass machinery at import); read-only by convention."""

    __slots__ = ("name", "func", "syntax", "schema", "regex", "evidence", "line", "patterns")

    def __init__(
        self,
        name: str,
        func: Callable[..., Hit | None],
        syntax: str,  # how a rule writes it, for the docs
        schema: dict,  # JSON Schema of its value
        regex: bool = False,
        evidence: bool = False,
        line: bool = False,
        patterns: Callable[[object], tuple[str, ...]] | None = None,
    ):
        self.name, self.func, self.syntax, self.schema = name, func, syntax, schema
        self.regex, self.evidence, self.line, self.patterns = regex, evidence, line, patterns

    def __repr__(self) -> str:
        return f"Leaf({self.name!r})"

    @property
    def doc(self) -> str:
        return " ".join((self.func.__doc__ or "").split())


LEAVES: dict[str, Leaf] = {}


def regexes_of(val) -> tuple[str, ...]:
    """The patterns of a regex leaf's value: one, or a list of them (the old `{regex: RX}` item form read too)."""
    return tuple(
        str(p.get("regex", "") if isinstance(p, dict) else p) for p in (val if isinstance(val, list) else [val])
    )


def leaf(
    name: str,
    *,
    syntax: str,
    schema: dict,
    regex: bool = False,
    evidence: bool = False,
    line: bool = False,
    patterns: Callable[[object], tuple[str, ...]] | None = None,
):
    """Register a leaf condition function under `name` (its docstring is the description the docs show); a regex
    leaf's patterns are its value's (`regexes_of`) unless `patterns` says otherwise."""

    def register(func):
        if name in LEAVES or name in COMBINATORS or name == "scope":
            raise ValueError(f"leaf {name!r} registered twice or shadows a combinator")
        if not func.__doc__:
            raise ValueError(f"leaf {name!r} needs a docstring: what it matches, on which fields, an example")
        pats = patterns if patterns is not None or not regex else regexes_of
        LEAVES[name] = Leaf(name, func, syntax, schema, regex, evidence, line, pats)
        return func

    return register


@leaf("message", regex=True, evidence=True, line=True, syntax="message: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_message(val, ctx, compiled, scope):
    """A service line of the attempt matches RX (`scope: before_fatal|after_fatal` narrows the lines to those at or
    before / at or after the first fatal line). Reads `Record.msg` of service records; captures named groups.
    Example: `message: "Not enough memory\\. Please try to increase --mem-fraction-static"`."""
    return _search_lines(val, [(r.line, r.msg) for r in _scoped(ctx, scope)], compiled)


@leaf("error", regex=True, evidence=True, line=True, syntax="error: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_error(val, ctx, compiled, scope):
    """A decisive error matches: every exception of a fatal traceback as `Type: message`, and the ERROR/CRITICAL (or
    bare `XError: ...`) service lines outside tracebacks (`Context.errors`).
    Example: `error: "CUDA out of memory"`."""
    return _search_lines(val, ctx.errors, compiled)


@leaf("inner", regex=True, evidence=True, line=True, syntax="inner: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_inner(val, ctx, compiled, scope):
    """The root cause matches: the first exception of a fatal chain, or X in a "...failed: X" wrapper message
    (`Context.inner`). Example: `inner: "no kernel image is available"`."""
    return _search_lines(val, ctx.inner, compiled)


@leaf("wrapper", regex=True, evidence=True, line=True, syntax="wrapper: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_wrapper(val, ctx, compiled, scope):
    """The outermost exception of a fatal traceback matches, as `Type: message` (`Context.wrapper`).
    Example: `wrapper: "^Exception: Capture cuda graph failed"`."""
    return _search_lines(val, ctx.wrapper, compiled)


@leaf("exception", regex=True, evidence=True, line=True, syntax="exception: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_exception(val, ctx, compiled, scope):
    """An exception type of a fatal traceback fully matches RX, as written or by its last dotted part
    (`Section.exc_type`). Example: `exception: OutOfMemoryError` holds for `torch.OutOfMemoryError: ...`."""
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            t = s.exc_type or ""
            for p in pats:
                rx = _rx(p, compiled)
                if t and (rx.fullmatch(t) or rx.fullmatch(t.rsplit(".", 1)[-1])):
                    return Hit([(s.exc_line or b.first_line, f"{t}: {s.exc_msg}".splitlines()[0])])
    return None


@leaf("frame", regex=True, evidence=True, syntax="frame: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_frame(val, ctx, compiled, scope):
    """A frame's function name of a fatal traceback matches RX, innermost frame first (`Frame.func`); the evidence
    is the frame's own line. Example: `frame: "^capture$"`."""
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            for f in reversed(s.frames):
                for p in pats:
                    if _rx(p, compiled).search(f.func):
                        ln = next(
                            (r.line for r in b.records if f.file in r.msg and f"line {f.line}" in r.msg), b.first_line
                        )
                        return Hit([(ln, f"{f.func} ({f.basename}:{f.line}) {f.code}".strip())])
    return None


@leaf("file", regex=True, evidence=True, syntax="file: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_file(val, ctx, compiled, scope):
    """A frame's file path of a fatal traceback matches RX (`Frame.file`).
    Example: `file: "cuda_graph_runner\\.py"`."""
    pats = val if isinstance(val, list) else [val]
    for b in ctx.fatal:
        for s in b.sections:
            for f in s.frames:
                for p in pats:
                    if _rx(p, compiled).search(f.file):
                        return Hit([(b.first_line, f"{f.basename}:{f.line} in {f.func}")])
    return None


@leaf(
    "phase",
    syntax="phase: [..]",
    schema={"oneOf": [{"$ref": "#/$defs/phase"}, {"type": "array", "items": {"$ref": "#/$defs/phase"}}]},
)
def leaf_phase(val, ctx, compiled, scope):
    """The attempt's failure phase (`Attempt.phase`) is this one or one of these.
    Example: `phase: [graph_capture, warmup]`."""
    vals = val if isinstance(val, list) else [val]
    return Hit() if ctx.attempt.phase in vals else None


def _reached(ctx) -> int:
    idx = [PHASE_INDEX[e.phase] for e in ctx.attempt.events if e.kind == "marker" and e.phase in PHASE_INDEX]
    return max(idx) if idx else -1


@leaf("phase_reached", syntax="phase_reached: P", schema={"$ref": "#/$defs/phase"})
def leaf_phase_reached(val, ctx, compiled, scope):
    """Some phase marker of phase P or later was seen in the attempt (`Event.kind == "marker"`).
    Example: `phase_reached: memory_pool`."""
    return Hit() if _reached(ctx) >= PHASE_INDEX[val] else None


@leaf("phase_not_reached", syntax="phase_not_reached: P", schema={"$ref": "#/$defs/phase"})
def leaf_phase_not_reached(val, ctx, compiled, scope):
    """No phase marker of phase P or later was seen in the attempt.
    Example: `phase_not_reached: weight_load`."""
    return Hit() if _reached(ctx) < PHASE_INDEX[val] else None


@leaf(
    "flag",
    syntax="flag: {lever: L, is/eq/ne/in/gte/lte/gt/lt: V, present: bool}",
    schema={
        "type": "object",
        "properties": {"lever": {"type": "string"}, "field": {"type": "string"}},
        "oneOf": [{"required": ["lever"]}, {"required": ["field"]}],
    },
)
def leaf_flag(val, ctx, compiled, scope):
    """The effective config of the attempt compares as asked: a lever (`Config.levers`) or, with `field:`, a raw
    config field (`Config.raw`); `present` tests only whether it is known; captures the value under the lever's name.
    Example: `flag: {lever: graphs_off, is: false}`."""
    name = val.get("lever") or val.get("field")
    cur = ctx.levers.get(name) if "lever" in val else ctx.attempt.config.raw.get(name)
    if "present" in val:
        ok = (cur is not None) == bool(val["present"])
        return Hit(captures={name: cur}) if ok else None
    if cur is None:
        return None
    for op, ref in val.items():
        holds = _FLAG_TESTS.get(op)  # lever/field/evidence and unknown keys test nothing
        if holds is None:
            continue
        try:
            if not holds(cur, ref):
                return None
        except (TypeError, ValueError):
            return None
    line = ctx.attempt.config.line
    return Hit([(line, f"{name} = {cur}")] if line and val.get("evidence") else [], captures={name: cur})


def _eq(a, b) -> bool:
    if isinstance(b, bool) or isinstance(a, bool):
        return _truthy(a) == _truthy(b)
    return str(a).lower() == str(b).lower()


def _truthy(v) -> bool:
    return v is True or str(v).lower() in ("true", "1", "yes", "disabled")


# the flag leaf's comparisons: (value in force, the rule's value) -> holds; TypeError/ValueError = does not hold
_FLAG_TESTS: dict[str, Callable[[object, object], bool]] = {
    "is": lambda cur, ref: _eq(cur, ref),
    "eq": lambda cur, ref: _eq(cur, ref),
    "ne": lambda cur, ref: not _eq(cur, ref),
    "in": lambda cur, ref: any(_eq(cur, x) for x in ref),  # type: ignore[attr-defined]
    "gte": lambda cur, ref: float(cur) >= float(ref),  # type: ignore[arg-type]
    "lte": lambda cur, ref: float(cur) <= float(ref),  # type: ignore[arg-type]
    "gt": lambda cur, ref: float(cur) > float(ref),  # type: ignore[arg-type]
    "lt": lambda cur, ref: float(cur) < float(ref),  # type: ignore[arg-type]
}


@leaf(
    "xid",
    evidence=True,
    syntax="xid: [48, 79] | hardware | app",
    schema={
        "oneOf": [{"enum": ["hardware", "app"]}, {"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]
    },
)
def leaf_xid(val, ctx, compiled, scope):
    """A kernel `NVRM: Xid` of these codes, or of this class (vocab.XID_CLASSES), in this attempt or an earlier one
    (a GPU that died before is still dead), never a later one; captures `xid` and `pci`. Example: `xid: hardware`."""
    # this attempt's kernel lines and earlier ones (a GPU that died before is still dead), never later ones
    codes = ctx.attempt.kernel + [
        e for a in ctx.timeline.attempts for e in a.kernel if a is not ctx.attempt and e.line <= ctx.attempt.end_line
    ]
    if isinstance(val, str):
        want = XID_HARDWARE if val == "hardware" else XID_APP if val == "app" else set()
    else:
        want = set(val if isinstance(val, list) else [val])
    for e in codes:
        if e.values.get("foreign") and e.values.get("xid") in XID_APP:
            continue  # an application fault of another program's pid is that program's bug
        if e.name == "xid" and e.values.get("xid") in want:
            return Hit([(e.line, e.text)], captures={"xid": e.values["xid"], "pci": e.values.get("pci")})
    return None


@leaf("kernel", regex=True, evidence=True, line=True, syntax="kernel: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_kernel(val, ctx, compiled, scope):
    """A kernel line of the attempt (kernel transport, or a raw line of dmesg shape holding `NVRM:`) matches RX.
    Example: `kernel: "GPU has fallen off the bus"`."""
    return _search_lines(val, [(r.line, r.msg) for r in ctx.kernel], compiled)


@leaf(
    "systemd",
    evidence=True,
    syntax="systemd: {result: timeout, code: killed, status: 9, timeout: true, oom: true}",
    schema={"type": "object"},
)
def leaf_systemd(val, ctx, compiled, scope):
    """systemd's verdict on the unit (`Attempt.systemd`) has these values; `timeout: true` also holds for result
    `timeout`; `oom`: "killed by the OOM killer" or result `oom-kill`. Example: `systemd: {code: killed, status: 9}`."""
    sd = ctx.attempt.systemd
    for k, want in val.items():
        have = sd.get(k)
        if k == "timeout":
            if bool(want) != ("timeout" in sd or sd.get("result") == "timeout"):
                return None
            continue
        if have is None or str(have) != str(want):
            return None
    ev = [
        (e.line, e.text) for e in ctx.attempt.events if e.kind == "systemd" and e.name in ("exit", "result", "timeout")
    ]
    return Hit(ev[:2])


@leaf(
    "exit_code",
    evidence=True,
    syntax="exit_code: -9",
    schema={"oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
)
def leaf_exit_code(val, ctx, compiled, scope):
    """A death line states one of these exit codes ("scheduler died ... exit code: -9"), or, when no death line names
    a code, systemd saw the main process killed by that signal (`status=9/KILL` is -9); captures `exit_code`.
    Example: `exit_code: [-9, 137]`."""
    want = {int(v) for v in (val if isinstance(val, list) else [val])}
    for e in ctx.attempt.events:
        code = e.values.get("exit_code") if e.kind == "death" else None
        if code is not None and int(float(code)) in want:
            return Hit([(e.line, e.text)], captures={"exit_code": int(float(code))})
    sd = ctx.attempt.systemd
    # an engine death line that names its own exit code (e.g. -6 from an abort) outranks systemd's verdict on the
    # main process: SGLang's launcher SIGKILLs its own tree after "Received sigquit", so status=9/KILL follows any
    # child failure
    if any(e.kind == "death" and e.values.get("exit_code") is not None for e in ctx.attempt.events):
        return None
    if sd.get("code") == "killed" and sd.get("status") and -int(sd["status"]) in want:
        ev = [(e.line, e.text) for e in ctx.attempt.events if e.kind == "systemd" and e.name == "exit"]
        return Hit(ev[:1], captures={"exit_code": -int(sd["status"])})
    return None


# front-end processes that only echo a worker's error (Engine.front_end_processes: vLLM's APIServer / EngineCore with
# TP>1), the launcher
_FRONT_END = rxcache.compile("^(?:" + "|".join(("main", *each("front_end_processes"), r"Engine\w*")) + ")$")


@leaf(
    "ranks_failed",
    syntax="ranks_failed: {alone: true} / {min: 2}",
    schema={"type": "object", "properties": {"alone": {"type": "boolean"}, "min": {"type": "integer"}}},
)
def leaf_ranks_failed(val, ctx, compiled, scope):
    """Over the worker ranks (front-end processes that only echo a worker's error left out): `alone` -- exactly one
    died while the others were fine (captures `failed_rank`); `min` -- at least N died. Example: `ranks_failed: {alone: true}`."""
    ranks = ctx.attempt.ranks
    real = [r for r in ranks.values() if not _FRONT_END.match(r.rank)]
    if len(real) < 2:  # a single worker (vLLM TP=1 runs the model in EngineCore): count every process
        real = [r for r in ranks.values() if r.rank != "main"]
    died = [r for r in real if r.died]
    if val.get("alone"):
        if len(died) != 1 or len(real) < 2:
            return None
        d = died[0]
        others = [r for r in real if r is not d]
        # the others were fine: none died with an error of their own
        if any(r.died for r in others):
            return None
        return Hit([(d.death_line, f"{d.rank} failed alone: {d.error}")], captures={"failed_rank": d.rank})
    if "min" in val and len(died) < int(val["min"]):
        return None
    return Hit()


@leaf(
    "attempts",
    syntax="attempts: {min, failed_min, configs_differ, phases_differ}",
    schema={
        "type": "object",
        "properties": {
            "min": {"type": "integer"},
            "failed_min": {"type": "integer"},
            "configs_differ": {"type": "boolean"},
            "phases_differ": {"type": "boolean"},
        },
    },
)
def leaf_attempts(val, ctx, compiled, scope):
    """Over the attempts in the window: at least `min` attempts / `failed_min` failed ones, failed attempts with at
    least two different known configs, or failing in at least two phases. Example: `attempts: {failed_min: 2, configs_differ: true}`."""
    atts = ctx.timeline.attempts
    failed = [a for a in atts if a.failed]
    if "min" in val and len(atts) < int(val["min"]):
        return None
    if "failed_min" in val and len(failed) < int(val["failed_min"]):
        return None
    if val.get("configs_differ"):
        from logdoctor.timeline.config import comparable_levers

        seen = comparable_levers([a.config for a in failed if a.config.known]) or []
        cfgs = {tuple(sorted((k, str(v)) for k, v in lv.items())) for lv in seen}
        if len(cfgs) < 2:
            return None
    if val.get("phases_differ"):
        if len({a.phase for a in failed}) < 2:
            return None
    return Hit()


@leaf("death", regex=True, line=True, syntax="death: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_death(val, ctx, compiled, scope):
    """An engine death event of the attempt matches RX as "name text" (names: `sigquit`, `scheduler_died`,
    `worker_died`, `engine_failed`, ...); the evidence is the death line. Example: `death: "^scheduler_died"`."""
    for e in ctx.attempt.events:
        if e.kind != "death":
            continue
        h = _search_lines(val, [(e.line, f"{e.name} {e.text}")], compiled)  # matched as "name text"
        if h is not None:
            h.evidence = [(e.line, e.text)] if e.text else []
            return h
    return None


@leaf("cut", syntax="cut: true", schema={"type": "boolean"})
def leaf_cut(val, ctx, compiled, scope):
    """The window (or a paste) ends inside the decisive traceback, before its exception line
    (`decisive.Decisive.cut`): the frames place the failure, its exception is not visible. Use a low confidence.
    Example: `cut: true`."""
    cut = decisive.of(ctx.attempt).cut is not None
    return Hit() if cut == bool(val) else None


@leaf(
    "engine",
    syntax=f"engine: {ENGINE_NAMES[0]}",
    schema={"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
)
def leaf_engine(val, ctx, compiled, scope):
    """The detected engine is this one or one of these. Example: `engine: [vllm]`."""
    vals = val if isinstance(val, list) else [val]
    return Hit() if ctx.engine in vals else None


@leaf("level", syntax="level: ERROR", schema={"type": "string"})
def leaf_level(val, ctx, compiled, scope):
    """Some service line of the attempt has this engine log level (`Record.level`). Example: `level: CRITICAL`."""
    return Hit() if any(r.level == val for r in ctx.service) else None


@leaf("hint", regex=True, evidence=True, line=True, syntax="hint: RX", schema={"$ref": "#/$defs/regexes"})
def leaf_hint(val, ctx, compiled, scope):
    """A line of the engine's own "Possible solutions:" block of a fatal traceback matches (`Section.hints`).
    Example: `hint: "--mem-fraction-static"`."""
    lines = [(b.first_line, h) for b in ctx.fatal for s in b.sections for h in s.hints]
    return _search_lines(val, lines, compiled)


def _env_patterns(val) -> tuple[str, ...]:
    return tuple(str(v) for v in val.values() if v not in (True, None)) if isinstance(val, dict) else ()


@leaf("env", syntax="env: {NAME: RX}", schema={"type": "object"}, patterns=_env_patterns)
def leaf_env(val, ctx, compiled, scope):
    """Each named environment variable shown in the log (`Config.env`) is set and, unless the value is `true`/null,
    matches RX. Example: `env: {NCCL_P2P_DISABLE: "1"}`."""
    env = ctx.attempt.config.env
    for k, want in val.items():
        if k not in env:
            return None
        if want not in (True, None) and not _rx(str(want), compiled).search(env[k]):  # a user rule's: RE2/linted
            return None
    return Hit()


_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
}


@leaf(
    "reading",
    syntax="reading: {name: static_left, lt: 0.05}",
    schema={
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "lt": {"type": "number"},
            "lte": {"type": "number"},
            "gt": {"type": "number"},
            "gte": {"type": "number"},
        },
    },
)
def leaf_reading(val, ctx, compiled, scope):
    """A timeline reading (`Attempt.readings`) compares with a number; an absent reading never holds
    (`weights_share`: weights / GPU memory before loading; `static_left`: mem fraction - weights_share, what the
    static budget leaves for the pools; `mem_fraction_auto`: the fraction the engine picks by itself, `auto_gain`:
    that minus the fraction in force, `auto_pool_gb`: what it leaves for the pools); captures the reading.
    Example: `reading: {name: static_left, lt: 0.05}`."""
    cur = ctx.attempt.readings.get(val.get("name"))
    if not isinstance(cur, (int, float)):
        return None
    for op, ref in val.items():
        if op == "name":
            continue
        cmp = _COMPARE.get(op)  # an unknown op, or a value that is not a number, never holds
        if cmp is None or isinstance(ref, bool) or not isinstance(ref, (int, float)) or not cmp(cur, ref):
            return None
    return Hit(captures={val["name"]: cur})


def _code_mentions(ctx: Context) -> list[tuple[int, str, object]]:
    """(line, text, catalogue mention) of the attempt's decisive errors, then its other service lines (a warning
    such as torch's "CUDA initialization: ... Error 802: ..." names the code too); computed once per attempt."""
    got = getattr(ctx, "_code_mentions", None)
    if got is None:
        from logdoctor.matching import catalogues  # lazy: only rules that ask for a code load a catalogue

        got, seen = [], set()
        for ln, text in list(ctx.errors) + [(r.line, r.msg) for r in ctx.service]:
            if ln in seen or not catalogues.resolve.GATE.search(text):
                continue
            seen.add(ln)
            m = catalogues.mention(text)
            if m is not None:
                got.append((ln, text, m))
        ctx._code_mentions = got  # type: ignore[attr-defined]
    return got


@leaf(
    "cuda_error",
    evidence=True,
    syntax="cuda_error: {cause: C, family: F, scope: S, code: [N], api: cuda|nccl, errors_only: true}",
    schema={
        "type": "object",
        "properties": {
            "cause": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
            "family": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
            "scope": {"type": "string"},
            "api": {"enum": ["cuda", "nccl"]},
            "errors_only": {"type": "boolean"},
            "code": {"oneOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
        },
        "additionalProperties": False,
    },
)
def leaf_cuda_error(val, ctx, compiled, scope):
    """A line of the attempt names a CUDA runtime/driver error or an NCCL result (`CUDA error: <message>`,
    `Error 802: ...`, `cudaErrorX`, `NCCL error ...: <result>`) whose catalogue entry (logdoctor/data/catalogues)
    has these values; decisive errors are read first (`errors_only: true`: only they); captures `code`, `code_name`,
    `code_message`, `code_next`.
    Example: `cuda_error: {family: host_not_ready}`."""

    def wants(key, have):
        if key not in val:
            return True
        want = val[key] if isinstance(val[key], list) else [val[key]]
        return have in want

    decisive_lines = {ln for ln, _ in ctx.errors} if val.get("errors_only") else None
    for ln, text, m in _code_mentions(ctx):
        if decisive_lines is not None and ln not in decisive_lines:
            continue
        e = m.entry
        if (
            wants("api", m.kind)
            and wants("cause", e.cause)
            and wants("family", e.family)
            and wants("scope", e.scope)
            and wants("code", e.code)
            and e.fatal
        ):
            return Hit(
                [(ln, text)],
                captures={"code": e.code, "code_name": e.name, "code_message": e.message or "", "code_next": e.next},
            )
    return None
