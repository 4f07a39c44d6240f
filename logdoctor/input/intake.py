"""The input policy (docs/reliability.md): refuse only input that is not text at all; repair partial damage and count it.

A log is read at the worst moment, so one bad stretch must not cost the whole diagnosis:
- a UTF-16 file (PowerShell's `>` writes one) or a UTF-8 BOM is detected and decoded;
- NUL bytes (a crash leaves zeroed blocks in a file) are replaced, each run by one U+FFFD, and counted;
- a line longer than limits.LINE_CAP keeps its head, and the cut is counted and said;
- binary junk (random bytes, an executable, a bomb of zeros) is refused with one line.
Everything here works on bytes before decoding and never raises except `sniff`, the one refusal.
"""

from __future__ import annotations

import codecs
import re

from logdoctor.core import limits
from logdoctor.core.errors import InputError
from logdoctor.core.lean import dataclass, field

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CTRL = bytes(b for b in range(32) if b not in (0, 9, 10, 13, 27)) + b"\x7f"
_NUL_RUN = re.compile(rb"\x00+")
_NOT_NUL = re.compile(rb"[^\x00]")
_REPLACEMENT = "\ufffd".encode()


@dataclass(slots=True)
class Damage:
    """What was repaired on the way in; reported by --stats, warnings and the JSON `window.damage`."""

    encoding: str = "utf-8"
    nul_bytes: int = 0
    cut_lines: int = 0
    cut_bytes: int = 0
    first_cut_line: int = 0
    longest_line: int = 0
    long_lines: int = 0  # lines longer than limits.MATCH_CAP: rules match their head only
    first_nul_line: int = 0
    stopped: str | None = None  # where a truncated or capped archive stopped
    cr_lines: int = 0  # lone CRs read as line ends (a CR-terminated log, or CR before a log line)
    notes: list[str] = field(default_factory=list)


def detect_encoding(head: bytes) -> str:
    """A BOM decides; without one, UTF-16 shows as NUL in every other byte of ASCII text."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    sample = head[:4096]
    if len(sample) >= 16:
        even, odd = sample[0::2], sample[1::2]
        z_even, z_odd = even.count(0), odd.count(0)
        if z_odd * 10 >= len(odd) * 9 and z_even * 10 < len(even):
            return "utf-16-le"
        if z_even * 10 >= len(even) * 9 and z_odd * 10 < len(odd):
            return "utf-16-be"
    return "utf-8"


def sniff(data: bytes, origin: str, *, partial: bool = False) -> None:
    """Refuse input that is not text at all, with one line that says why and what to do. Everything else passes:
    damage inside a text log is repaired by `repair`, not refused. `partial`: data is only the start of the input."""
    enc = detect_encoding(data[: limits.SNIFF_BYTES])
    if enc not in ("utf-8", "utf-8-sig"):  # judge the text repair() will decode, not its UTF-16 bytes
        data = data[: 2 * limits.SNIFF_BYTES].decode(enc, "replace").encode("utf-8", "replace")
    start = 0
    if data[:1] == b"\x00":
        m = _NOT_NUL.search(data)
        if m is None:
            what = (
                f"only NUL bytes in its first {limits.human(len(data))}"
                if partial
                else f"{len(data)} NUL bytes and nothing else"
            )
            raise InputError(f"{origin}: binary data ({what}), not a text log")
        start = m.start()
    head = data[start : start + limits.SNIFF_BYTES].replace(b"\x00", b"")
    ctrl = len(head) - len(head.translate(None, _CTRL))
    if ctrl * limits.BINARY_RATIO > len(head):
        raise InputError(
            f"{origin}: binary data ({ctrl} control bytes in a {len(head)}-byte sample), not a text log"
            " — for a systemd .journal file use --journal-file PATH"
        )


def repair(data: bytes, origin: str = "<bytes>") -> tuple[bytes, Damage]:
    """Decode UTF-16/BOMs to UTF-8, replace NUL runs, cut over-long lines. Never raises."""
    dmg = Damage()
    enc = detect_encoding(data[: limits.SNIFF_BYTES])
    if enc == "utf-8-sig":
        dmg.encoding = "utf-8-bom"
        data = data[len(codecs.BOM_UTF8) :]
    elif enc != "utf-8":
        dmg.encoding = enc
        data = data.decode(enc, "replace").lstrip("\ufeff").encode("utf-8", "replace")
        dmg.notes.append(f"{origin}: decoded as {enc.upper()} text")
    data, dmg.cr_lines = cr_breaks(data)
    if dmg.cr_lines:
        dmg.notes.append(
            f"{origin}: {dmg.cr_lines} lone carriage return{'s' if dmg.cr_lines > 1 else ''} read as line ends"
        )
    if b"\x00" in data:
        dmg.nul_bytes = data.count(b"\x00")
        first = data.count(b"\n", 0, data.find(b"\x00")) + 1
        data = _NUL_RUN.sub(_REPLACEMENT, data)
        dmg.notes.append(
            f"{origin}: {dmg.nul_bytes} NUL byte{'s' if dmg.nul_bytes > 1 else ''} replaced"
            f" (first at line {first}; each run by one U+FFFD)"
        )
    if len(data) > limits.MATCH_CAP:
        dmg.long_lines = sum(1 for _ in _OVER_MATCH_CAP.finditer(data))
    if len(data) > limits.LINE_CAP:
        data = _cut_long_lines(data, dmg)
        if dmg.cut_lines:
            dmg.notes.append(
                f"{origin}: {dmg.cut_lines} line{'s' if dmg.cut_lines > 1 else ''} longer than "
                f"{limits.human(limits.LINE_CAP)} cut to the first {limits.human(limits.LINE_CAP)} "
                f"({dmg.cut_bytes} bytes cut; first at line {dmg.first_cut_line}, "
                f"longest {dmg.longest_line / 1e6:.1f} MB)"
            )
    return data, dmg


# Anchored at a line start and greedy, so each line is scanned once: linear in the input.
_LONG_LINE = re.compile(rb"^[^\n]{%d,}" % (limits.LINE_CAP + 1), re.M)
_OVER_MATCH_CAP = re.compile(rb"^[^\n]{%d,}" % (limits.MATCH_CAP + 1), re.M)


def _cut_long_lines(data: bytes, dmg: Damage) -> bytes:
    parts: list[bytes] = []
    pos = 0
    line_no, counted_to = 1, 0
    for m in _LONG_LINE.finditer(data):
        start, end = m.span()
        cut = start + limits.LINE_CAP
        while cut > start and (data[cut] & 0xC0) == 0x80:  # do not split a UTF-8 character
            cut -= 1
        line_no += data.count(b"\n", counted_to, start)
        counted_to = start
        n_cut = end - cut
        dmg.cut_lines += 1
        dmg.cut_bytes += n_cut
        dmg.longest_line = max(dmg.longest_line, end - start)
        dmg.first_cut_line = dmg.first_cut_line or line_no
        parts += [data[pos:cut], b" \xe2\x80\xa6[%d bytes cut]" % n_cut]
        pos = end
    if not parts:
        return data
    parts.append(data[pos:])
    return b"".join(parts)


# What a fresh log line starts with: a syslog/journal clock, an ISO date, SGLang's "[date", vLLM's "LEVEL mm-dd",
# a JSON entry, journalctl's own separator lines. A tqdm redraw starts with its description or the bar instead.
_LOG_HEAD = (
    rb"(?:[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d{4}-\d\d-\d\d"
    rb"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d|\{\"|-- (?:Boot|Logs begin|No entries))"
)
_CR_BEFORE_LOG = re.compile(rb"\r(?!\n)(?=" + _LOG_HEAD + rb")")
_LONE_CR = re.compile(rb"\r(?!\n)")


def cr_breaks(data: bytes) -> tuple[bytes, int]:
    """Lone carriage returns that end lines, made newlines; returns (data, how many). A text whose separators are
    mostly lone CRs (an old Mac file, `tr '\\n' '\\r'`) is CR-terminated: every lone CR ends a line. In a mixed text, a
    lone CR ends a line when a fresh log line follows it (a timestamp or a level prefix); one followed by anything
    else is a progress-bar redraw, collapsed later by formats.clean."""
    if b"\r" not in data:
        return data, 0
    lone = data.count(b"\r") - data.count(b"\r\n")
    if lone <= 0:
        return data, 0
    if lone >= 4 * data.count(b"\n"):
        return _LONE_CR.sub(b"\n", data), lone
    out, n = _CR_BEFORE_LOG.subn(b"\n", data)
    return out, n


def repair_lines(lines: list[str], origin: str = "<lines>") -> tuple[list[str], Damage]:
    """The same policy for lines given as text (the API's iterable source): NULs replaced, over-long lines cut
    (at LINE_CAP characters)."""
    dmg = Damage()
    out = lines
    for i, line in enumerate(lines):
        if "\x00" in line or len(line) > limits.LINE_CAP:
            if out is lines:
                out = list(lines)
            if "\x00" in line:
                dmg.nul_bytes += line.count("\x00")
                line = re.sub("\x00+", "\ufffd", line)
            if len(line) > limits.LINE_CAP:
                dmg.cut_lines += 1
                dmg.cut_bytes += len(line) - limits.LINE_CAP
                dmg.longest_line = max(dmg.longest_line, len(line))
                dmg.first_cut_line = dmg.first_cut_line or i + 1
                line = line[: limits.LINE_CAP] + f" \u2026[{len(line) - limits.LINE_CAP} characters cut]"
            out[i] = line
        if len(line) > limits.MATCH_CAP:
            dmg.long_lines += 1
    if dmg.nul_bytes:
        dmg.notes.append(f"{origin}: {dmg.nul_bytes} NUL characters replaced")
    if dmg.cut_lines:
        dmg.notes.append(f"{origin}: {dmg.cut_lines} lines longer than {limits.LINE_CAP} characters cut")
    return out, dmg


def _may_hold_line_over(data: bytes, cap: int) -> bool:
    """False when no line of `data` is longer than `cap` bytes; True when one may be (the exact regexes decide).
    A line longer than cap = 2s covers a whole s-byte window aligned on a multiple of s, so a newline in every such
    window rules it out: one memchr per s bytes, where the regexes step through every byte in Python's engine."""
    step = max(cap // 2, 1)
    find = data.find
    for pos in range(0, len(data), step):
        if find(b"\n", pos, pos + step) < 0:
            return True
    return False


def repair_chunk(data: bytes, dmg: Damage, lines_before: int) -> bytes:
    """`repair` for one chunk of a streamed file (stream.py): NUL runs replaced, lines over LINE_CAP cut, counted
    into `dmg` with line numbers of the whole input. The encoding was checked on the file's head."""
    if b"\r" in data:
        data, n = _CR_BEFORE_LOG.subn(b"\n", data)
        dmg.cr_lines += n
    if b"\x00" in data:
        n = data.count(b"\x00")
        if not dmg.nul_bytes:
            dmg.first_nul_line = lines_before + data.count(b"\n", 0, data.find(b"\x00")) + 1
        dmg.nul_bytes += n
        data = _NUL_RUN.sub(_REPLACEMENT, data)
    if len(data) <= limits.MATCH_CAP or not _may_hold_line_over(data, limits.MATCH_CAP):
        return data  # no line over MATCH_CAP, so none over LINE_CAP (LINE_CAP > MATCH_CAP)
    dmg.long_lines += sum(1 for _ in _OVER_MATCH_CAP.finditer(data))
    if len(data) > limits.LINE_CAP:
        part = Damage()
        data = _cut_long_lines(data, part)
        if part.cut_lines:
            dmg.first_cut_line = dmg.first_cut_line or lines_before + part.first_cut_line
            dmg.cut_lines += part.cut_lines
            dmg.cut_bytes += part.cut_bytes
            dmg.longest_line = max(dmg.longest_line, part.longest_line)
    return data


def chunk_notes(dmg: Damage, origin: str) -> list[str]:
    """The warnings `repair` would have given for the whole input."""
    notes = []
    if dmg.nul_bytes:
        notes.append(
            f"{origin}: {dmg.nul_bytes} NUL byte{'s' if dmg.nul_bytes > 1 else ''} replaced"
            f" (first at line {dmg.first_nul_line}; each run by one U+FFFD)"
        )
    if dmg.cut_lines:
        notes.append(
            f"{origin}: {dmg.cut_lines} line{'s' if dmg.cut_lines > 1 else ''} longer than "
            f"{limits.human(limits.LINE_CAP)} cut to the first {limits.human(limits.LINE_CAP)} "
            f"({dmg.cut_bytes} bytes cut; first at line {dmg.first_cut_line}, "
            f"longest {dmg.longest_line / 1e6:.1f} MB)"
        )
    return notes
