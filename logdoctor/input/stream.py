"""Large text files read in chunks, with a bounded record store (issue 11: linear time, flat memory).

explain now reads a large input through the scan (scan/reader.py, issue 20), which parses only the lines the
prefilter selects and stores their records in `Keep`; `read_stream`/`read_file` below remain the chunked parse of
every line (the reference the tests compare the whole-input path with).

`read.read_bytes` holds the raw bytes, the decoded text, every line and every Record at once: about 9x the input
(900 MB for a 100 MB journal). A file above `STREAM_MIN` bytes is read here instead: 4 MiB chunks, each decoded and
split on its own (a UTF-8 sequence never contains "\\n", so cutting after the last newline is safe), fed to the same
line parser (`read.read_lines`), whose records go into a `Keep` store rather than a list.

`Keep` holds every record that can be evidence and only a ring of the most recent `RING` routine ones. Routine means:
the service's own line, at INFO/DEBUG or no level, not indented (traceback frames and code lines are), with no word
of `EVIDENCE` in it and no marker row of any engine matching it other than a serving-phase point marker, written
while the service is serving (after any engine's "ready" marker, until the next non-serving marker or systemd line).
So launches, config dumps, phase markers, deaths, tracebacks, warnings/errors, systemd and kernel lines of every
attempt stay; what goes is the oldest of the INFO request/batch lines of a long healthy serving stretch. Records keep
their input line numbers (evidence quotes the input's lines), and `Stats` counts every line as it is read, so line
accounting stays exact. Inputs below `STREAM_MIN` take the whole-input path unchanged.
"""

from __future__ import annotations

import os
from collections import deque

from logdoctor.core.errors import InputError
from logdoctor.core.records import SERVICE, SYSTEMD, ReadResult, Record

STREAM_MIN = 8 << 20  # smaller files are read whole (the corpus, fixtures, pasted logs: unchanged path)
CHUNK = 4 << 20
RING = 20000  # routine serving records kept (the most recent ones)
HEAD_LINES = 600  # the reader's format detection looks at the first 600 lines
# routine lines outside a serving stretch (no engine, or before "ready"): the first QUIET_HEAD are kept, then only
# the most recent QUIET_RING — a 10-million-line log of another program must not hold every line (flat memory)
QUIET_HEAD = 20000
QUIET_RING = 100000
# lines kept only because they read like evidence (a traceback, an ERROR line, an evidence word): the first
# EVIDENCE_HEAD and a ring of the most recent EVIDENCE_RING (as triage keeps MAX_HITS: first half + last half). A
# service that fails every request prints a traceback per request; 100k of them held 500 MB (issue 18, F10). Phase
# markers, deaths, the first ready line, systemd and kernel lines are structure, never dropped. Both ends move in
# whole stanzas (a traceback with its frames and exception line), so no half traceback is left at a seam.
EVIDENCE_HEAD = 10000
EVIDENCE_RING = 10000
_ROUTINE_LEVELS = frozenset((None, "INFO", "DEBUG", "TRACE", "I", "D", "V"))
# lower-case words that make a line evidence wherever it is (errors, deaths, the GPU, the process, the unit)
EVIDENCE = (
    "error",
    "exception",
    "traceback",
    "fail",
    "fatal",
    "warn",
    "kill",
    "abort",
    "oom",
    "out of memory",
    "nccl",
    "nvrm",
    "xid",
    "timeout",
    "timed out",
    "signal",
    "segmentation",
    "core dump",
    "exit",
    "shutdown",
    "shutting down",
    "terminat",
    "crash",
    "panic",
    "assert",
    "refused",
    "denied",
    "invalid",
    "cannot",
    "can't",
    "unable",
    "retry",
    "restart",
    "stop",
    "hang",
    "stuck",
    "watchdog",
    "deadlock",
    "leak",
    "memory",
    'file "',
    "disconnect",
    "lost",
)


_PLAIN, _MARK, _QUIET, _EVIDENCE = 1, 2, 3, 4


class _Index:
    """Every engine's marker rows by keyword, and the evidence words, as Aho-Corasick automata (one pass a line)."""

    def __init__(self):
        from logdoctor.engines import ENGINES
        from logdoctor.engines import markers as mk

        rows = [m for e in ENGINES.values() for m in (*e.markers, *e.deaths)] + list(mk.COMMON_DEATHS)
        self.by_kw: dict[str, list] = {}
        for m in rows:
            for k in m.keyword.split("|") if m.keyword else ():
                self.by_kw.setdefault(k, []).append(m)
        self.always = [m for m in rows if not m.keyword]
        self._rows: dict[frozenset, tuple] = {}
        try:
            import ahocorasick
        except ImportError:  # optional speed-up: plain substring tests give the same answer
            self.marks = self.words = None
            return
        self.marks = ahocorasick.Automaton()
        for k in self.by_kw:
            self.marks.add_word(k, k)
        self.marks.make_automaton()
        self.words = ahocorasick.Automaton()
        for w in EVIDENCE:
            self.words.add_word(w, w)
        self.words.make_automaton()

    def evidence(self, low: str) -> bool:
        if self.words is None:
            return any(w in low for w in EVIDENCE)
        for _ in self.words.iter(low):
            return True
        return False

    def rows(self, msg: str) -> tuple:
        """The marker rows whose keyword is in msg (each once), then the rows without a keyword; remembered per set
        of keywords (a serving log repeats a handful of them)."""
        if self.marks is None:
            kws = frozenset(k for k in self.by_kw if k in msg)
        else:
            kws = frozenset(k for _, k in self.marks.iter(msg))
        got = self._rows.get(kws)
        if got is None:
            seen: dict[int, object] = {}
            for k in sorted(kws):
                for m in self.by_kw[k]:
                    seen.setdefault(id(m), m)
            if len(self._rows) > 4096:
                self._rows.clear()
            got = self._rows[kws] = (*seen.values(), *self.always)
        return got


class Keep:
    """The record store `read.read_lines` appends to: evidence kept whole, routine serving lines in a ring."""

    def __init__(self, ring: int = RING):
        self.kept: list[tuple[int, Record]] = []
        self.ring: deque[tuple[int, Record]] = deque(maxlen=ring)
        self.quiet_head = 0
        self.quiet: deque[tuple[int, Record]] = deque(maxlen=QUIET_RING)
        self.seq = 0
        self.last: Record | None = None
        self.serving = False
        self.mark: tuple[int, Record] | None = None
        self.dropped = 0
        self.index = _Index()
        self.evidence_head = 0
        self.evidence: deque[tuple[int, Record]] = deque()
        self.evidence_ring = EVIDENCE_RING
        self.evidence_dropped = 0
        self._in_head_stanza = self._prev_inside = False

    def __len__(self) -> int:
        return self.seq

    def __getitem__(self, i: int) -> Record:
        if i != -1 or self.last is None:
            raise IndexError(i)
        return self.last

    def append(self, rec: Record) -> None:
        self.last = rec
        self.seq += 1
        kind = self._routine(rec)
        if not kind:
            self.kept.append((self.seq, rec))
            return
        if kind == _EVIDENCE:
            self._add_evidence(rec)
            return
        if kind == _QUIET:
            if self.quiet_head < QUIET_HEAD:
                self.quiet_head += 1
                self.kept.append((self.seq, rec))
                return
            if len(self.quiet) == self.quiet.maxlen:
                self.dropped += 1
            self.quiet.append((self.seq, rec))
            return
        if len(self.ring) == self.ring.maxlen:
            self.dropped += 1
        self.ring.append((self.seq, rec))
        if kind == _MARK:
            self.mark = (self.seq, rec)  # supersedes the stretch's previous one

    def _add_evidence(self, rec: Record) -> None:
        inside = _inside_stanza(rec)
        if self.evidence_head < EVIDENCE_HEAD or (self._in_head_stanza and (inside or self._prev_inside)):
            self.evidence_head += 1  # the head, finished to the end of the stanza it is in
            self._in_head_stanza = self.evidence_head >= EVIDENCE_HEAD
            self._prev_inside = inside
            self.kept.append((self.seq, rec))
            return
        self._in_head_stanza = self._prev_inside = False
        self.evidence.append((self.seq, rec))
        if len(self.evidence) > self.evidence_ring:
            self._drop_stanza()

    def _drop_stanza(self) -> None:
        """Drop the oldest evidence record and the rest of its stanza: the indented lines after it and the line
        that ends an indented run (a traceback's exception line)."""
        ring = self.evidence
        _, first = ring.popleft()
        self.evidence_dropped += 1
        prev_inside = _inside_stanza(first)
        while ring:
            nxt = ring[0][1]
            inside = _inside_stanza(nxt)
            if not (inside or prev_inside):
                break
            ring.popleft()
            self.evidence_dropped += 1
            prev_inside = inside

    def extend(self, recs) -> None:
        for r in recs:
            self.append(r)

    def _save_mark(self) -> None:
        """The last serving marker of a stretch stays even when the ring dropped it: whether serving went on after
        a traceback is read from the last one (timeline._decide). Pinned when its stretch ends; the merge in
        `records` skips it in the ring."""
        if self.mark is not None:
            self.kept.append(self.mark)
        self.mark = None

    def _routine(self, rec: Record) -> int:
        """0: keep; _PLAIN: a routine line; _MARK: a routine serving marker (a request, a later "ready" line)."""
        if rec.transport != SERVICE:
            if rec.transport == SYSTEMD:
                self._end_stretch()  # a start, stop or exit: whatever follows is a new stretch
            return 0
        msg = rec.msg
        if not msg or msg[0].isspace() or rec.continuation or rec.level not in _ROUTINE_LEVELS:
            return self._evidence_or_structure(rec)
        ready = mark = False
        for m in self.index.rows(msg):
            if not m.regex.search(msg):
                continue
            if m.edge == "ready" or (m.phase == "serving" and m.edge == "point"):
                mark = True
                ready = ready or m.edge == "ready"
            else:
                self._end_stretch()  # any other marker or death: a new phase, never routine
                return 0
        if ready and not self.serving:
            self.serving = True  # the first "ready" of a stretch is kept (it is the attempt's ready line)
            return 0
        if self.index.evidence(msg.lower()):
            return _EVIDENCE
        if not self.serving:
            return 0 if mark else _QUIET  # outside serving: bounded only past QUIET_HEAD + QUIET_RING lines
        return _MARK if mark else _PLAIN

    def _evidence_or_structure(self, rec: Record) -> int:
        """A line kept as evidence (bounded) unless it is structure: a marker or death of some engine."""
        msg = rec.msg
        if msg and not msg[0].isspace():
            for m in self.index.rows(msg):
                if m.regex.search(msg):
                    return 0
        return _EVIDENCE

    def _end_stretch(self) -> None:
        self.serving = False
        self._save_mark()

    def records(self) -> list[Record]:
        """Kept and ring records in input order."""
        self._save_mark()
        if self.quiet:
            self.kept.extend(self.quiet)
            self.quiet.clear()
        if self.evidence:
            self.kept.extend(self.evidence)
            self.evidence.clear()
        self.kept.sort(key=lambda t: t[0])
        kept, ring = self.kept, list(self.ring)
        out: list[Record] = []
        i = j = 0
        while i < len(kept) and j < len(ring):
            if kept[i][0] == ring[j][0]:
                j += 1
            elif kept[i][0] < ring[j][0]:
                out.append(kept[i][1])
                i += 1
            else:
                out.append(ring[j][1])
                j += 1
        out.extend(r for _, r in kept[i:])
        out.extend(r for _, r in ring[j:])
        return out


def _inside_stanza(rec: Record) -> bool:
    """An indented or continuation line: a traceback frame or code line, the rest of a multi-line message."""
    return rec.continuation or rec.msg[:1].isspace()


def wants_stream(path: str, size: int = STREAM_MIN) -> bool:
    """A regular, uncompressed text file of at least `size` bytes (big enough for the whole-input path to cost
    memory)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    import stat

    if not stat.S_ISREG(st.st_mode) or st.st_size < size:
        return False
    with open(path, "rb") as fh:
        return head_streams(fh.read(8192))


def head_streams(head: bytes) -> bool:
    """Text this reader takes (not compressed, not a journal file or export, not UTF-16), judged by its head."""
    from logdoctor.input.formats import journal_export
    from logdoctor.input.intake import detect_encoding
    from logdoctor.input.sources.files import JOURNAL_MAGIC, sniff_compression

    lone_cr = head.count(b"\r") - head.count(b"\r\n")
    if lone_cr > 0 and lone_cr >= 4 * head.count(b"\n"):
        return False  # lines ended by lone CRs: the whole-input path's repair makes them lines first
    return (
        sniff_compression(head[:8]) is None
        and not head.startswith(JOURNAL_MAGIC)
        and not journal_export.looks_like_export(head)
        and detect_encoding(head) == "utf-8"
    )  # UTF-16: whole path


def read_file(
    path: str, *, year: int | None = None, max_line: int | None = None, chunk: int = CHUNK, ring: int = RING
) -> ReadResult:
    """The file at `path` → records, chunk by chunk (see read_stream)."""
    from logdoctor.input.sources.guard import upto

    with open(path, "rb") as fh:  # a file still being written: read up to its size at open
        return read_stream(upto(fh), path, year=year, max_line=max_line, chunk=chunk, ring=ring)


def read_stream(
    fh,
    origin: str,
    *,
    prefix: bytes = b"",
    year: int | None = None,
    max_line: int | None = None,
    chunk: int = CHUNK,
    ring: int = RING,
) -> ReadResult:
    """A binary stream (a file, or stdin after `prefix` was read from it) → records, chunk by chunk; refuses junk
    with the same one-line errors as `read.check_bytes` (checked per chunk, line numbers counted across chunks)."""
    from logdoctor.core.limits import LINE_CAP
    from logdoctor.core.progress import Progress, set_current
    from logdoctor.input import read as rd
    from logdoctor.input.intake import Damage, chunk_notes, repair_chunk

    max_line = max_line or LINE_CAP
    dmg = Damage()
    prog = Progress(origin)
    state = {"lines": 0, "bad": 0, "text": False, "bytes": 0}

    pending = [prefix] if prefix else []

    def read(n: int) -> bytes:
        return pending.pop() if pending else fh.read(n)

    def chunks():
        carry = b""
        first = True
        if True:
            while True:
                b = read(chunk)
                if first and b:
                    _check_head(b, origin)
                    first = False
                if not b:
                    if carry:
                        yield _lines(carry, final=True)
                    return
                state["bytes"] += len(b)
                prog.update(state["bytes"])
                data = carry + b
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    yield _lines(data[:cut], final=False)
                if len(carry) > max_line:  # an over-long line across chunks: keep its head, read on to its end
                    size, line_head = len(carry), carry[:max_line]
                    while True:
                        b = read(chunk)
                        nl = b.find(b"\n")
                        size += len(b) if nl < 0 else nl
                        if not b or nl >= 0:
                            break
                    state["bytes"] += len(b)
                    yield _lines(line_head, final=False, size=size)
                    carry = b[nl + 1 :] if b and nl >= 0 else b""

    def _lines(data: bytes, final: bool, size: int = 0) -> list[str]:
        if size:  # one over-long line read across chunks: its head, cut and counted as repair() would
            dmg.cut_lines += 1
            dmg.cut_bytes += size - max_line
            dmg.longest_line = max(dmg.longest_line, size)
            dmg.long_lines += 1
            dmg.first_cut_line = dmg.first_cut_line or state["lines"] + 1
            data = data[:max_line] + b" \xe2\x80\xa6[%d bytes cut]\n" % (size - max_line)
        else:
            data = repair_chunk(data, dmg, state["lines"])
        state["text"] = state["text"] or bool(data.strip())
        text, bad = rd.decode(data)
        state["bad"] += bad
        lines = text.split("\n")
        if not final or lines[-1] == "":
            lines.pop()  # the newline that ends the chunk's last line is not an extra empty line
        state["lines"] += len(lines)
        return lines

    gen = chunks()
    head: list[str] = []
    for part in gen:
        head.extend(part)
        if len(head) >= HEAD_LINES:
            break

    def rest():
        yield from head
        for part in gen:
            yield from part

    keep = Keep(ring)
    res = rd.read_lines(rest(), origin, year=year, head=head, sink=keep)
    if not state["text"]:
        raise InputError(f"{origin}: empty input — no log lines")
    prog.update(state["bytes"], final=True)
    set_current(prog)
    res.stats.bad_bytes = state["bad"]
    st = res.stats
    st.nul_bytes, st.cut_lines, st.cut_bytes, st.long_lines = (
        dmg.nul_bytes,
        dmg.cut_lines,
        dmg.cut_bytes,
        dmg.long_lines,
    )
    res.warnings += chunk_notes(dmg, origin)
    st.ring_dropped, st.evidence_dropped = keep.dropped, keep.evidence_dropped
    if keep.evidence_dropped:
        res.warnings.append(
            f"{origin}: {keep.evidence_dropped} evidence lines from the middle not kept (the first "
            f"{EVIDENCE_HEAD} and the last {EVIDENCE_RING} are: bounded memory)"
        )
    if state["bad"]:
        res.warnings.append(f"{origin}: {state['bad']} invalid UTF-8 bytes replaced with U+FFFD")
    return res


def _check_head(head: bytes, origin: str) -> None:
    """The same gate as the whole-input path (intake.sniff): only input that is not text at all is refused."""
    from logdoctor.input.intake import sniff

    sniff(head, origin, partial=True)
