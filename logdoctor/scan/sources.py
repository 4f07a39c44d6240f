"""What the API and the CLI read: a file, stdin, text, lines, journal files or the live journal → ReadResult.

A large text source (a file, a pipe, a decompressed input of SCAN_MIN bytes or more) goes through the scan
(`scan.reader.read_scanned`): attempt segments and candidate lines, not a Python parse of every line. A smaller one
is read whole (`read.read_bytes`); journal files and the live journal through the journal reader (entries).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable

from logdoctor.core.errors import InputError, UsageError
from logdoctor.core.records import ReadResult
from logdoctor.input.intake import repair_lines
from logdoctor.input.read import check_bytes, read_bytes, read_entries, read_lines


def read_any(source, *, strict: bool = True) -> ReadResult:
    """text | bytes | path | iterable of lines → ReadResult (strict: refuse binary/empty input with InputError).

    Explicit, never guessed (docs/api.md): a `pathlib.Path` (any os.PathLike) is a file to read; a `str` is always
    the log text itself, even when it happens to name an existing file — pass `Path(name)` for a file."""
    if isinstance(source, bytes):
        if strict:
            check_bytes(source, "<bytes>")
        return read_bytes(source, "<bytes>")
    if isinstance(source, os.PathLike):
        scanned = _scan_file(str(source))
        if scanned is not None:
            return scanned
        from logdoctor.input.sources.files import read_source

        return _read_raw(read_source(source), strict=strict)
    if isinstance(source, str):
        data = source.encode("utf-8", "surrogateescape")
        if strict:
            check_bytes(data, "<text>")
        return read_bytes(data, "<text>")
    if isinstance(source, Iterable):
        return _read_iterable(source, strict)
    raise UsageError(f"cannot read a log from {type(source).__name__}")


def _read_iterable(source: Iterable, strict: bool) -> ReadResult:
    lines = [ln.decode("utf-8", "replace") if isinstance(ln, bytes) else str(ln) for ln in source]
    lines = [ln[:-1] if ln.endswith("\n") else ln for ln in lines]
    if strict and not any(ln.strip() for ln in lines):
        raise InputError("empty input — no log lines")
    lines, dmg = repair_lines(lines)  # the same policy as for bytes (intake.py)
    res = read_lines(lines, "<lines>")
    res.stats.nul_bytes, res.stats.cut_lines, res.stats.cut_bytes, res.stats.long_lines = (
        dmg.nul_bytes,
        dmg.cut_lines,
        dmg.cut_bytes,
        dmg.long_lines,
    )
    res.warnings += dmg.notes
    return res


def _scan_file(path: str) -> ReadResult | None:
    """A large regular text file through the scan, else None (the caller reads it whole)."""
    from logdoctor.input import stream
    from logdoctor.scan.reader import SCAN_MIN, read_scanned

    if not stream.wants_stream(path, SCAN_MIN):
        return None
    from logdoctor.input.sources.guard import upto

    with open(path, "rb") as fh:  # a file still being written: read up to its size at open
        return read_scanned(upto(fh), path)


def read_source_spec(
    source=None, *, unit=None, since=None, boot=None, lines=None, journal_files=(), journal_dir=None
) -> ReadResult:
    """The CLI's sources: journal files / a journal directory / the live journal of a unit, else a file (or stdin
    when `source` is None or '-'); `lines` keeps the last N entries."""
    if journal_files or journal_dir or unit:
        return _journal_spec(source, unit, since, boot, lines, journal_files, journal_dir)
    res = _read_text_source(source, since, boot, lines)
    if lines:
        res.records = [r for r in res.records if r.line > res.stats.read - lines]
    return res


def _journal_spec(source, unit, since, boot, lines, journal_files, journal_dir) -> ReadResult:
    if source:
        raise UsageError("give either SOURCE or --unit/--journal-file/--journal-dir, not both")
    from logdoctor.input.sources.journal import iter_journal_entries

    entries = list(
        iter_journal_entries(
            files=tuple(journal_files), directory=journal_dir, unit=unit, since=since, boot=boot, lines=lines
        )
    )
    origin = unit or (journal_files[0] if journal_files else journal_dir)
    if not entries:
        raise InputError(f"no journal entries for {origin}" + (f" (unit {unit})" if unit else ""))
    return read_entries(entries, origin)


def _read_text_source(source, since, boot, lines) -> ReadResult:
    """A file or stdin: through the scan when large and text, else whole; a binary journal file as entries."""
    from logdoctor.scan.reader import SCAN_MIN, read_scanned

    stdin = None
    if source not in (None, "-"):
        res = _scan_file(str(source))
        if res is not None:
            _warn_ignored(res, str(source), since, boot)
            return res
    else:  # a pipe: its first SCAN_MIN bytes decide, as a file's size does
        import sys

        from logdoctor.input import stream
        from logdoctor.input.sources.guard import waiting

        fh = sys.stdin.buffer
        with waiting("<stdin>", "the input has not ended"):  # `(cat log; sleep 60) |`: say why nothing happens
            head = fh.read(SCAN_MIN)
        if len(head) >= SCAN_MIN and stream.head_streams(head[:8192]):
            return read_scanned(fh, "<stdin>", prefix=head)
        stdin = _Prefixed(head, fh)
    from logdoctor.input.sources.files import read_source

    raw = read_source(source, stdin=stdin)
    if raw.is_journal_file:
        from logdoctor.input.sources.journal import iter_journal_entries

        return read_entries(iter_journal_entries(files=[raw.origin], since=since, boot=boot, lines=lines), raw.origin)
    res = _read_raw(raw, strict=True)
    _warn_ignored(res, raw.origin, since, boot)
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
    if ignored:  # options that would do nothing say so (docs/cli.md)
        res.warnings.append(
            f"{' and '.join(ignored)} {'only filter' if len(ignored) > 1 else 'only filters'} a journal (--unit, "
            f"--journal-file, --journal-dir or a .journal file); {origin} is text, read whole — cut it with "
            f"journalctl --since/-b, or use -n"
        )


def _read_raw(raw, *, strict: bool) -> ReadResult:
    """A file's bytes (sources.files.RawInput): a binary journal file through the journal reader; a large
    decompressed text through the scan; else text read whole."""
    if raw.is_journal_file:
        from logdoctor.input.sources.journal import iter_journal_entries

        return read_entries(iter_journal_entries(files=[raw.origin]), raw.origin)
    from logdoctor.input import stream
    from logdoctor.scan.reader import SCAN_MIN, read_scanned

    if len(raw.data) >= SCAN_MIN and stream.head_streams(raw.data[:8192]):
        return read_scanned(io.BytesIO(raw.data), raw.origin, damage=raw.damage)
    if strict:
        check_bytes(raw.data, raw.origin)
    return read_bytes(raw.data, raw.origin, damage=raw.damage)
