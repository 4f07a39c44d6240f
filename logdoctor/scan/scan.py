"""Stream a decompressed log through the prefilter and cut it into attempt segments, with bounded memory.

Per buffer (4 MiB) the one compiled prefilter (prefilter.py) finds the few lines that can matter; only those are
looked at in Python. A segment (one attempt, roughly: the cut mirrors timeline._split_attempts at the level of
config dumps and boots; the full parse refines it) keeps
  - its raw bytes while it is small (≤ SMALL_SEGMENT), else its head, its prefilter hits and a raw tail;
  - whether a failure signal appeared in it.
A segment with a signal is parsed in full (`Segment.lines(full=True)`); a healthy one only through its head, its
hits and its tail, which is enough for the engine, version, phase reached and the ready line. Memory per open
segment is bounded by SMALL_SEGMENT + HEAD + TAIL + MAX_HITS lines, whatever the input's size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from logdoctor.core.lean import dataclass, field
from logdoctor.scan.boundary import BoundaryCheck
from logdoctor.scan.prefilter import Prefilter
from logdoctor.timeline.attempts import BOOT

CHUNK = 4 << 20
SMALL_SEGMENT = 2 << 20  # kept raw up to this size; a failing attempt this small is parsed line for line
HEAD = 32 << 10  # of a larger segment: its start (launch, config dump) ...
TAIL = 128 << 10  # ... and its end (the crash with its traceback, the last serving lines)
HEALTHY_CONTEXT = 2 << 10  # a healthy attempt's reduced parse: this much of its head and tail, plus the hits
MAX_HITS = 20000  # prefilter hits kept per segment (first half + last half when more)
MAX_LINE = 1 << 20  # a longer "line" is not a log line: it is cut
_BOOT = BOOT.encode()  # journalctl's boot line: a new attempt (attempts.split cuts on the same)


@dataclass
class Segment:
    """One attempt's part of the input as the scan kept it: raw pieces, head and tail, prefilter hits, flags."""

    first_line: int  # 1-based input line number of its first line
    raw: list[tuple[int, bytes]] = field(default_factory=list)  # (first line number, bytes ending in \n)
    raw_bytes: int = 0
    overflow: bool = False
    head: list[tuple[int, bytes]] = field(default_factory=list)
    tail: deque = field(default_factory=deque)  # (first line number, bytes)
    tail_bytes: int = 0
    hits: list[tuple[int, bytes]] = field(default_factory=list)
    hits_tail: deque = field(default_factory=lambda: deque(maxlen=MAX_HITS // 2))
    signal: bool = False
    seen_config: bool = False
    seen_progress: bool = False
    end_line: int = 0  # input line number after the last raw piece
    nbytes: int = 0
    nlines: int = 0

    def add_raw(self, lineno: int, data: bytes, nlines: int | None = None) -> None:
        """Append a piece of whole lines starting at input line `lineno` (`nlines`: its newline count, if known)."""
        self.nbytes += len(data)
        self.end_line = lineno + (data.count(b"\n") if nlines is None else nlines)
        if not self.overflow:
            self.raw.append((lineno, data))
            self.raw_bytes += len(data)
            if self.raw_bytes > SMALL_SEGMENT:
                self._spill()
            return
        self.tail.append((lineno, data))
        self.tail_bytes += len(data)
        self._trim_tail()

    def _trim_tail(self) -> None:
        """Keep about TAIL bytes: drop whole old pieces, then cut the oldest one at a line boundary."""
        while self.tail_bytes - len(self.tail[0][1]) > TAIL and len(self.tail) > 1:
            self.tail_bytes -= len(self.tail.popleft()[1])
        if self.tail_bytes > TAIL + (64 << 10):
            ln, data = self.tail[0]
            excess = self.tail_bytes - TAIL
            cut = data.find(b"\n", max(0, min(excess, len(data)) - 1)) + 1
            if 0 < cut < len(data):
                # pieces are contiguous and end on a newline: count the kept part back from the piece's end line,
                # not the dropped megabytes
                end = self.tail[1][0] if len(self.tail) > 1 else self.end_line
                self.tail[0] = (end - data.count(b"\n", cut), data[cut:])
                self.tail_bytes -= cut

    def _spill(self) -> None:
        """Too big to keep raw: keep the head and a tail from now on (hits are recorded anyway)."""
        self.overflow = True
        head_left = HEAD
        for ln, data in self.raw:
            if head_left <= 0:
                break
            piece = _cut_lines(data, head_left)
            self.head.append((ln, piece))
            head_left -= len(piece)
        for ln, data in self.raw:
            self.tail.append((ln, data))
            self.tail_bytes += len(data)
        self.raw, self.raw_bytes = [], 0
        self._trim_tail()

    def add_hit(self, lineno: int, line: bytes) -> None:
        if len(self.hits) < MAX_HITS // 2:
            self.hits.append((lineno, line))
        else:
            self.hits_tail.append((lineno, line))

    def lines(self, full: bool) -> list[tuple[int, bytes]]:
        """(input line number, line) in input order: every line of a small segment when `full`, else head + hits
        + tail (deduplicated by line number)."""
        if full and not self.overflow:
            return [x for ln, data in self.raw for x in _split(ln, data)]
        if not self.overflow:
            pieces = _edges(self.raw, HEALTHY_CONTEXT)
        else:
            head = self.head if full else _edges(self.head, HEALTHY_CONTEXT)[0]
            tail = list(self.tail)
            if not full:
                tail = _edges(tail, HEALTHY_CONTEXT)[1]
            pieces = (head, tail)
        out: dict[int, bytes] = {}
        for part in pieces:
            for ln, data in part:
                for n, line in _split(ln, data):
                    out[n] = line
        hits = list(self.hits) + list(self.hits_tail)
        for n, line in hits if full else _thin_bars(hits):
            out[n] = line
        return sorted(out.items())


def _thin_bars(hits: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """A healthy attempt's reduced parse needs a progress bar (tqdm's "NN%|███") once, not once per update: of a run
    of consecutive bar hits with the same text up to the bar (digits aside), keep the first and the last."""
    out: list[tuple[int, bytes]] = []
    run_key, run_last = None, None
    for hit in hits:
        line = hit[1]
        bar = line.find(b"%|")
        key = line[:bar].translate(None, b"0123456789").rstrip() if bar > 0 else None
        if key is not None and key == run_key:
            run_last = hit
            continue
        if run_last is not None:
            out.append(run_last)
        out.append(hit)
        run_key, run_last = key, None
    if run_last is not None:
        out.append(run_last)
    return out


def _cut_lines(data: bytes, limit: int) -> bytes:
    if len(data) <= limit:
        return data
    cut = data.rfind(b"\n", 0, limit) + 1
    return data[:cut] if cut else b""


def _edges(parts: list[tuple[int, bytes]], size: int) -> tuple[list, list]:
    """The first and the last `size` bytes of a list of raw pieces, on line boundaries."""
    head, left = [], size
    for ln, data in parts:
        if left <= 0:
            break
        piece = _cut_lines(data, left)
        if piece:
            head.append((ln, piece))
        left -= len(data)
    tail, left = [], size
    for ln, data in reversed(parts):
        if left <= 0:
            break
        if len(data) <= left:
            tail.append((ln, data))
        else:
            start = data.find(b"\n", len(data) - left) + 1
            if 0 < start < len(data):
                tail.append((ln + data.count(b"\n", 0, start), data[start:]))
        left -= len(data)
    return head, tail[::-1]


def _split(first: int, data: bytes) -> Iterator[tuple[int, bytes]]:
    for i, line in enumerate(data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n")):
        yield first + i, line


@dataclass
class ScanStats:
    """What the scan read: bytes, lines, prefilter hits, over-long lines cut."""

    bytes: int = 0
    lines: int = 0
    hits: int = 0
    long_lines: int = 0


def _chunks(stream, carry: bytes, stats: ScanStats) -> Iterator[bytes]:
    """Buffers of whole lines (the last one completed at EOF); a line longer than MAX_LINE is cut and counted.
    The last line of a read is finished with one `readline` rather than carried over: one copy of the buffer
    instead of two (a concatenation and a slice)."""
    while True:
        data = stream.read(CHUNK)
        if not data:
            break
        if carry:
            data, carry = carry + data, b""
        if data[-1:] != b"\n":
            data += stream.readline(MAX_LINE)
        if data[-1:] != b"\n":  # a line longer than MAX_LINE, or the input's end
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if len(data) > MAX_LINE:
                    stats.long_lines += 1
                    yield data[:MAX_LINE] + b"\n"
                else:
                    carry = data
                continue
            carry, data = data[cut:], data[:cut]
        yield data
    if carry:
        yield carry + b"\n"


class _Newlines:
    """A buffer's newlines, through numpy (in the triage extra): their offsets only once a line number is asked for
    (every later one is then a bisection, not another count pass), else just their number (several times faster
    than bytes.count; most buffers of a serving log hold no prefilter hit at all)."""

    def __init__(self, buf: bytes):
        import numpy as np

        self._bytes = np.frombuffer(buf, np.uint8)
        self._pos: Any = None

    def before(self, offset: int) -> int:
        """How many lines of the buffer start before `offset` (a line start)."""
        if self._pos is None:
            import numpy as np

            self._pos = np.flatnonzero(self._bytes == 10)
        return int(self._pos.searchsorted(offset))

    def total(self) -> int:
        if self._pos is not None:
            return len(self._pos)
        import numpy as np

        return int(np.count_nonzero(self._bytes == 10))


def _matches(buf: bytes, pf: Prefilter) -> Iterator:
    """The prefilter's matches in a buffer, at most one per line, in order: RE2 over the whole buffer, or (with
    Hyperscan) RE2 over just the lines where one of Hyperscan's patterns ends."""
    rx, n, pos = pf.regex, len(buf), 0
    if pf.lines is None:
        while pos < n:
            m = rx.search(buf, pos)
            if m is None:
                return
            yield m
            pos = buf.find(b"\n", m.end()) + 1
            if pos == 0:
                return
        return
    for end in pf.lines.ends(buf):
        if end <= pos:
            continue
        ls = buf.rfind(b"\n", 0, end - 1) + 1
        le = buf.find(b"\n", end - 1)
        le = n if le < 0 else le
        m = rx.search(buf, max(ls, pos), le)
        if m is None:  # Hyperscan's widened pattern only
            pos = le + 1
            continue
        yield m
        pos = buf.find(b"\n", m.end()) + 1
        if pos == 0:
            return


def scan(stream, pf: Prefilter, *, first: bytes = b"", stats: ScanStats | None = None) -> Iterator[Segment]:
    """Yield the attempt segments of a binary stream (already decompressed), in order. `first` is data already
    read from the stream (the sniffed head)."""
    sc = _Scanner(pf, stats if stats is not None else ScanStats())
    for buf in _chunks(stream, first, sc.stats):
        yield from sc.buffer(buf)
    yield from sc.finish()


class _Scanner:
    """The scan's state across buffers (the open segment, the input line number) and within one buffer (how much
    of it is given to a segment, a systemd start line that may open the next attempt)."""

    def __init__(self, pf: Prefilter, stats: ScanStats):
        self.pf, self.stats = pf, stats
        self.seg = Segment(first_line=1)
        self.lineno = 1  # line number of the first line of the current buffer
        self.check: BoundaryCheck | None = None  # from the log's first buffer: the prefixes the reader will see
        self.buf = b""
        self.done = 0  # bytes of buf already given to a segment
        self.nls: _Newlines | None = None
        self.pending_start: tuple[int, int] | None = None  # (offset, lineno) of a systemd Start line since the
        # last config dump

    def buffer(self, buf: bytes) -> Iterator[Segment]:
        """The segments one buffer of whole lines closes; the rest of it joins the open segment."""
        if self.check is None:
            self.check = BoundaryCheck(buf[:65536])
        self.stats.bytes += len(buf)
        self.buf, self.done, self.nls, self.pending_start = buf, 0, _Newlines(buf), None
        for m in _matches(buf, self.pf):
            closed = self._hit(m)
            if closed is not None:
                yield closed
        nls, done = self.nls, self.done
        if done < len(buf):
            first_ln = nls.before(done) if done else 0
            self.seg.add_raw(self.lineno + first_ln, buf[done:], nls.total() - first_ln)
        nl = nls.total()
        self.lineno += nl
        self.stats.lines += nl

    def finish(self) -> Iterator[Segment]:
        seg = self.seg
        seg.nlines = self.lineno - seg.first_line
        if seg.nbytes or seg.first_line == 1:
            yield seg

    def _kind(self, m, line: bytes) -> str:
        """b (a real attempt boundary), s (a failure signal), r (relevant) or x (server_args= inside a message)."""
        kind = m.lastgroup
        if kind.__class__ is bytes:  # google-re2 names groups in bytes for a bytes pattern
            kind = kind.decode()
        if kind == "r" and self.pf.boundary.search(line) is not None:
            kind = "b"  # a marker or rule matched earlier on the line than the config dump did
        if kind == "b" and not line.startswith(_BOOT) and not self.check.is_config(line):  # type: ignore[union-attr]
            kind = "x"  # server_args= inside a message (a traceback's call), not a config dump
        return kind

    def _hit(self, m) -> Segment | None:
        """One prefilter match: maybe a new attempt (the segment it closes is returned), then a kept hit."""
        buf = self.buf
        ls = buf.rfind(b"\n", 0, m.start()) + 1
        le = buf.find(b"\n", m.end())
        counted_ln = self.lineno + self.nls.before(ls)  # type: ignore[union-attr]
        line = buf[ls:le]
        kind = self._kind(m, line)
        self.stats.hits += 1
        closed = None
        seg = self.seg
        if kind == "b":
            closed = self._boundary(line, ls, counted_ln)
            seg = self.seg
        elif kind == "s":
            seg.signal = True
            seg.seen_progress = seg.seen_progress or seg.seen_config
        elif kind == "r":
            seg.seen_progress = seg.seen_progress or seg.seen_config
            if b"systemd[1]: Start" in line and self.pending_start is None:
                self.pending_start = (ls, counted_ln)  # "Starting X..." then "Started X" is one start: the first
        seg.add_hit(counted_ln, line)
        # a failure word on a line that matched as a marker or rule first still counts
        if kind != "s" and not seg.signal and self.pf.signal.search(line) is not None:
            seg.signal = True
        return closed

    def _boundary(self, line: bytes, ls: int, counted_ln: int) -> Segment | None:
        """A config dump or a boot line: it opens a new attempt once the current one got going (attempts._Cutter);
        the cut is at the systemd start line before the dump, when there was one."""
        seg = self.seg
        is_boot = line.startswith(_BOOT)
        closed = None
        if (is_boot and seg.nbytes + (ls - self.done) > 0 and seg.seen_config) or (
            not is_boot and seg.seen_config and seg.seen_progress
        ):
            cut, cut_ln = self.pending_start if self.pending_start and not is_boot else (ls, counted_ln)
            closed = self._cut(cut, cut_ln)
        if not is_boot:
            self.seg.seen_config = True
            self.pending_start = None
        return closed

    def _cut(self, cut: int, cut_ln: int) -> Segment:
        """Close the open segment before buffer offset `cut` (input line `cut_ln`) and open the next one there."""
        seg, nls = self.seg, self.nls
        assert nls is not None
        if cut > self.done:
            before = nls.before(self.done)
            seg.add_raw(self.lineno + before, self.buf[self.done : cut], cut_ln - self.lineno - before)
        self.done = cut
        seg.nlines = cut_ln - seg.first_line
        moved = [h for h in seg.hits if h[0] >= cut_ln] + [h for h in seg.hits_tail if h[0] >= cut_ln]
        if moved:  # the hits between the start line and the config dump belong to the new attempt
            seg.hits = [h for h in seg.hits if h[0] < cut_ln]
            seg.hits_tail = deque((h for h in seg.hits_tail if h[0] < cut_ln), maxlen=MAX_HITS // 2)
        self.seg = Segment(first_line=cut_ln)
        for h in moved:
            self.seg.add_hit(*h)
        return seg


@dataclass
class Policy:
    """What the input policy repaired in a streamed log (the counts explain reports in window.damage)."""

    encoding: str = "utf-8"
    nul_bytes: int = 0
    cr_lines: int = 0

    @property
    def notes(self) -> list[str]:
        out = []
        if self.encoding != "utf-8":
            out.append(f"decoded as {self.encoding.upper()} text")
        if self.nul_bytes:
            out.append(f"{self.nul_bytes} NUL byte{'s' if self.nul_bytes > 1 else ''} replaced")
        if self.cr_lines:
            out.append(f"{self.cr_lines} lone carriage return{'s' if self.cr_lines > 1 else ''} read as line ends")
        return out


class _Repaired:
    """A stream under explain's input policy (intake.py), piece by piece: UTF-16/32 decoded to UTF-8, NUL runs
    replaced by U+FFFD, lone CRs that end lines made newlines. `read` and `readline`, as scan() uses them."""

    def __init__(self, stream, policy: Policy, cr_all: bool):
        import codecs

        self.stream, self.policy, self.cr_all = stream, policy, cr_all
        self._dec = codecs.getincrementaldecoder(policy.encoding)("replace") if policy.encoding != "utf-8" else None
        self._buf = b""

    def _fix(self, data: bytes, final: bool = False) -> bytes:
        from logdoctor.input.intake import _CR_BEFORE_LOG, _LONE_CR, _NUL_RUN, _REPLACEMENT

        if self._dec is not None:
            data = self._dec.decode(data, final).lstrip("\ufeff").encode("utf-8", "replace")
        if b"\x00" in data:
            self.policy.nul_bytes += data.count(b"\x00")
            data = _NUL_RUN.sub(_REPLACEMENT, data)
        if b"\r" in data:
            data, n = (_LONE_CR if self.cr_all else _CR_BEFORE_LOG).subn(b"\n", data)
            self.policy.cr_lines += n
        return data

    def _fill(self, n: int) -> None:
        while len(self._buf) < n:
            raw = self.stream.read(max(n - len(self._buf), 1 << 16))
            if not raw:
                if self._dec is not None:
                    self._buf += self._fix(b"", final=True)
                    self._dec = None
                return
            self._buf += self._fix(raw)

    def read(self, n: int = -1) -> bytes:
        self._fill(n if n >= 0 else 1 << 62)
        out, self._buf = (self._buf, b"") if n < 0 else (self._buf[:n], self._buf[n:])
        return out

    def readline(self, limit: int = -1) -> bytes:
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0 and (limit < 0 or nl < limit):
                out, self._buf = self._buf[: nl + 1], self._buf[nl + 1 :]
                return out
            if 0 <= limit <= len(self._buf):
                out, self._buf = self._buf[:limit], self._buf[limit:]
                return out
            size = len(self._buf)
            self._fill(size + (1 << 16))
            if len(self._buf) == size:
                out, self._buf = self._buf, b""
                return out


def repaired_stream(stream, head: bytes) -> tuple[Any, bytes, Policy]:
    """(stream, head, policy): the log as scan() should read it. A clean UTF-8 log without NUL bytes or lone CRs in
    its head is passed through untouched (the fast path); otherwise every later read is repaired too."""
    from logdoctor.input.intake import detect_encoding

    policy = Policy(encoding=detect_encoding(head))
    if policy.encoding == "utf-8-sig":
        policy.encoding, head = "utf-8", head[3:]
    lone = head.count(b"\r") - head.count(b"\r\n")
    if policy.encoding == "utf-8" and b"\x00" not in head and lone <= 0:
        return stream, head, policy
    cr_all = lone > 0 and lone >= 4 * head.count(b"\n")
    rep = _Repaired(stream, policy, cr_all)
    return rep, rep._fix(head), policy
