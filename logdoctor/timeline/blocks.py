"""Reassemble multi-line structures per writer: Python tracebacks (with chained exceptions and the SGLang
"Possible solutions:" hints that ride in the exception message) and C++/NCCL abort dumps.

Two ranks can interleave line by line. Lines that carry their own prefix (vLLM's "(Worker_TP1 pid=N)", torch's
"[rank1]:", distinct journal PIDs) go to their writer's block. Bare lines (SGLang prints a traceback as one record,
only its first line prefixed) go to the open block whose grammar expects that kind of line next — and, when two
do, to the one fed least recently, which is what a line-by-line interleave looks like.
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import SERVICE, Record
from logdoctor.core.vocab import BlockKind

_TB_START = rxcache.compile(r"Traceback \(most recent call last\):\s*$")
_FILE = rxcache.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_EXC = rxcache.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:::[\w:]+)?)(?::(?: (?P<msg>.*))?)?$")
_CHAIN = {
    "During handling of the above exception, another exception occurred:": "context",
    "The above exception was the direct cause of the following exception:": "cause",
}
_HINT_HEAD = rxcache.compile(r"^(Possible (?:solutions|suggestions)|Suggestions?|Hints?):\s*$", re.I)
_ABORT = rxcache.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = rxcache.compile(r"^\s*what\(\):\s+(?P<msg>.*)$")
_CPP_FRAME = rxcache.compile(r"^(?:frame #\d+:|Exception raised from )")
MAX_EXC_LINES = 40
# Open blocks are bounded: a block of a writer that never writes its end (a bare traceback in a raw paste stays
# open in "exc" state) would otherwise be routed past by every later line, which made traceback-dense logs
# quadratic (issue 11). Past this many, the least recently fed block is closed; real interleaves (TP/DP ranks
# printing at once) keep far fewer open at a time.
MAX_OPEN = 32
_LONE_EXC = rxcache.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Fault)(?::(?: .*)?)?$")


@dataclass(slots=True)
class Frame:
    """One traceback frame: file, line, function and the quoted source line."""

    file: str
    line: int
    func: str
    code: str = ""

    @property
    def basename(self) -> str:
        return self.file.rsplit("/", 1)[-1]


@dataclass(slots=True)
class Section:
    """One exception of a (possibly chained) traceback."""

    frames: list[Frame] = field(default_factory=list)
    exc_type: str | None = None
    exc_msg: str = ""
    exc_line: int = 0  # input line of the exception line
    link: str | None = None  # how it links to the previous section: "cause" | "context" | None
    hints: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Block:
    """A reassembled multi-line structure; `records` are its lines in input order."""

    kind: BlockKind  # "traceback" | "abort"
    records: list[Record] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    header: str = ""  # text before "Traceback" on its first line, e.g. "Scheduler hit an exception:"
    rank: str | None = None
    proc: str | None = None

    @property
    def first_line(self) -> int:
        return self.records[0].line if self.records else 0

    @property
    def last_line(self) -> int:
        return self.records[-1].last_line if self.records else 0

    @property
    def final(self) -> Section | None:
        """The exception that was raised last (the wrapper, when chained)."""
        return self.sections[-1] if self.sections else None

    @property
    def root(self) -> Section | None:
        """The first exception of the chain: usually the cause."""
        return self.sections[0] if self.sections else None

    def exc_types(self) -> list[str]:
        return [s.exc_type for s in self.sections if s.exc_type]

    def funcs(self) -> list[str]:
        return [f.func for s in self.sections for f in s.frames]

    def text(self) -> str:
        return "\n".join(r.msg for r in self.records)


class _Builder:
    __slots__ = ("block", "state", "fed", "key", "exc_lines", "link", "last", "sig")

    def __init__(self, block: Block, key, fed: int):
        self.block, self.state, self.fed, self.key, self.exc_lines, self.link = block, "frames", fed, key, 0, None
        self.last = "start"  # kind of the last line fed: start | file | code | ...
        self.sig = None  # (level, source) of the prefixed line that carried the exception

    @property
    def sec(self) -> Section:
        return self.block.sections[-1]


def assemble(records: list[Record]) -> list[Block]:
    """Find every traceback and abort dump in the records (service lines only)."""
    blocks: list[Block] = []
    open_: list[_Builder] = []
    tick = 0
    for rec in records:
        if rec.transport != SERVICE:
            continue
        tick += 1
        msg = rec.msg
        key = _key(rec)
        start = _TB_START.search(msg)
        if start:
            _start_traceback(open_, blocks, rec, key, tick, msg[: start.start()].strip())
            continue
        m_abort = _ABORT.search(msg)
        if m_abort:
            _start_abort(open_, blocks, rec, key, tick, m_abort.group("type"))
            continue
        if len(open_) > MAX_OPEN:
            _close(min(open_, key=lambda x: x.fed), open_)
        kind = _kind(msg)
        b = _route(open_, rec, key, kind) if open_ else None
        if b is None and not _has_open(open_, rec, key):
            if kind == "file":
                # an excerpt that starts inside a traceback: a headless block, fed from this frame on
                b = _open_block(
                    open_,
                    blocks,
                    Block(kind="traceback", header="", rank=rec.rank, proc=rec.proc),
                    Section(),
                    key,
                    tick,
                )
            elif kind == "text" and _LONE_EXC.match(msg):
                blocks.append(_lone_exception(rec, msg))
                continue
        if b is None:
            # a new prefixed line of a writer ends that writer's open message
            if rec.prefix_engine is not None:
                for old in [x for x in open_ if x.key == key and x.state in ("exc", "abort")]:
                    _close(old, open_)
            continue
        _feed(b, rec, msg, kind, open_)
        b.fed = tick
        b.last = kind
    for b in list(open_):
        _close(b, open_)
    return blocks


def _open_block(open_: list[_Builder], blocks: list[Block], blk: Block, sec: Section, key, tick: int) -> _Builder:
    """Register a new block (with its first section) as found and as open to the lines that follow."""
    blk.sections.append(sec)
    b = _Builder(blk, key, tick)
    open_.append(b)
    blocks.append(blk)
    return b


def _start_traceback(open_: list[_Builder], blocks: list[Block], rec: Record, key, tick: int, header: str) -> None:
    """A "Traceback (most recent call last):" line: the next section of a chained traceback of this writer, or a
    new block (which ends this writer's unfinished ones when the line carries its own prefix)."""
    # A traceback that begins while another of the same writer waits for a chained one continues it.
    b = _find(open_, key, lambda b: b.state == "chain")
    if b is None:
        for old in [
            x
            for x in open_
            if x.key == key and (rec.prefix_engine is not None or x.state == "frames") and not _bare(rec)
        ]:
            _close(old, open_)
        blk = Block(kind="traceback", header=header, rank=rec.rank, proc=rec.proc)
        b = _open_block(open_, blocks, blk, Section(), key, tick)
    else:
        b.block.sections.append(Section(link=b.link))
    b.block.records.append(rec)
    b.state, b.fed, b.last = "frames", tick, "start"


def _start_abort(open_: list[_Builder], blocks: list[Block], rec: Record, key, tick: int, exc_type: str) -> None:
    """A C++ "terminate called after throwing an instance of 'T'" line: a new abort block."""
    blk = Block(kind="abort", rank=rec.rank, proc=rec.proc)
    blk.records.append(rec)
    b = _open_block(open_, blocks, blk, Section(exc_type=exc_type, exc_line=rec.line), key, tick)
    b.state = "abort"


def _lone_exception(rec: Record, msg: str) -> Block:
    """A lone "SomeError: message" line (a pasted last line, a logged exception): a one-line block."""
    m = _EXC.match(msg.strip())
    blk = Block(kind="traceback", rank=rec.rank, proc=rec.proc)
    blk.sections.append(Section(exc_type=m.group("type"), exc_msg=(m.group("msg") or "").strip(), exc_line=rec.line))
    blk.records.append(rec)
    return blk


def _has_open(open_: list[_Builder], rec: Record, key) -> bool:
    """Does this writer have a block in progress (so an unroutable line is noise, not a new structure)?"""
    if rec.prefix_engine is not None:
        return any(b.key == key and b.state == "frames" for b in open_)
    return any(
        (b.key[0], b.key[1]) == (rec.host, rec.extra.get("tag_pid") or rec.pid) and b.state == "frames" for b in open_
    )


def _bare(rec: Record) -> bool:
    return rec.prefix_engine is None


def _key(rec: Record):
    return (rec.host, rec.extra.get("tag_pid") or rec.pid, rec.rank or rec.proc)


def _find(open_, key, pred):
    for b in reversed(open_):
        if b.key == key and pred(b):
            return b
    return None


def _expects(b: _Builder, kind: str) -> bool:
    if b.state == "frames":
        return kind in ("file", "code", "exc", "blank")
    if b.state == "exc":
        return kind in ("text", "code", "blank", "chain", "hint")
    if b.state == "chain":
        return kind in ("blank",)
    if b.state == "abort":
        return kind in ("what", "cppframe", "text")
    if b.state == "hint":
        return kind in ("text", "code", "blank")
    return False


def _kind(msg: str) -> str:
    if not msg.strip():
        return "blank"
    if _FILE.match(msg):
        return "file"
    if msg.strip() in _CHAIN:
        return "chain"
    if _WHAT.match(msg):
        return "what"
    if _CPP_FRAME.match(msg.strip()):
        return "cppframe"
    if msg[:1].isspace():
        return "code"
    return "text"


def _route(open_: list[_Builder], rec: Record, key, kind: str) -> _Builder | None:
    """The open block this line continues, or None."""
    if kind == "text":
        # a text line in frames state is the exception line
        cands = [b for b in open_ if (b.state == "frames" and b.sec.frames) or b.state in ("exc", "abort", "hint")]
    else:
        cands = [b for b in open_ if _expects(b, kind)]
    if rec.prefix_engine is not None:
        return _route_prefixed(cands, rec, key)
    # bare line: same writer first (same host/pid), then grammar + least recently fed
    host_pid = (rec.host, rec.extra.get("tag_pid") or rec.pid)
    cands = [b for b in cands if (b.key[0], b.key[1]) == host_pid]
    if not cands:
        return None
    if kind == "text":
        return _route_bare_text(cands, rec)
    # grammar strength: a block that just opened wants a File line; after a File line comes its code line
    return max(cands, key=lambda b: (_strength(b, kind), -b.fed))


def _route_prefixed(cands: list[_Builder], rec: Record, key) -> _Builder | None:
    """A line with its own prefix goes to its writer's block. vLLM repeats its prefix on every line of one record,
    so a line with another level or source is a new record, not the exception message going on."""
    same = [b for b in cands if b.key == key]
    same = [b for b in same if b.state not in ("exc", "hint") or b.sig in (None, (rec.level, rec.src))]
    return min(same, key=lambda b: b.fed) if same else None


def _route_bare_text(cands: list[_Builder], rec: Record) -> _Builder:
    """A bare text line of this writer: the exception line of a block still in its frames (least recently fed
    first, as interleaved ranks alternate), else the message of this rank's block, else of the latest one."""
    exc_wait = [b for b in cands if b.state == "frames"]
    if exc_wait:
        return min(exc_wait, key=lambda b: b.fed)
    if rec.rank is not None:
        same_rank = [b for b in cands if b.key[2] == rec.rank]
        if same_rank:
            return same_rank[-1]
    return max(cands, key=lambda b: b.fed)


def _strength(b: _Builder, kind: str) -> int:
    if b.state != "frames":
        return 1
    if kind == "file":
        return 2 if b.last in ("start", "code") else 1
    if kind == "code":
        return 2 if b.last == "file" else 1
    return 1


def _feed(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """Add a line to the block it was routed to; what it means depends on the block's state."""
    feeder = _FEEDERS.get(b.state)
    if feeder is not None:
        feeder(b, rec, msg, kind, open_)


def _feed_abort(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """An abort dump: ``what():`` gives the message; text lines (not C++ frames) continue it, within bounds."""
    blk = b.block
    blk.records.append(rec)
    w = _WHAT.match(msg)
    if w:
        blk.sections[-1].exc_msg = w.group("msg").strip()
    elif kind == "text" and not _CPP_FRAME.match(msg.strip()) and blk.sections[-1].exc_msg and len(blk.records) < 60:
        blk.sections[-1].exc_msg += "\n" + msg.strip()


def _feed_frames(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """Inside the frames: a File line opens a frame, an indented line is its source; anything else is the
    exception line that ends the section."""
    blk = b.block
    if kind == "file":
        m = _FILE.match(msg)
        b.sec.frames.append(Frame(m.group("file"), int(m.group("line")), (m.group("func") or "").strip()))
        blk.records.append(rec)
        return
    if kind == "code":
        if b.sec.frames and not b.sec.frames[-1].code and not set(msg.strip()) <= set("^~ "):
            b.sec.frames[-1].code = msg.strip()
        blk.records.append(rec)
        return
    if kind == "blank":
        blk.records.append(rec)
        return
    _exception_line(b, rec, msg)


def _exception_line(b: _Builder, rec: Record, msg: str) -> None:
    """The line after the frames: "ExcType: message", or free text where an exception was expected."""
    m = _EXC.match(msg.strip())
    if m and b.sec.frames or m and msg.strip().endswith(("Error", "Exception")):
        b.sec.exc_type = m.group("type")
        b.sec.exc_msg = (m.group("msg") or "").strip()
        b.exc_lines = 0
        b.sig = (rec.level, rec.src) if rec.prefix_engine is not None else None
    else:
        # free text where an exception was expected: "ExcType: msg" with spaces in the type, or a plain message
        b.sec.exc_type = None
        b.sec.exc_msg = msg.strip()
    b.sec.exc_line = rec.line
    b.block.records.append(rec)
    b.state = "exc"


def _feed_exc(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """After the exception line: a chain line, a hint heading, or more of the message (at most MAX_EXC_LINES lines;
    past that the block is closed and the line left out)."""
    blk = b.block
    if kind == "chain":
        blk.records.append(rec)
        b.state = "chain"
        b.link = _CHAIN[msg.strip()]
        return
    if kind == "blank":
        blk.records.append(rec)
        return
    b.exc_lines += 1
    if b.exc_lines > MAX_EXC_LINES:
        _close(b, open_)
        return
    blk.records.append(rec)
    text = msg.strip()
    if _HINT_HEAD.match(text):
        b.state = "hint"
        return
    b.sec.exc_msg = (b.sec.exc_msg + "\n" + text) if b.sec.exc_msg else text


def _feed_hint(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """SGLang's "Possible solutions:" list: each non-blank line is one hint."""
    b.block.records.append(rec)
    if kind != "blank":
        b.sec.hints.append(msg.strip())


def _feed_chain(b: _Builder, rec: Record, msg: str, kind: str, open_: list[_Builder]) -> None:
    """Between a chain line and the next "Traceback": blank lines, kept with the block."""
    b.block.records.append(rec)


_FEEDERS = {"abort": _feed_abort, "frames": _feed_frames, "exc": _feed_exc, "hint": _feed_hint, "chain": _feed_chain}


def _close(b: _Builder, open_: list[_Builder]) -> None:
    if b in open_:
        open_.remove(b)
