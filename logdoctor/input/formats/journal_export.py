"""journalctl -o export: entries of KEY=value lines separated by blank lines; a value with newlines or binary
bytes is written as KEY\\n + uint64 LE length + raw bytes + \\n. Parsed at the byte level (before any decoding)."""

from __future__ import annotations

import struct

from logdoctor.core.lean import dataclass


@dataclass(slots=True)
class ExportEntry:
    """One entry of `journalctl -o export` output with the input lines it spans."""

    fields: dict[str, str]
    first_line: int  # 1-based input line where the entry starts
    last_line: int


def looks_like_export(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\n")
    return (
        head.startswith((b"__CURSOR=", b"__REALTIME_TIMESTAMP=", b"__SEQNUM="))
        and b"\n_BOOT_ID=" in data[:8192]
        or head.startswith(b"__CURSOR=s=")
    )


def parse_export(data: bytes) -> tuple[list[ExportEntry], list[tuple[int, str]]]:
    """Return (entries, bad) where bad lists (line number, reason) for fragments that could not be read.

    Line numbers count newline-terminated lines of the input, binary fields included, so evidence can point at them.
    """
    entries: list[ExportEntry] = []
    bad: list[tuple[int, str]] = []
    pos, line_no, n = 0, 1, len(data)
    cur: dict[str, str] = {}
    start = 1
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            nl = n
        raw = data[pos:nl]
        if not raw:
            if cur:
                entries.append(ExportEntry(cur, start, line_no - 1))
                cur = {}
            pos, line_no = nl + 1, line_no + 1
            start = line_no
            continue
        eq = raw.find(b"=")
        if eq > 0:
            key = raw[:eq].decode("ascii", "replace")
            cur[key] = raw[eq + 1 :].decode("utf-8", "replace")
            pos, line_no = nl + 1, line_no + 1
            continue
        # binary field: KEY\n <u64 length> <bytes> \n
        key = raw.decode("ascii", "replace")
        if nl + 9 > n:
            bad.append((start, f"entry cut inside binary field {key!r} (truncated export)"))
            cur = {}
            break
        (length,) = struct.unpack("<Q", data[nl + 1 : nl + 9])
        vstart = nl + 9
        if length > n - vstart:
            bad.append((start, f"entry cut inside binary field {key!r}: it claims {length} bytes (truncated export)"))
            cur = {}
            break
        value = data[vstart : vstart + length]
        cur[key] = value.decode("utf-8", "replace")
        line_no += 1 + value.count(b"\n") + data[nl + 1 : nl + 9].count(b"\n")
        pos = vstart + length
        if pos < n and data[pos : pos + 1] == b"\n":
            pos += 1
    if cur:
        entries.append(ExportEntry(cur, start, line_no - 1 if pos >= n else line_no))
    return entries, bad
