"""read: bytes / text lines / journal entries → Records, with line accounting.

Per input line: clean (ANSI, \\r progress bars) → recognise the outer format (journal text, json, docker, compose,
raw) → split the engine prefix → Record. A journal entry with a multi-line MESSAGE becomes one Record per line.
Every input line ends in exactly one Record or in `unparsed`; `Stats` counts both (read == parsed + unparsed).

The parse layer never raises on any input. `check_bytes` is the separate, strict gate the CLI and API use to turn
binary junk or an empty pipe into one clear InputError; partial damage (NUL bytes, an over-long line, UTF-16) is
repaired and counted by intake.repair (docs/reliability.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from logdoctor.core.errors import InputError
from logdoctor.core.records import KERNEL, META, SERVICE, SYSTEMD, ReadResult, Record, Stats, Unparsed
from logdoctor.engines.prefixes import split_prefix
from logdoctor.input import order
from logdoctor.input.formats import Outer, container, journal_export, journal_json, journal_text, logfmt, wrappers
from logdoctor.input.formats.clean import clean, mostly_control
from logdoctor.input.intake import Damage, repair, sniff

EMPTY_STDIN_HINT = "no log lines on stdin — try: journalctl -u UNIT -n 1000 --no-pager | logdoctor explain"
_NOT_SPACE = re.compile(rb"\S")
_SHORT_FORMATS = (
    "journal-short",
    "journal-short-precise",
    "journal-short-iso",
    "journal-short-iso-precise",
    "journal-short-full",
    "journal-with-unit",
    "journal-short-monotonic",
    "journal-short-unix",
)


def check_bytes(data: bytes, origin: str) -> None:
    """Refuse input that is not a text log (empty, or binary junk), with one line that says why and what to do.
    Damage inside a text log (NUL bytes, over-long lines, UTF-16) is repaired by read_bytes, not refused."""
    if _NOT_SPACE.search(data) is None:  # not data.strip(): no copy of a large input
        raise InputError(EMPTY_STDIN_HINT if origin == "<stdin>" else f"{origin}: empty input — no log lines")
    if not journal_export.looks_like_export(data):
        sniff(data, origin)


def decode(data: bytes) -> tuple[str, int]:
    """UTF-8 with replacement; returns (text, number of invalid bytes replaced)."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "surrogateescape")
    bad = sum(1 for ch in text if "\udc80" <= ch <= "\udcff")
    return re.sub("[\udc80-\udcff]+", lambda m: "\ufffd", text), bad


def read_bytes(
    data: bytes, origin: str = "<bytes>", *, year: int | None = None, damage: Damage | None = None
) -> ReadResult:
    """Never raises: use check_bytes first to refuse junk with a clear message. `damage` carries what the source
    already repaired (a truncated archive) into the stats."""
    if journal_export.looks_like_export(data):
        entries, bad = journal_export.parse_export(data)
        res = read_entries(
            ((e.fields, e.first_line, e.last_line) for e in entries), origin, fmt="journal-export", numbered=True
        )
        for line, reason in bad:
            res.unparsed.append(Unparsed(line, "", reason))
        res.stats.unparsed += len(bad)
        res.stats.read = res.stats.parsed + res.stats.unparsed
        return res
    data, dmg = repair(data, origin)
    text, bad_bytes = decode(data)
    del data
    lines = text.split("\n") if text else []
    del text
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line is not an extra empty line
    reversed_in = order.newest_first(lines)
    if reversed_in:
        lines = order.oldest_first(lines)
    res = read_lines(lines, origin, year=year)
    if reversed_in:
        res.warnings.append(
            f"{origin}: the journal runs newest first (journalctl -r): read in time order, so line numbers count from"
            " the oldest entry"
        )
    st = res.stats
    st.bad_bytes, st.nul_bytes, st.cut_lines, st.cut_bytes, st.long_lines, st.encoding = (
        bad_bytes,
        dmg.nul_bytes,
        dmg.cut_lines,
        dmg.cut_bytes,
        dmg.long_lines,
        dmg.encoding,
    )
    if damage is not None:
        st.stopped = damage.stopped
        res.warnings += damage.notes
    res.warnings += dmg.notes
    if bad_bytes:
        res.warnings.append(f"{origin}: {bad_bytes} invalid UTF-8 bytes replaced with U+FFFD")
    return res


def read_lines(
    lines: Iterable,
    origin: str = "<text>",
    *,
    year: int | None = None,
    head: list[str] | None = None,
    sink=None,
    numbered: bool = False,
) -> ReadResult:
    """Text lines (any mixture of formats) → records. A streaming caller passes an iterator, its first lines as
    `head` (at least the 600 that format detection reads) and a `sink` that stores the records. `numbered`: the
    lines are (input line number, text) pairs, a selection of the input (the scan's), and records keep those
    numbers."""
    if head is None:
        lines = list(lines)
        head = [t for _, t in lines] if numbered else lines
    reader = _LineReader(head, year or datetime.now().year, sink)
    feed = reader.feed
    for i, raw in lines if numbered else enumerate(lines, 1):
        feed(i, raw)
    records = sink.records() if sink is not None else reader.records
    return ReadResult(records=records, stats=reader.stats, unparsed=reader.unparsed, origin=origin)


class _LineReader:
    """One input line at a time → a Record (or an Unparsed), with the state that spans lines: the log's wrapper
    prefixes and compose names (read from its head), and the last journal header and record (continuations)."""

    def __init__(self, head: list[str], year: int, sink=None):
        self.year = year
        self.stats = Stats()
        self.records: list[Record] = sink if sink is not None else []
        self.unparsed: list[Unparsed] = []
        self.quote = wrappers.quote(head)  # a log pasted as an e-mail / chat quote: its marks go first
        if self.quote is not None:
            head = [self.quote.sub("", l, count=1) for l in head]
        self.compose_names = _compose_names(head)
        wrap_kinds, self.stats.unknown_prefix = wrappers.detect(head)
        if self.compose_names:
            self.stats.unknown_prefix = None
        unknown_rx = wrappers.unknown_rx(self.stats.unknown_prefix)
        if unknown_rx is not None:
            wrap_kinds = wrap_kinds | {("unknown", unknown_rx)}
        self.wrap_kinds = wrap_kinds
        self.prev_outer: Outer | None = None  # the last journal-text header, for continuation lines
        self.prev_rec: Record | None = None

    def _unparsed(self, i: int, line: str, reason: str) -> None:
        self.stats.unparsed += 1
        self.unparsed.append(Unparsed(i, line[:200], reason))

    def feed(self, i: int, raw: str) -> None:
        stats = self.stats
        stats.read += 1
        line, frames = clean(raw.rstrip("\n"))
        stats.collapsed_frames += frames
        if self.quote is not None:  # a quoted log: a line outside the quote is the sender's own words
            line, quoted = self.quote.subn("", line, count=1)
            if not quoted and line.strip():
                self._unparsed(i, line, "outside the quoted log")
                return
        if line.endswith("\r"):
            line = line.rstrip("\r")
        if mostly_control(line):
            self._unparsed(i, line, "binary junk")
            return
        meta = journal_text.parse_meta(line)  # journalctl's own separator lines
        if meta is not None:
            rec = Record(line=i, msg=meta.msg, text=meta.msg, fmt=meta.fmt, transport=META, extra=meta.extra)
            _emit(self.records, stats, rec, skipped=True)
            self.prev_outer, self.prev_rec = None, rec
            return
        if line[:1] in ("{", "\x1e") and self._json(i, line):
            return
        if "=" in line[:48] and self._logfmt(i, line):
            return
        if self.prev_outer is not None and line[:1].isspace() and self._continuation(i, line):
            return
        outer = self._outer(line)
        rec = _record(outer, outer.msg, i, inherit=self.prev_rec, wrap=self.wrap_kinds)
        _emit(self.records, stats, rec, skipped=not rec.msg.strip())
        if "wrapper" in rec.extra:
            stats.prefixes[rec.extra["wrapper"]] = stats.prefixes.get(rec.extra["wrapper"], 0) + 1
        self.prev_outer = outer if outer.fmt in _SHORT_FORMATS else None
        self.prev_rec = rec

    def _json(self, i: int, line: str) -> bool:
        """json / json-seq (journalctl -o json): one entry per line, MESSAGE may be multi-line. False: not JSON."""
        entry = journal_json.parse_json_line(line)
        if entry is not None:
            outer = journal_json.entry_outer(entry, "journal-json")
            for rec in _entry_records(outer, i, i):
                _emit(self.records, self.stats, rec, count=False)
            self.stats.parsed += 1
            self.stats.count_format("journal-json")
            self.prev_outer, self.prev_rec = None, self.records[-1] if self.records else self.prev_rec
            return True
        if journal_json.looks_like_json_entry(line):
            self._unparsed(i, line, "broken journal JSON (truncated line?)")
            return True
        return False

    def _logfmt(self, i: int, line: str) -> bool:
        """A logfmt line (formats/logfmt.py): its message, which may hold several lines, as JSON's MESSAGE is read."""
        fields = logfmt.parse_line(line)
        if fields is None:
            return False
        for rec in _entry_records(logfmt.outer(fields), i, i):
            _emit(self.records, self.stats, rec, count=False)
        self.stats.parsed += 1
        self.stats.count_format("logfmt")
        self.prev_outer, self.prev_rec = None, self.records[-1] if self.records else self.prev_rec
        return True

    def _continuation(self, i: int, line: str) -> bool:
        """An indented continuation of a multi-line message in short output."""
        assert self.prev_outer is not None
        cont = journal_text.continuation_text(line, self.prev_outer.msg_col)
        if cont is None:
            return False
        rec = _record(self.prev_outer, cont, i, continuation=True, inherit=self.prev_rec, wrap=self.wrap_kinds)
        _emit(self.records, self.stats, rec)
        self.prev_rec = rec
        return True

    def _outer(self, line: str) -> Outer:
        outer = journal_text.parse(line, self.year)
        if outer is None and self.compose_names:
            outer = container.parse_compose(line)
            if outer is not None and outer.ident not in self.compose_names:
                outer = None
        if outer is None:
            outer = container.parse_timestamped(line)
        if outer is None:
            outer = container.parse_generic_timestamp(line)
        return outer if outer is not None else Outer(fmt="raw", msg=line)


def read_entries(
    entries: Iterable, origin: str = "<journal>", *, fmt: str = "journal", numbered: bool = False
) -> ReadResult:
    """Journal entries (normalised str→str dicts from the journal source, or (fields, first, last) tuples from
    export input) → records. Each entry counts as one read line; its MESSAGE lines become separate records."""
    stats = Stats()
    records: list[Record] = []
    for n, item in enumerate(entries, 1):
        if numbered:
            fields, first, last = item
        else:
            fields, first, last = item, n, n
        stats.read += 1
        stats.parsed += 1
        stats.count_format(fmt)
        outer = journal_json.entry_outer(fields, fmt)
        records.extend(_entry_records(outer, first, last))
        if not outer.msg.strip():
            stats.skipped += 1
    return ReadResult(records=records, stats=stats, origin=origin)


def _entry_records(outer: Outer, first: int, last: int) -> list[Record]:
    text, _ = clean(outer.msg) if "\n" not in outer.msg else (outer.msg, 0)
    parts = text.split("\n") if text else [""]
    out = []
    multi = len(parts) > 1 and last > first  # export: each message line has its own input line
    for j, part in enumerate(parts):
        part, _ = clean(part)
        ln = min(first + j, last) if multi else first
        out.append(
            _record(outer, part, ln, continuation=j > 0, inherit=out[-1] if out else None, end=last if not multi else 0)
        )
    return out


def _record(
    outer: Outer,
    msg: str,
    line: int,
    *,
    continuation: bool = False,
    inherit: Record | None = None,
    end: int = 0,
    wrap: frozenset[str] = frozenset(),
) -> Record:
    unknown = next((k[1] for k in wrap if isinstance(k, tuple)), None)
    w = wrappers.peel(msg, wrap, unknown)  # a process manager's prefix (Ray, torchrun, mpirun, srun, kubectl)
    p = split_prefix(w.body)
    transport = outer.transport or SERVICE
    # a wrapper that names the writer (rank, pid) makes every line self-identifying, like an engine prefix
    engine = p.engine or (f"{w.wrapper}" if w.wrapper and (w.rank or w.pid or w.proc) else None)
    rec = Record(
        line=line,
        msg=p.body,
        text=msg,
        end_line=end if end and end != line else 0,
        fmt=outer.fmt,
        ts=outer.ts or w.ts,
        host=outer.host,
        ident=outer.ident or w.ident,
        unit=outer.unit,
        pid=outer.pid,
        priority=outer.priority,
        transport=transport,
        level=p.level,
        engine_ts=p.ts,
        proc=p.proc or w.proc,
        rank=p.rank or w.rank,
        src=p.src,
        continuation=continuation,
        prefix_engine=engine,
        extra=dict(outer.extra) if outer.extra else {},
    )
    if w.wrapper:
        rec.extra["wrapper"] = w.wrapper
    tag_pid = p.tag_pid if p.tag_pid is not None else w.pid
    if tag_pid is not None:
        rec.extra["tag_pid"] = str(tag_pid)
    if engine is None and inherit is not None:
        _inherit(rec, inherit)
    if transport == SERVICE:
        rec.transport = _service_transport(rec)
    return rec


def _inherit(rec: Record, inherit: Record) -> None:
    """A line without an engine prefix continues the last prefixed line of the same writer (SGLang prints a
    traceback as one multi-line log record: only its first line has the [time TPn] prefix)."""
    if (
        inherit.transport != rec.transport
        or inherit.pid != rec.pid
        or inherit.host != rec.host
        or inherit.ident != rec.ident
    ):
        return
    rec.rank = rec.rank or inherit.rank
    rec.proc = rec.proc or inherit.proc
    rec.prefix_engine = None
    if "tag_pid" in inherit.extra:
        rec.extra["tag_pid"] = inherit.extra["tag_pid"]


def _service_transport(rec: Record) -> str:
    """A service line written by the kernel or by systemd (pid 1) is theirs."""
    if rec.ident == "kernel":
        return KERNEL
    if rec.ident == "systemd" and rec.pid == 1:
        return SYSTEMD
    return SERVICE


def _emit(records: list[Record], stats: Stats, rec: Record, *, skipped: bool = False, count: bool = True) -> None:
    records.append(rec)
    if count:
        stats.parsed += 1
        stats.count_format(rec.fmt)
        if skipped:
            stats.skipped += 1


def _compose_names(lines: list[str]) -> set[str]:
    """docker-compose prefixes are only trusted when one name prefixes several lines (a lone 'x | y' is text)."""
    counts: dict[str, int] = {}
    for line in lines[:400]:
        if "|" in line[:64]:
            o = container.parse_compose(line)
            if o is not None and o.ident:
                counts[o.ident] = counts.get(o.ident, 0) + 1
    return {k for k, v in counts.items() if v >= 3 or (v >= 1 and v * 2 >= min(len(lines), 400))}
