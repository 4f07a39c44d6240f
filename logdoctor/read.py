"""read: bytes / text lines / journal entries → Records, with line accounting.

Per input line: clean (ANSI, \\r progress bars) → recognise the outer format (journal text, json, docker, compose,
raw) → split the engine prefix → Record. A journal entry with a multi-line MESSAGE becomes one Record per line.
Every input line ends in exactly one Record or in `unparsed`; `Stats` counts both (read == parsed + unparsed).

The parse layer never raises on any input. `check_bytes` is the separate, strict gate the CLI and API use to turn
binary junk or an empty pipe into one clear InputError; partial damage (NUL bytes, an over-long line, UTF-16) is
repaired and counted by intake.repair (docs/reliability.md).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import datetime

from logdoctor.engines.prefixes import split_prefix
from logdoctor.errors import InputError, UsageError
from logdoctor.formats import Outer, container, journal_export, journal_json, journal_text, wrappers
from logdoctor.formats.clean import clean, mostly_control
from logdoctor.intake import Damage, repair, repair_lines, sniff
from logdoctor.records import KERNEL, META, SERVICE, SYSTEMD, ReadResult, Record, Stats, Unparsed

EMPTY_STDIN_HINT = "no log lines on stdin — try: journalctl -u UNIT -n 1000 --no-pager | logdoctor explain"
_NOT_SPACE = re.compile(rb"\S")
_SHORT_FORMATS = ("journal-short", "journal-short-precise", "journal-short-iso", "journal-short-iso-precise",
                  "journal-short-full", "journal-with-unit", "journal-short-monotonic", "journal-short-unix")


def check_bytes(data: bytes, origin: str) -> None:
    """Refuse input that is not a text log (empty, or binary junk), with one line that says why and what to do.
    Damage inside a text log (NUL bytes, over-long lines, UTF-16) is repaired by read_bytes, not refused."""
    if _NOT_SPACE.search(data) is None:   # not data.strip(): no copy of a large input
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


def read_bytes(data: bytes, origin: str = "<bytes>", *, year: int | None = None, damage: Damage | None = None
               ) -> ReadResult:
    """Never raises: use check_bytes first to refuse junk with a clear message. `damage` carries what the source
    already repaired (a truncated archive) into the stats."""
    if journal_export.looks_like_export(data):
        entries, bad = journal_export.parse_export(data)
        res = read_entries(((e.fields, e.first_line, e.last_line) for e in entries), origin, fmt="journal-export",
                           numbered=True)
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
    res = read_lines(lines, origin, year=year)
    st = res.stats
    st.bad_bytes, st.nul_bytes, st.cut_lines, st.cut_bytes, st.long_lines, st.encoding = \
        bad_bytes, dmg.nul_bytes, dmg.cut_lines, dmg.cut_bytes, dmg.long_lines, dmg.encoding
    if damage is not None:
        st.stopped = damage.stopped
        res.warnings += damage.notes
    res.warnings += dmg.notes
    if bad_bytes:
        res.warnings.append(f"{origin}: {bad_bytes} invalid UTF-8 bytes replaced with U+FFFD")
    return res


def read_lines(lines: Iterable[str], origin: str = "<text>", *, year: int | None = None,
               head: list[str] | None = None, sink=None) -> ReadResult:
    """Text lines (any mixture of formats) → records. A streaming caller (stream.py) passes an iterator, its first
    lines as `head` (at least the 600 that format detection reads) and a `sink` that stores the records."""
    if head is None:
        lines = head = list(lines)
    year = year or datetime.now().year
    stats = Stats()
    records: list[Record] = sink if sink is not None else []
    unparsed: list[Unparsed] = []
    compose_names = _compose_names(head)
    wrap_kinds, stats.unknown_prefix = wrappers.detect(head)
    if compose_names:
        stats.unknown_prefix = None
    unknown_rx = wrappers.unknown_rx(stats.unknown_prefix)
    if unknown_rx is not None:
        wrap_kinds = wrap_kinds | {("unknown", unknown_rx)}
    prev_outer: Outer | None = None     # the last journal-text header, for continuation lines
    prev_rec: Record | None = None
    for i, raw in enumerate(lines, 1):
        stats.read += 1
        line, frames = clean(raw.rstrip("\n"))
        stats.collapsed_frames += frames
        if line.endswith("\r"):
            line = line.rstrip("\r")
        if mostly_control(line):
            stats.unparsed += 1
            unparsed.append(Unparsed(i, line[:200], "binary junk"))
            continue
        # journalctl's own separator lines
        meta = journal_text.parse_meta(line)
        if meta is not None:
            rec = Record(line=i, msg=meta.msg, text=meta.msg, fmt=meta.fmt, transport=META, extra=meta.extra)
            _emit(records, stats, rec, skipped=True)
            prev_outer, prev_rec = None, rec
            continue
        # json / json-seq (journalctl -o json): one entry per line, MESSAGE may be multi-line
        if line[:1] in ("{", "\x1e"):
            entry = journal_json.parse_json_line(line)
            if entry is not None:
                outer = journal_json.entry_outer(entry, "journal-json")
                for rec in _entry_records(outer, i, i):
                    _emit(records, stats, rec, count=False)
                stats.parsed += 1
                stats.count_format("journal-json")
                prev_outer, prev_rec = None, records[-1] if records else prev_rec
                continue
            if journal_json.looks_like_json_entry(line):
                stats.unparsed += 1
                unparsed.append(Unparsed(i, line[:200], "broken journal JSON (truncated line?)"))
                continue
        # indented continuation of a multi-line message in short output
        if prev_outer is not None and line[:1].isspace():
            cont = journal_text.continuation_text(line, prev_outer.msg_col)
            if cont is not None:
                rec = _record(prev_outer, cont, i, continuation=True, inherit=prev_rec, wrap=wrap_kinds)
                _emit(records, stats, rec)
                prev_rec = rec
                continue
        outer = journal_text.parse(line, year)
        if outer is None and compose_names:
            outer = container.parse_compose(line)
            if outer is not None and outer.ident not in compose_names:
                outer = None
        if outer is None:
            outer = container.parse_timestamped(line)
        if outer is None:
            outer = container.parse_generic_timestamp(line)
        if outer is None:
            outer = Outer(fmt="raw", msg=line)
        rec = _record(outer, outer.msg, i, inherit=prev_rec, wrap=wrap_kinds)
        _emit(records, stats, rec, skipped=not rec.msg.strip())
        if "wrapper" in rec.extra:
            stats.prefixes[rec.extra["wrapper"]] = stats.prefixes.get(rec.extra["wrapper"], 0) + 1
        prev_outer = outer if outer.fmt in _SHORT_FORMATS else None
        prev_rec = rec
    if sink is not None:
        records = sink.records()
    return ReadResult(records=records, stats=stats, unparsed=unparsed, origin=origin)


def read_entries(entries: Iterable, origin: str = "<journal>", *, fmt: str = "journal", numbered: bool = False
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
        out.append(_record(outer, part, ln, continuation=j > 0, inherit=out[-1] if out else None, end=last if not multi else 0))
    return out


def _record(outer: Outer, msg: str, line: int, *, continuation: bool = False, inherit: Record | None = None,
            end: int = 0, wrap: frozenset[str] = frozenset()) -> Record:
    unknown = next((k[1] for k in wrap if isinstance(k, tuple)), None)
    w = wrappers.peel(msg, wrap, unknown)  # a process manager's prefix (Ray, torchrun, mpirun, srun, kubectl)
    p = split_prefix(w.body)
    transport = outer.transport or SERVICE
    # a wrapper that names the writer (rank, pid) makes every line self-identifying, like an engine prefix
    engine = p.engine or (f"{w.wrapper}" if w.wrapper and (w.rank or w.pid or w.proc) else None)
    rec = Record(line=line, msg=p.body, text=msg, end_line=end if end and end != line else 0, fmt=outer.fmt,
                 ts=outer.ts or w.ts, host=outer.host, ident=outer.ident or w.ident, unit=outer.unit, pid=outer.pid,
                 priority=outer.priority, transport=transport, level=p.level, engine_ts=p.ts, proc=p.proc or w.proc,
                 rank=p.rank or w.rank, src=p.src, continuation=continuation, prefix_engine=engine,
                 extra=dict(outer.extra) if outer.extra else {})
    if w.wrapper:
        rec.extra["wrapper"] = w.wrapper
    if p.tag_pid is not None:
        rec.extra["tag_pid"] = str(p.tag_pid)
    elif w.pid is not None:
        rec.extra["tag_pid"] = str(w.pid)
    # A line without an engine prefix continues the last prefixed line of the same writer (SGLang prints a
    # traceback as one multi-line log record: only its first line has the [time TPn] prefix).
    if engine is None and inherit is not None and inherit.transport == transport and inherit.pid == rec.pid \
            and inherit.host == rec.host and inherit.ident == rec.ident:
        rec.rank = rec.rank or inherit.rank
        rec.proc = rec.proc or inherit.proc
        rec.prefix_engine = None
        if "tag_pid" in inherit.extra:
            rec.extra["tag_pid"] = inherit.extra["tag_pid"]
    if transport == SERVICE and rec.ident == "kernel":
        rec.transport = KERNEL
    if transport == SERVICE and rec.ident == "systemd" and rec.pid == 1:
        rec.transport = SYSTEMD
    return rec


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


# --------------------------------------------------------------------------------------------------------------------
# sources: what the API and the CLI read (a file, stdin, text, lines, journal files or the live journal)

def read_any(source, *, strict: bool = True) -> ReadResult:
    """text | bytes | path | iterable of lines → ReadResult (strict: refuse binary/empty input with InputError).

    Explicit, never guessed (docs/api.md): a `pathlib.Path` (any os.PathLike) is a file to read; a `str` is always
    the log text itself, even when it happens to name an existing file — pass `Path(name)` for a file."""
    if isinstance(source, bytes):
        if strict:
            check_bytes(source, "<bytes>")
        return read_bytes(source, "<bytes>")
    if isinstance(source, os.PathLike):
        from logdoctor.sources.files import read_source
        return _read_raw(read_source(source), strict=strict)
    if isinstance(source, str):
        data = source.encode("utf-8", "surrogateescape")
        if strict:
            check_bytes(data, "<text>")
        return read_bytes(data, "<text>")
    if isinstance(source, Iterable):
        lines = [ln.decode("utf-8", "replace") if isinstance(ln, bytes) else str(ln) for ln in source]
        lines = [ln[:-1] if ln.endswith("\n") else ln for ln in lines]
        if strict and not any(ln.strip() for ln in lines):
            raise InputError("empty input — no log lines")
        lines, dmg = repair_lines(lines)     # the same policy as for bytes (intake.py)
        res = read_lines(lines, "<lines>")
        res.stats.nul_bytes, res.stats.cut_lines, res.stats.cut_bytes, res.stats.long_lines = \
            dmg.nul_bytes, dmg.cut_lines, dmg.cut_bytes, dmg.long_lines
        res.warnings += dmg.notes
        return res
    raise UsageError(f"cannot read a log from {type(source).__name__}")


def read_source_spec(source=None, *, unit=None, since=None, boot=None, lines=None, journal_files=(),
                     journal_dir=None) -> ReadResult:
    """The CLI's sources: journal files / a journal directory / the live journal of a unit, else a file (or stdin
    when `source` is None or '-'); `lines` keeps the last N entries."""
    if journal_files or journal_dir or unit:
        if source:
            raise UsageError("give either SOURCE or --unit/--journal-file/--journal-dir, not both")
        from logdoctor.sources.journal import iter_journal_entries
        entries = list(iter_journal_entries(files=tuple(journal_files), directory=journal_dir, unit=unit, since=since,
                                            boot=boot, lines=lines))
        origin = unit or (journal_files[0] if journal_files else journal_dir)
        if not entries:
            raise InputError(f"no journal entries for {origin}" + (f" (unit {unit})" if unit else ""))
        return read_entries(entries, origin)
    from logdoctor import stream
    stdin = None
    if source not in (None, "-"):
        if stream.wants_stream(str(source)):   # a big text file: chunked, bounded memory (stream.py)
            res = stream.read_file(str(source))
            _warn_ignored(res, str(source), since, boot)
            if lines:
                res.records = [r for r in res.records if r.line > res.stats.read - lines]
            return res
    else:   # a pipe: its first STREAM_MIN bytes decide, as a file's size does
        import sys

        from logdoctor.sources.guard import waiting
        fh = sys.stdin.buffer
        with waiting("<stdin>", "the input has not ended"):   # `(cat log; sleep 60) |`: say why nothing happens
            head = fh.read(stream.STREAM_MIN)
        if len(head) >= stream.STREAM_MIN and stream.head_streams(head[:8192]):
            res = stream.read_stream(fh, "<stdin>", prefix=head)
            if lines:
                res.records = [r for r in res.records if r.line > res.stats.read - lines]
            return res
        stdin = _Prefixed(head, fh)
    from logdoctor.sources.files import read_source
    raw = read_source(source, stdin=stdin)
    if raw.is_journal_file:
        from logdoctor.sources.journal import iter_journal_entries
        return read_entries(iter_journal_entries(files=[raw.origin], since=since, boot=boot, lines=lines), raw.origin)
    res = _read_raw(raw, strict=True)
    _warn_ignored(res, raw.origin, since, boot)
    if lines:
        res.records = [r for r in res.records if r.line > res.stats.read - lines]
    return res


class _Prefixed:
    """A binary stream whose first bytes were already read (`head`): reads give them back first."""

    def __init__(self, head: bytes, fh):
        self.head, self.fh = head, fh

    def read(self, n: int = -1) -> bytes:
        if self.head:
            if n is None or n < 0:
                out, self.head = self.head + self.fh.read(), b""
                return out
            out, self.head = self.head[:n], self.head[n:]
            return out
        return self.fh.read(n)


def _warn_ignored(res: ReadResult, origin: str, since, boot) -> None:
    ignored = [o for o, v in (("--since", since), ("--boot", boot)) if v is not None]
    if ignored:   # options that would do nothing say so (docs/cli.md)
        res.warnings.append(
            f"{' and '.join(ignored)} {'only filter' if len(ignored) > 1 else 'only filters'} a journal (--unit, "
            f"--journal-file, --journal-dir or a .journal file); {origin} is text, read whole — cut it with "
            f"journalctl --since/-b, or use -n")


def _read_raw(raw, *, strict: bool) -> ReadResult:
    """A file's bytes (sources.files.RawInput): a binary journal file through the journal reader, else text."""
    if raw.is_journal_file:
        from logdoctor.sources.journal import iter_journal_entries
        return read_entries(iter_journal_entries(files=[raw.origin]), raw.origin)
    if strict:
        check_bytes(raw.data, raw.origin)
    return read_bytes(raw.data, raw.origin, damage=raw.damage)
