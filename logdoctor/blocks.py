"""Reassemble multi-line structures per writer: Python tracebacks (with chained exceptions and the SGLang
"Possible solutions:" hints that ride in the exception message) and C++/NCCL abort dumps.

Two ranks can interleave line by line. Lines that carry their own prefix (vLLM's "(Worker_TP1 pid=N)", torch's
"[rank1]:", distinct journal PIDs) go to their writer's block. Bare lines (SGLang prints a traceback as one record,
only its first line prefixed) go to the open block whose grammar expects that kind of line next — and, when two
do, to the one fed least recently, which is what a line-by-line interleave looks like.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from logdoctor.records import SERVICE, Record
from logdoctor.vocab import BlockKind

_TB_START = re.compile(r"Traceback \(most recent call last\):\s*$")
_FILE = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:::[\w:]+)?)(?::(?: (?P<msg>.*))?)?$")
_CHAIN = {
    "During handling of the above exception, another exception occurred:": "context",
    "The above exception was the direct cause of the following exception:": "cause",
}
_HINT_HEAD = re.compile(r"^(Possible (?:solutions|suggestions)|Suggestions?|Hints?):\s*$", re.I)
_ABORT = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = re.compile(r"^\s*what\(\):\s+(?P<msg>.*)$")
_CPP_FRAME = re.compile(r"^(?:frame #\d+:|Exception raised from )")
MAX_EXC_LINES = 40
# Open blocks are bounded: a block of a writer that never writes its end (a bare traceback in a raw paste stays
# open in "exc" state) would otherwise be routed past by every later line, which made traceback-dense logs
# quadratic (issue 11). Past this many, the least recently fed block is closed; real interleaves (TP/DP ranks
# printing at once) keep far fewer open at a time.
MAX_OPEN = 32
_LONE_EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Fault)(?::(?: .*)?)?$")


@dataclass(slots=True)
class Frame:
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
    exc_line: int = 0              # input line of the exception line
    link: str | None = None        # how it links to the previous section: "cause" | "context" | None
    hints: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Block:
    """A reassembled multi-line structure; `records` are its lines in input order."""

    kind: BlockKind                               # "traceback" | "abort"
    records: list[Record] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    header: str = ""                              # text before "Traceback" on its first line, e.g. "Scheduler hit an exception:"
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
        self.last = "start"   # kind of the last line fed: start | file | code | ...
        self.sig = None       # (level, source) of the prefixed line that carried the exception

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
            # A traceback that begins while another of the same writer waits for a chained one continues it.
            b = _find(open_, key, lambda b: b.state == "chain")
            if b is None:
                for old in [x for x in open_ if x.key == key and (rec.prefix_engine is not None or x.state == "frames")
                            and not _bare(rec)]:
                    _close(old, open_)
                blk = Block(kind="traceback", header=msg[:start.start()].strip(), rank=rec.rank, proc=rec.proc)
                blk.sections.append(Section())
                b = _Builder(blk, key, tick)
                open_.append(b)
                blocks.append(blk)
            else:
                b.block.sections.append(Section(link=b.link))
            b.block.records.append(rec)
            b.state, b.fed, b.last = "frames", tick, "start"
            continue
        m_abort = _ABORT.search(msg)
        if m_abort:
            blk = Block(kind="abort", rank=rec.rank, proc=rec.proc)
            blk.sections.append(Section(exc_type=m_abort.group("type"), exc_line=rec.line))
            blk.records.append(rec)
            b = _Builder(blk, key, tick)
            b.state = "abort"
            open_.append(b)
            blocks.append(blk)
            continue
        if len(open_) > MAX_OPEN:
            _close(min(open_, key=lambda x: x.fed), open_)
        b = _route(open_, rec, key, msg) if open_ else None
        if b is None and not _has_open(open_, rec, key):
            kind = _kind(msg)
            if kind == "file":
                # an excerpt that starts inside a traceback: a headless block, fed from this frame on
                blk = Block(kind="traceback", header="", rank=rec.rank, proc=rec.proc)
                blk.sections.append(Section())
                b = _Builder(blk, key, tick)
                open_.append(b)
                blocks.append(blk)
            elif kind == "text" and _LONE_EXC.match(msg):
                # a lone "SomeError: message" line (a pasted last line, a logged exception): a one-line block
                m = _EXC.match(msg.strip())
                blk = Block(kind="traceback", rank=rec.rank, proc=rec.proc)
                blk.sections.append(Section(exc_type=m.group("type"), exc_msg=(m.group("msg") or "").strip(),
                                            exc_line=rec.line))
                blk.records.append(rec)
                blocks.append(blk)
                continue
        if b is None:
            # a new prefixed line of a writer ends that writer's open message
            if rec.prefix_engine is not None:
                for old in [x for x in open_ if x.key == key and x.state in ("exc", "abort")]:
                    _close(old, open_)
            continue
        _feed(b, rec, msg, open_)
        b.fed = tick
        b.last = _kind(msg)
    for b in list(open_):
        _close(b, open_)
    return blocks


def _has_open(open_: list[_Builder], rec: Record, key) -> bool:
    """Does this writer have a block in progress (so an unroutable line is noise, not a new structure)?"""
    if rec.prefix_engine is not None:
        return any(b.key == key and b.state == "frames" for b in open_)
    return any((b.key[0], b.key[1]) == (rec.host, rec.extra.get("tag_pid") or rec.pid) and b.state == "frames"
               for b in open_)


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


def _route(open_: list[_Builder], rec: Record, key, msg: str) -> _Builder | None:
    kind = _kind(msg)
    if kind == "text":
        # a text line in frames state is the exception line
        cands = [b for b in open_ if (b.state == "frames" and b.sec.frames) or b.state in ("exc", "abort", "hint")]
    else:
        cands = [b for b in open_ if _expects(b, kind)]
    same = [b for b in cands if b.key == key]
    if rec.prefix_engine is not None:
        # vLLM repeats its prefix on every line of one record; a line with another level or source is a new record
        same = [b for b in same if b.state not in ("exc", "hint") or b.sig in (None, (rec.level, rec.src))]
        return min(same, key=lambda b: b.fed) if same else None
    # bare line: same writer first (same host/pid), then grammar + least recently fed
    host_pid = (rec.host, rec.extra.get("tag_pid") or rec.pid)
    cands = [b for b in cands if (b.key[0], b.key[1]) == host_pid]
    if not cands:
        return None
    if kind == "text":
        exc_wait = [b for b in cands if b.state == "frames"]
        if exc_wait:
            return min(exc_wait, key=lambda b: b.fed)
        if rec.rank is not None:
            same_rank = [b for b in cands if b.key[2] == rec.rank]
            if same_rank:
                return same_rank[-1]
        return max(cands, key=lambda b: b.fed)
    # grammar strength: a block that just opened wants a File line; after a File line comes its code line
    return max(cands, key=lambda b: (_strength(b, kind), -b.fed))


def _strength(b: _Builder, kind: str) -> int:
    if b.state != "frames":
        return 1
    if kind == "file":
        return 2 if b.last in ("start", "code") else 1
    if kind == "code":
        return 2 if b.last == "file" else 1
    return 1


def _feed(b: _Builder, rec: Record, msg: str, open_: list[_Builder]) -> None:
    kind = _kind(msg)
    blk = b.block
    if b.state == "abort":
        blk.records.append(rec)
        w = _WHAT.match(msg)
        if w:
            blk.sections[-1].exc_msg = w.group("msg").strip()
        elif kind == "text" and not _CPP_FRAME.match(msg.strip()) and blk.sections[-1].exc_msg and len(blk.records) < 60:
            blk.sections[-1].exc_msg += "\n" + msg.strip()
        return
    if b.state == "frames":
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
        m = _EXC.match(msg.strip())
        if m and b.sec.frames or m and msg.strip().endswith(("Error", "Exception")):
            b.sec.exc_type = m.group("type")
            b.sec.exc_msg = (m.group("msg") or "").strip()
            b.sec.exc_line = rec.line
            blk.records.append(rec)
            b.state, b.exc_lines = "exc", 0
            b.sig = (rec.level, rec.src) if rec.prefix_engine is not None else None
            return
        # free text where an exception was expected: "ExcType: msg" with spaces in the type, or a plain message
        b.sec.exc_type = None
        b.sec.exc_msg = msg.strip()
        b.sec.exc_line = rec.line
        blk.records.append(rec)
        b.state = "exc"
        return
    if b.state == "exc":
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
        return
    if b.state == "hint":
        blk.records.append(rec)
        if kind != "blank":
            b.sec.hints.append(msg.strip())
        return
    if b.state == "chain":
        blk.records.append(rec)
        return


def _close(b: _Builder, open_: list[_Builder]) -> None:
    if b in open_:
        open_.remove(b)
