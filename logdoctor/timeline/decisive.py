"""One definition of "the decisive error" of an attempt, read by the timeline (failed? which phase?), the rule
leaves and the classifier's features, so the three never disagree about what the error was.

The decisive error is: the fatal blocks (tracebacks that end in an exception, C++ aborts) of the service's own
processes, their exception chain (every section), the inner error (the first section of a chain and the X of
"... failed: X"), the outermost wrapper, the failing frames, and the rank. When the window (or a paste) ends inside
a traceback, or a chained traceback lost its last exception line, that cut traceback is decisive too: its frames place
the failure although its exception is not visible (`cut` says so, and the verdict lowers its confidence). Request-level
errors after the service came up (a client that disconnected, a 400 for a too-long prompt) are not decisive.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import SERVICE, Record
from logdoctor.core.vocab import PHASES
from logdoctor.engines import each
from logdoctor.timeline.blocks import Block, Frame
from logdoctor.timeline.hints import strip_false

FOREIGN = "foreign"
WRAPPED = rxcache.compile(  # an engine wrapper that quotes the inner error
    r"^(?:Capture cuda graph failed|Fail when using backend: \w+ for prefill runner|.*? failed): (?P<inner>.+)$", re.S
)
_NOT_FATAL = ("KeyboardInterrupt", "SystemExit", "asyncio.CancelledError", "CancelledError", "GeneratorExit")
# request-level failures in the HTTP layer: one client's request, not the engine (issue 10 item 6)
_REQUEST_EXC = rxcache.compile(
    r"(?:^|\.)(?:EndOfStream|ClientDisconnect|ClosedResourceError|BrokenResourceError|"
    r"WouldBlock|CancelledError|ConnectionResetError|BrokenPipeError|LocalProtocolError|"
    r"HTTPException|RequestValidationError|EngineGenerateError|TooLongPrompt\w*)$"
)
_REQUEST_HEAD = rxcache.compile(
    r"Exception in ASGI application|Error in ASGI|Exception in callback|Task exception was never retrieved"
)
_REQUEST_MSG = rxcache.compile(
    r"is longer than the model's context length|maximum context length is \d+ tokens|"
    r"This model's maximum context length|status_code=4\d\d|HTTP 4\d\d|Bad Request|"
    r"is too long and exceeds limit|Input prompt \(\d+ tokens\) is too long"
)
# a frame in an engine's own package (Engine.package_dirs)
ENGINE_FILE = rxcache.compile("/(?:" + "|".join(map(re.escape, each("package_dirs"))) + ")/")
_SERVER_FRAMES = rxcache.compile(r"/(?:starlette|uvicorn|fastapi|anyio|h11|httptools|sse_starlette|aiohttp)/")


# a C/C++ CUDA check macro's message before it aborts (vLLM csrc, custom all-reduce, flashinfer): no Python exception
_CHECK_FAILED = rxcache.compile(r"^(?:Failed: )?Cuda (?:error|failure) \S+:\d+ '[^']+'|^CUDA error at \S+:\d+")


@dataclass
class Decisive:
    """The blocks an attempt's verdict rests on: fatal ones, a cut traceback, per-request errors."""

    fatal: list[Block] = field(default_factory=list)  # complete fatal blocks, input order
    cut: Block | None = None  # a traceback cut before its exception line
    cut_reason: str | None = None  # "inside a traceback" | "traceback without its exception line"
    request_errors: list[Block] = field(default_factory=list)  # per-request errors after ready (not fatal)
    errors: list[tuple[int, str]] = field(default_factory=list)  # every section "Type: msg" + ERROR lines
    inner: list[tuple[int, str]] = field(default_factory=list)  # root causes
    wrapper: list[tuple[int, str]] = field(default_factory=list)  # outermost exception of each fatal block
    error_lines: list[int] = field(default_factory=list)  # ERROR/CRITICAL and bare fatal CUDA/NCCL lines outside
    #                                                        tracebacks that can end an attempt (recoverable ones out)
    recoverable: list[int] = field(default_factory=list)  # error lines set aside: the service went on past them
    rank: str | None = None  # the failing rank: of the earliest decisive traceback that is not a front-end echo
    #                           (set by timeline._decide, which also drops tracebacks the service served past)

    @property
    def blocks(self) -> list[Block]:
        """The fatal blocks plus the cut one: what places the failure."""
        return self.fatal + ([self.cut] if self.cut is not None and self.cut not in self.fatal else [])

    def frames(self) -> list[Frame]:
        """Failing frames, innermost first, of the first decisive block."""
        bl = sorted(self.blocks, key=lambda b: b.first_line)
        return [f for s in reversed(bl[0].sections) for f in reversed(s.frames)] if bl else []

    def engine_frame(self) -> Frame | None:
        """The innermost frame in the engine's own code (not torch, not the standard library)."""
        fr = self.frames()
        return next((f for f in fr if ENGINE_FILE.search(f.file)), fr[0] if fr else None)


# fatal precursors: lines an engine prints just before it raises, so a window cut right after them is still a death
#   SGLang  "max_total_tokens=N is larger than the profiled value -M" (a negative pool size)
#   vLLM    "Available KV cache memory: -X GiB" (nothing left for the cache), "No available memory for the cache blocks";
#           older builds "the rest of the memory reserved for KV Cache is -X GiB" and "# cuda blocks: 0"
PRECURSORS = rxcache.compile(
    r"is larger than the profiled value (?P<profiled_kv_tokens>-\d+)|"
    r"Available KV cache memory: (?P<negative_kv_gib>-[\d.]+) GiB|"
    r"reserved for KV Cache is (?P<negative_kv_gib2>-[\d.]+) ?GiB|# (?:cuda|GPU) blocks: 0\b|"
    r"No available memory for the cache blocks|"
    r"Not enough memory\. Please try to increase --mem-fraction-static"
)


def precursors(records: list[Record]) -> list[tuple[int, str, dict]]:
    """(line, text, captures) of the fatal precursor lines among the service's own records."""
    out = []
    for r in records:
        if (
            r.transport != SERVICE
            or r.extra.get(FOREIGN)
            or not ("memory" in r.msg or "profiled" in r.msg or "blocks" in r.msg or "KV Cache" in r.msg)
        ):
            continue
        m = PRECURSORS.search(r.msg)
        if m:
            out.append((r.line, r.msg, {k: float(v) for k, v in m.groupdict().items() if v}))
    return out


def is_fatal_block(b: Block) -> bool:
    """A traceback that ends in an exception (warnings and handled retries print none)."""
    if b.kind == "abort":
        return True
    fin = b.final
    if fin is None or not (fin.exc_type or fin.exc_msg):
        return False
    t = fin.exc_type or ""
    return not t.endswith(("Warning",)) and t not in _NOT_FATAL


def is_request_error(b: Block) -> bool:
    """One request failed in the HTTP layer (a client disconnect, a prompt over the context length): the engine
    keeps serving."""
    types = [s.exc_type or "" for s in b.sections]
    msgs = " ".join(s.exc_msg or "" for s in b.sections)
    files = [f.file for s in b.sections for f in s.frames]
    if _REQUEST_HEAD.search(b.header) or (
        files and all(_SERVER_FRAMES.search(f) or "/entrypoints/" in f or "/openai/" in f for f in files[-3:])
    ):
        if any(_REQUEST_EXC.search(t) for t in types if t) or _REQUEST_MSG.search(msgs):
            return True
        if _REQUEST_HEAD.search(b.header) and files and _SERVER_FRAMES.search(files[-1]):
            return True
    return bool(_REQUEST_MSG.search(msgs)) and all(
        not t or _REQUEST_EXC.search(t) or t.endswith(("ValueError", "BadRequestError")) for t in types
    )


def _cut_block(blocks: list[Block], records: list[Record], marker_lines: list[int]) -> tuple[Block | None, str | None]:
    """The traceback the window or a paste cut before its (last) exception line: its last section has frames but
    no exception, and nothing of the service but a few lines (death notes, shutdown) follows it."""
    own = [r for r in records if r.transport == SERVICE and not r.extra.get(FOREIGN) and r.msg.strip()]
    in_blocks = {r.line for b in blocks for r in b.records}
    for b in sorted(blocks, key=lambda b: -b.last_line):
        fin = b.final
        if b.kind != "traceback" or fin is None or not fin.frames or fin.exc_type or fin.exc_msg:
            continue
        if any(l > b.last_line for l in marker_lines):
            continue  # the service went on to a later phase: a warning's stack, not its death
        after = [r for r in own if r.line > b.last_line and r.line not in in_blocks]
        if len(after) > 6:
            continue
        reason = "inside a traceback" if not after else "traceback without its exception line"
        return b, reason
    return None, None


def compute(a, ready_line: int = 0) -> Decisive:
    """The decisive error of attempt `a` (blocks are the service's own; see timeline._attempt)."""
    d = Decisive()
    markers = [e.line for e in a.events if e.kind == "marker"]
    for b in a.blocks:
        if not is_fatal_block(b):
            continue
        if ready_line and b.first_line > ready_line and is_request_error(b):
            d.request_errors.append(b)
            continue
        d.fatal.append(b)
    d.cut, d.cut_reason = _cut_block(a.blocks, a.records, markers)
    if d.cut is not None and ready_line and d.cut.first_line > ready_line and is_request_error(d.cut):
        d.cut, d.cut_reason = None, None
    for b in d.blocks:
        _read_block(d, b)
    _read_error_lines(d, a, ready_line)
    return d


def error_before_cut(d: Decisive, a) -> int | None:
    """The line of an error the service reported before the traceback the window cut, with no phase marker between
    the two: a traceback ending in its exception, an exception line or a CUDA/NCCL error line of its own, a fatal
    precursor. The cut traceback is then a second report of the same death (a parent process re-raising what its
    child printed whole): the final error IS in the window. None when there is no such line (or no cut)."""
    if d.cut is None:
        return None
    start = d.cut.first_line
    since = max((e.line for e in a.events if e.kind == "marker" and e.line < start), default=0)
    lines = [b.last_line for b in d.fatal if b is not d.cut]
    lines += [n for n, t in d.errors if _EXC_LINE.match(t) or is_bare_fatal(t)]
    lines += [n for n, _, _ in precursors(a.records)]
    return max((n for n in lines if since < n < start), default=None)


def _read_block(d: Decisive, b) -> None:
    """A decisive block's errors, its root (inner) and final (wrapper) exception, and errors wrapped in messages."""
    done = [s for s in b.sections if s.exc_type or s.exc_msg]
    for s in done:
        d.errors.append((s.exc_line or b.first_line, section_text(s)))
    if not done:
        return
    root, fin = done[0], done[-1]
    d.inner.append((root.exc_line or b.first_line, section_text(root)))
    d.wrapper.append((fin.exc_line or b.first_line, section_text(fin)))
    for s in done:
        w = WRAPPED.match(s.exc_msg or "")
        if w:
            d.inner.append((s.exc_line or b.first_line, w.group("inner")))


def _read_error_lines(d: Decisive, a, ready_line: int) -> None:
    """Error lines outside tracebacks: recoverable ones set aside, the rest errors (leveled and bare fatal ones also
    `error_lines`, which can fail an attempt)."""
    req = {r.line for b in d.request_errors for r in b.records}
    in_blocks = {r.line for b in a.blocks for r in b.records}
    follow: Followed | None = None
    for r in a.records:
        if r.transport != SERVICE or r.extra.get(FOREIGN) or r.line in in_blocks or r.line in req:
            continue
        leveled = r.level in ("ERROR", "CRITICAL") and bool(r.msg.strip())
        bare = not leveled and is_bare_fatal(r.msg)
        if not (leveled or bare or _EXC_LINE.match(r.msg) or _CHECK_FAILED.match(r.msg) or PARSER_ERROR.match(r.msg)):
            continue
        if follow is None:
            follow = Followed.of(a, d, ready_line)
        if is_recoverable(r, follow):
            d.recoverable.append(r.line)
            continue
        d.errors.append((r.line, strip_false(r.msg)))
        if leveled or bare:
            d.error_lines.append(r.line)


_EXC_LINE = rxcache.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): ")
# argparse's two shapes (one place: the prose check, the decisive errors and the launch-seen test read them):
# its usage block, printed as it parses the command line, and its last words before exit 2
PARSER_USAGE = rxcache.compile(r"^usage: [\w.\-]+ ")
PARSER_ERROR = rxcache.compile(r"^[\w.\-]+: error: ")
# a line that is itself a CUDA / NCCL error report (not a warning that mentions one): the catalogue decides if fatal
_BARE = rxcache.compile(
    r"^(?:[A-Za-z_][\w.]*(?:Error|Exception): )?(?:CUDA (?:driver )?error: |NCCL error\b|"
    r"Cuda (?:error|failure) |CUDA error at )"
)


def is_bare_fatal(msg: str) -> bool:
    """A line that reports a CUDA or NCCL error the catalogues call fatal ("CUDA error: an illegal memory access was
    encountered"), with no traceback around it: a failure of its own (issue 19). The catalogue is read only for
    lines that start like an error report."""
    if not _BARE.match(msg):
        return False
    from logdoctor.matching import catalogues  # lazy: most logs never get here

    m = catalogues.mention(msg)
    return m is not None and m.entry.fatal


# --------------------------------------------------------------------------------------------------------------------
# recoverable is not decisive (issue 19 part 4): a line the engine logs and then continues past cannot be the decisive
# error nor make an attempt failed by itself. The hooks below decide it from what followed the line; the atlas (or
# any later source of "this message sits on a recoverable path") appends its own hook to RECOVERABLE_HOOKS.


@dataclass(frozen=True)
class Followed:
    """What the attempt did after each line, indexed once per attempt: per rank, its phase markers' lines with the
    running maximum of the phase index before and after each (`own`: only markers that are log records of their
    own, carrying the engine's level or timestamp), and the last line where a fatal block starts."""

    ranks: dict[str, tuple[list[int], list[int], list[int]]]  # rank -> (lines, prefix max, suffix max)
    own_ranks: dict[str, tuple[list[int], list[int], list[int]]]
    last_fatal: int
    ready_line: int

    @staticmethod
    def _index(marks: list[tuple[int, int]]) -> tuple[list[int], list[int], list[int]]:
        marks.sort()
        lines = [ln for ln, _ in marks]
        pre, suf, best = [], [-1] * len(marks), -1
        for _, p in marks:
            best = max(best, p)
            pre.append(best)
        best = -1
        for i in range(len(marks) - 1, -1, -1):
            best = max(best, marks[i][1])
            suf[i] = best
        return lines, pre, suf

    @classmethod
    def of(cls, a, d: Decisive, ready_line: int = 0) -> Followed:
        order = {p: i for i, p in enumerate(PHASES)}
        own = {r.line: bool(r.level or r.engine_ts) for r in a.records}
        by: dict[str, list[tuple[int, int]]] = {"*": []}
        by_own: dict[str, list[tuple[int, int]]] = {"*": []}
        for e in a.events:
            if e.kind != "marker" or not e.phase:
                continue
            m = (e.line, order.get(e.phase, -1))
            for key in (e.rank or "main", "*"):
                by.setdefault(key, []).append(m)
                if own.get(e.line, False):
                    by_own.setdefault(key, []).append(m)
        return cls(
            {k: cls._index(v) for k, v in by.items()},
            {k: cls._index(v) for k, v in by_own.items()},
            max((b.first_line for b in d.blocks), default=0),
            ready_line,
        )

    def phase_at(self, line: int, rank: str) -> int:
        """The furthest phase index this rank (or the rank-less main process) had reached at `line`."""
        best = -1
        for key in {rank, "main"}:
            lines, pre, _ = self.ranks.get(key, ([], [], []))
            i = bisect_right(lines, line)
            if i:
                best = max(best, pre[i - 1])
        return best

    def went_on(self, r: Record) -> bool:
        """The process that logged `r` reached a later phase after it: a later phase marker of the same rank (any,
        for a rank-less line) that is a new log record where `r` is one (an error's own continuation lines can
        read like markers: "could not be created: KV cache")."""
        rank = r.rank or "main"
        table = self.own_ranks if (r.level or r.engine_ts) else self.ranks
        lines, _, suf = table.get("*" if rank == "main" else rank, ([], [], []))
        i = bisect_right(lines, r.line)
        return i < len(lines) and suf[i] > self.phase_at(r.line, rank)

    def fatal_after(self, line: int) -> bool:
        return self.last_fatal > line


RecoverableHook = Callable[[Record, Followed], bool]
# a line that announces its own retry or fallback ("retrying 1 of 2", "will retry", "falling back to")
_RETRY = rxcache.compile(
    r"\bretry(?:ing)?\b|\bwill retry\b|\btrying again\b|\bre-?trying\b|\battempt \d+ ?(?:of|/) ?\d+|"
    r"\bfall(?:ing)? ?back\b",
    re.I,
)


def _advice(r: Record, f: Followed) -> bool:
    """Advice the runtime prints after an error (set CUDA_LAUNCH_BLOCKING=1, compile with TORCH_USE_CUDA_DSA, an
    engine's "If exit code is ..." hint on a line of its own): never the error itself."""
    msg = r.msg.strip()
    if msg.startswith("If ") and "exit code" in msg:
        return True
    if "CUDA" not in msg:
        return False
    from logdoctor.matching import catalogues

    return catalogues.is_advice(msg)


def _went_on(r: Record, f: Followed) -> bool:
    """The process that logged the line went on to a later start-up phase: it survived the error."""
    return f.went_on(r)


def _retried(r: Record, f: Followed) -> bool:
    """The line announces a retry or fallback and something decisive followed it (the real error, or progress):
    the attempt's fate was decided later, not here."""
    return bool(_RETRY.search(r.msg)) and (f.fatal_after(r.line) or f.went_on(r))


RECOVERABLE_HOOKS: list[RecoverableHook] = [_advice, _went_on, _retried]


def is_recoverable(r: Record, follow: Followed) -> bool:
    """A service error line the engine logged and then continued past (any hook says so)."""
    return any(h(r, follow) for h in RECOVERABLE_HOOKS)


def section_text(s) -> str:
    """ "Type: message" of a section, without engine hints whose stated condition the message refutes."""
    return strip_false(f"{s.exc_type}: {s.exc_msg}" if s.exc_type else s.exc_msg)


def of(a) -> Decisive:
    """The attempt's decisive error, computed once (timeline._decide stores it)."""
    d = getattr(a, "decisive", None)
    if d is None:
        d = compute(a)
        try:
            a.decisive = d
        except AttributeError:
            pass
    return d
