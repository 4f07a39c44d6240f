"""Test helper: journal export format <-> Python, and real .journal files via systemd-journal-remote.

    write_export(entries) -> bytes        entries: list of {FIELD: str | bytes}
    read_export(data) -> list[dict]        the inverse (values as bytes)
    make_journal(entries, path) -> Path    runs systemd-journal-remote; checks that every entry was written
    journal_file                           pytest fixture: a factory journal_file(entries_or_export, name=...) -> Path

Every entry must carry __REALTIME_TIMESTAMP: systemd-journal-remote silently drops a leading entry without it (rc
stays 0; a later one silently inherits the previous entry's timestamp, boot id and monotonic time), so write_export
refuses such entries and make_journal checks the "writing N entries" count on stderr.
The .journal files are 8 MiB each (preallocated): build them in tmp_path, never commit them.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

JOURNAL_REMOTE_CANDIDATES = (
    "/lib/systemd/systemd-journal-remote",
    "/usr/lib/systemd/systemd-journal-remote",
    "/usr/libexec/systemd/systemd-journal-remote",
)

_FIELD_NAME = re.compile(r"_{0,2}[A-Z0-9][A-Z0-9_]*")

ExportEntry = Mapping[str, "str | bytes"]


def journal_remote() -> str | None:
    """Path of systemd-journal-remote, or None when it is not installed."""
    for p in JOURNAL_REMOTE_CANDIDATES:
        if os.access(p, os.X_OK):
            return p
    return None


def _needs_binary(value: bytes) -> bool:
    if any(c < 0x20 or c == 0x7F for c in value):  # newline, ESC, TAB, CR, NUL, ...
        return True
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def write_export(entries: Sequence[ExportEntry]) -> bytes:
    """Serialise entries in the journal export format (systemd.io/JOURNAL_EXPORT_FORMATS).

    Single-line printable values are written as ``KEY=value``; anything with a newline, a control byte or invalid
    UTF-8 uses the binary-safe form ``KEY\\n`` + uint64 LE length + raw bytes + ``\\n``. A blank line ends an entry.
    """
    out = bytearray()
    for i, entry in enumerate(entries):
        if "__REALTIME_TIMESTAMP" not in entry:
            raise ValueError(f"entry {i} has no __REALTIME_TIMESTAMP: systemd-journal-remote would drop it")
        for key, value in entry.items():
            if not _FIELD_NAME.fullmatch(key):
                raise ValueError(f"entry {i}: invalid journal field name {key!r}")
            raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
            if _needs_binary(raw):
                out += key.encode("ascii") + b"\n" + struct.pack("<Q", len(raw)) + raw + b"\n"
            else:
                out += key.encode("ascii") + b"=" + raw + b"\n"
        out += b"\n"
    return bytes(out)


def read_export(data: bytes) -> list[dict[str, bytes]]:
    """Parse export-format bytes back into entries (values as bytes). Repeated fields keep the first value."""
    entries: list[dict[str, bytes]] = []
    cur: dict[str, bytes] = {}
    pos, n = 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:
            raise ValueError(f"export data ends inside a field at byte {pos}")
        line = data[pos:nl]
        if not line:  # blank line: end of entry
            if cur:
                entries.append(cur)
            cur = {}
            pos = nl + 1
            continue
        eq = line.find(b"=")
        if eq >= 0:
            cur.setdefault(line[:eq].decode("ascii"), line[eq + 1 :])
            pos = nl + 1
        else:
            (size,) = struct.unpack("<Q", data[nl + 1 : nl + 9])
            start = nl + 9
            cur.setdefault(line.decode("ascii"), data[start : start + size])
            if data[start + size : start + size + 1] != b"\n":
                raise ValueError(f"binary field {line!r} is not followed by a newline")
            pos = start + size + 1
    if cur:
        entries.append(cur)
    return entries


def make_journal(entries: Sequence[ExportEntry] | bytes, path: str | os.PathLike[str]) -> Path:
    """Write a real .journal file at ``path`` from entries (or export bytes) with systemd-journal-remote.

    Raises RuntimeError when journal-remote fails or writes fewer entries than given, FileNotFoundError when it is
    not installed (the ``journal_file`` fixture turns that into a skip).
    """
    exe = journal_remote()
    if exe is None:
        raise FileNotFoundError("systemd-journal-remote is not installed (apt-get install systemd-journal-remote)")
    path = Path(path)
    if path.suffix != ".journal":
        raise ValueError(f"{path}: systemd-journal-remote needs a name ending in .journal")
    if isinstance(entries, (bytes, bytearray)):
        data = bytes(entries)
        expected = len(read_export(data))
    else:
        data = write_export(entries)
        expected = len(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # journal-remote appends to an existing file
    env = dict(os.environ, SYSTEMD_LOG_LEVEL="info", SYSTEMD_LOG_TARGET="console", SYSTEMD_LOG_COLOR="0")
    proc = subprocess.run([exe, "-o", str(path), "-"], input=data, capture_output=True, env=env, timeout=60)
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise RuntimeError(f"systemd-journal-remote failed (rc {proc.returncode}): {err.strip()}")
    m = re.search(r"writing (\d+) entries", err)
    if not m or int(m[1]) != expected:
        raise RuntimeError(
            f"systemd-journal-remote wrote {m[1] if m else '?'} of {expected} entries "
            f"(an entry without __REALTIME_TIMESTAMP or a malformed field is dropped): {err.strip()}"
        )
    return path


@pytest.fixture
def journal_file(tmp_path: Path) -> Callable[..., Path]:
    """Factory: ``journal_file(entries | export_bytes | export_path, name="test.journal") -> Path``.

    Builds a real journal file in tmp_path; skips the test when systemd-journal-remote is not installed.
    """
    if journal_remote() is None:
        pytest.skip("systemd-journal-remote is not installed (apt-get install systemd-journal-remote)")

    def make(source: Sequence[ExportEntry] | bytes | os.PathLike[str], name: str = "test.journal") -> Path:
        if isinstance(source, os.PathLike):
            source = Path(source).read_bytes()
        return make_journal(source, tmp_path / name)

    return make
