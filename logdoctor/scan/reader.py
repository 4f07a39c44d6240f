"""explain's read of a large text source through the scan (issue 20): segments and candidate lines, not every line.

A byte stream (a file, a pipe, a decompressed input) goes through `scan.scan` with the one prefilter triage uses:
  - the stream is cut into whole-line buffers and repaired under explain's input policy (`intake.repair_chunk`: NUL
    runs, lines over LINE_CAP, lone CRs), so damage counts and invalid-byte counts cover every line, exactly;
  - each attempt segment gives its lines: every line of a small one (≤ SMALL_SEGMENT) that shows a failure word,
    head + prefilter hits + tail of a large one, and of a healthy one the reduced selection triage reads (head and
    tail context, its hits, progress bars thinned);
  - those (input line number, text) pairs go through the same line parser (`read.read_lines(numbered=True)`) into
    the bounded record store (`stream.Keep`), then to the timeline and the verdict as any other ReadResult.
Lines keep their input line numbers; `Stats.read` counts every line of the input, `Stats.scanned` those the scan
passed over without a line parse (read == parsed + unparsed + scanned).

Inputs smaller than SCAN_MIN take the whole-input path (`read.read_bytes`): such an input is at most one small
segment's worth, whose lines the scan would all hand to the parser anyway.
"""

from __future__ import annotations

from collections.abc import Iterator

from logdoctor.core.errors import InputError
from logdoctor.core.limits import LINE_CAP
from logdoctor.core.records import ReadResult
from logdoctor.input import order
from logdoctor.input.intake import Damage, chunk_notes, repair_chunk, sniff
from logdoctor.input.read import decode, read_lines
from logdoctor.input.stream import EVIDENCE_HEAD, EVIDENCE_RING, HEAD_LINES, Keep
from logdoctor.scan.prefilter import shared
from logdoctor.scan.scan import CHUNK, SMALL_SEGMENT, ScanStats, Segment, scan

SCAN_MIN = SMALL_SEGMENT  # a smaller input is read whole (every fixture, pasted logs: unchanged path)


class Repairing:
    """A binary stream read as whole-line buffers under explain's input policy: what `scan` reads. Every buffer is
    repaired by `intake.repair_chunk` (counted into `damage` with input line numbers) and its invalid UTF-8 bytes
    counted; a line longer than LINE_CAP is cut to its head while reading on to its end (bounded memory)."""

    def __init__(self, fh, origin: str, stats: ScanStats, prefix: bytes = b"", progress=None):
        self.fh, self.origin, self.stats, self.progress = fh, origin, stats, progress
        self.damage = Damage()
        self.bad_bytes = 0
        self.text = False  # any non-blank byte seen
        self.nbytes = 0
        self._pending = prefix
        self._carry = b""
        self._first = True

    def _raw(self, n: int) -> bytes:
        if self._pending:
            out, self._pending = self._pending, b""
            return out
        return self.fh.read(n)

    def read(self, n: int = CHUNK) -> bytes:
        """Whole lines (at least one unless at the end), repaired; the last, unterminated line at the end."""
        while True:
            raw = self._raw(n)
            if self._first and raw.strip(b"\x00"):
                # the whole-input path's gate: binary junk is refused; a leading run of NULs (a preallocated or
                # crash-zeroed stretch) is damage, so the gate judges the first buffer that holds anything else
                sniff(raw, self.origin, partial=True)
                self._first = False
            if not raw:
                if self._first and self.nbytes:  # nothing but NULs, to the end (or the decompression cap)
                    raise InputError(
                        f"{self.origin}: binary data ({self.nbytes} NUL bytes and nothing else), not a text log"
                    )
                out, self._carry = self._carry, b""
                return self._fix(out)
            self.nbytes += len(raw)
            if self.progress is not None:
                self.progress.update(self.nbytes)
            data = self._carry + raw if self._carry else raw
            cut = data.rfind(b"\n") + 1
            self._carry = data[cut:]
            if len(self._carry) > LINE_CAP:
                return self._fix(data[:cut]) + self._long_line()
            if cut:
                return self._fix(data[:cut])

    def readline(self, limit: int = -1) -> bytes:
        return b""  # read() ends on a line end, or the input did

    def _long_line(self) -> bytes:
        """The carried line is over LINE_CAP: its head, cut and counted as `intake.repair` does, and the rest of it
        read past (not kept)."""
        size, head = len(self._carry), self._carry[:LINE_CAP]
        rest = b""
        while True:
            b = self._raw(CHUNK)
            nl = b.find(b"\n")
            size += len(b) if nl < 0 else nl
            self.nbytes += len(b)
            if self._first and b.strip(b"\x00"):
                self._first = False  # text after a leading NUL run, read past inside this cut line
            if not b or nl >= 0:
                rest = b[nl + 1 :] if b and nl >= 0 else b""
                break
        self._carry = rest
        dmg = self.damage
        dmg.cut_lines += 1
        dmg.cut_bytes += size - LINE_CAP
        dmg.longest_line = max(dmg.longest_line, size)
        dmg.long_lines += 1
        dmg.first_cut_line = dmg.first_cut_line or self.stats.lines + 1
        return self._fix(head + b" \xe2\x80\xa6[%d bytes cut]\n" % (size - LINE_CAP), repair=False)

    def _fix(self, data: bytes, repair: bool = True) -> bytes:
        if not data:
            return data
        if repair:
            data = repair_chunk(data, self.damage, self.stats.lines)
        self.text = self.text or not data.isspace()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            self.bad_bytes += decode(data)[1]
        return data


def segment_lines(seg: Segment) -> list[tuple[int, bytes]]:
    """The lines of one segment explain parses: all of a small failing one, head + hits + tail of a large failing
    one, the reduced selection of a healthy one (the lines triage reads to call it healthy)."""
    return seg.lines(full=seg.signal)


def _texts(src: Iterator[Segment]) -> Iterator[tuple[int, str]]:
    for seg in src:
        for n, line in segment_lines(seg):
            yield n, decode(line)[0]


def read_scanned(fh, origin: str, *, prefix: bytes = b"", year: int | None = None, damage=None) -> ReadResult:
    """A binary stream (a file, stdin after `prefix` was read from it, a decompressed input) → records, through the
    scan; refuses junk with the same one-line errors as `read.check_bytes`. `damage` carries what the source already
    repaired (a truncated archive)."""
    from logdoctor.core.progress import Progress, set_current

    sstats = ScanStats()
    prog = Progress(origin)
    src = Repairing(fh, origin, sstats, prefix, prog)
    lines = _texts(scan(src, shared(), stats=sstats))
    head: list[tuple[int, str]] = []
    for pair in lines:
        head.append(pair)
        if len(head) >= HEAD_LINES:
            break

    def rest() -> Iterator[tuple[int, str]]:
        yield from head
        yield from lines

    keep = Keep()
    res = read_lines(rest(), origin, year=year, head=[t for _, t in head], sink=keep, numbered=True)
    if order.newest_first([t for _, t in head]):  # put back in order only when read whole (input/order.py)
        res.warnings.append(
            f"{origin}: the journal runs newest first (journalctl -r), and an input this large is read as it comes:"
            " phases and attempts may be misread — run journalctl without -r"
        )
    if not src.text:
        raise InputError(f"{origin}: empty input — no log lines")
    prog.update(src.nbytes, final=True)
    set_current(prog)
    st, dmg = res.stats, src.damage
    st.scanned = sstats.lines - st.read
    st.read = sstats.lines
    st.bad_bytes = src.bad_bytes
    st.nul_bytes, st.cut_lines, st.cut_bytes, st.long_lines = (
        dmg.nul_bytes,
        dmg.cut_lines,
        dmg.cut_bytes,
        dmg.long_lines,
    )
    if damage is not None:
        st.stopped = damage.stopped
        res.warnings += damage.notes
    res.warnings += chunk_notes(dmg, origin)
    st.ring_dropped, st.evidence_dropped = keep.dropped, keep.evidence_dropped
    if keep.evidence_dropped:
        res.warnings.append(
            f"{origin}: {keep.evidence_dropped} evidence lines from the middle not kept (the first "
            f"{EVIDENCE_HEAD} and the last {EVIDENCE_RING} are: bounded memory)"
        )
    if src.bad_bytes:
        res.warnings.append(f"{origin}: {src.bad_bytes} invalid UTF-8 bytes replaced with U+FFFD")
    return res
