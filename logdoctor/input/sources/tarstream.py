"""Tar members one at a time from a stream, with every header field bounded and nothing kept per member.

Python's `tarfile` reads a GNU long-name or PAX header's whole payload into memory (a 2 GiB name took 6 GB), keeps
a record of every member in stream mode (100 MB for 200 000 members), expands sparse members to their full size,
and stops the archive at the first error. Here:
- a long-name / PAX header over limits.TAR_HEADER_CAP is skipped by its raw bytes and its member named unreadable;
- each member's body is a reader bounded to its size; whatever the caller leaves unread is skipped as raw bytes
  (seeked over in a plain file), never decompressed or parsed;
- symlinks, hard links, devices, FIFOs and sparse members are yielded with `skip` set, so they are listed;
- only a header that fails its checksum ends the archive (`TarError`, naming the byte offset).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from logdoctor.core import limits

BLOCK = 512
_KINDS = {
    b"0": "file",
    b"\x00": "file",
    b"7": "file",
    b"1": "hard link",
    b"2": "symlink",
    b"3": "character device",
    b"4": "block device",
    b"5": "directory",
    b"6": "FIFO",
    b"S": "sparse file",
    b"V": "volume label",
    b"M": "multi-volume continuation",
    b"D": "directory",
}


class TarError(Exception):
    """The archive cannot be read on from here (a header that fails its checksum, data cut short)."""


def is_tar(head: bytes) -> bool:
    """POSIX ustar or GNU tar: the magic at offset 257 of the first header, and a valid checksum."""
    return len(head) >= 262 and head[257:262] == b"ustar" and _checksum_ok(head[:BLOCK])


@dataclass
class Member:
    name: str
    size: int
    mtime: float
    kind: str  # file, symlink, hard link, directory, FIFO, character device, sparse file, ...
    skip: str | None = None  # why its data is not read (a link, a device, a header over its cap)
    body: Any = None  # a regular member's data (an io.BufferedReader bounded to `size`)


def _checksum_ok(block: bytes) -> bool:
    try:
        want = _num(block[148:156])
    except TarError:
        return False
    got = sum(block[:148]) + 8 * 32 + sum(block[156:BLOCK])
    return want == got


def _num(field: bytes) -> int:
    if field[:1] and field[0] & 0x80:  # GNU base-256
        if field[0] == 0xFF:
            raise TarError("negative number in a tar header")
        return int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
    text = field.split(b"\x00", 1)[0].strip(b" ")
    try:
        return int(text, 8) if text else 0
    except ValueError:
        raise TarError(f"bad number {text[:20]!r} in a tar header") from None


def _name(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", "replace")


class _Body(io.RawIOBase):
    """The next `size` bytes of the archive stream."""

    def __init__(self, fh, size: int):
        self.fh, self.left = fh, size

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.left <= 0:
            return 0
        n = min(len(b), self.left)
        data = self.fh.read(n)
        b[: len(data)] = data
        self.left -= len(data)
        if not data:
            self.left = 0
            raise EOFError("the tar archive ends inside this member")
        return len(data)


class TarReader:
    """`for m in TarReader(fh)`: each member once, in order; `offset` is the byte offset reached."""

    def __init__(self, fh):
        self.fh = fh
        self.offset = 0
        self.members = 0
        self._seek = _seekable(fh)

    def _read(self, n: int) -> bytes:
        data = self.fh.read(n)
        self.offset += len(data)
        return data

    def _exact(self, n: int) -> bytes:
        parts, left = [], n
        while left:
            data = self._read(min(left, 1 << 20))
            if not data:
                raise TarError(f"the tar archive is cut short at byte {self.offset}")
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def _skip(self, n: int) -> None:
        """Skip raw bytes: seek in a plain file, else read and drop (never decoded)."""
        if n <= 0:
            return
        if self._seek:
            end = os.fstat(self.fh.fileno()).st_size
            if self.fh.tell() + n > end:
                self.fh.seek(end)
                raise TarError(f"the tar archive is cut short at byte {end}")
            self.fh.seek(n, os.SEEK_CUR)
            self.offset += n
            return
        left = n
        while left:
            data = self._read(min(left, 1 << 20))
            if not data:
                raise TarError(f"the tar archive is cut short at byte {self.offset}")
            left -= len(data)

    def _header(self) -> bytes | None:
        """The next header block, checked; None at the end of the archive."""
        at = self.offset
        block = self._read(BLOCK)
        if not block or block == bytes(len(block)):
            return None  # the end-of-archive zero block (or none: a tar cut right after a member, read whole)
        if len(block) < BLOCK:
            raise TarError(f"the tar archive is cut short at byte {self.offset}")
        if not _checksum_ok(block):
            raise TarError(f"bad tar header at byte {at} (checksum); the rest of the archive is not read")
        return block

    def _extended(self, typ: bytes, size: int, padded: int, ext: _Extended) -> None:
        """A GNU long-name or PAX header: its payload goes into `ext` for the member that follows, unless it is
        over its cap (then it is skipped as raw bytes, and that member is refused)."""
        if size > limits.TAR_HEADER_CAP:
            self._skip(size + padded)
            what = "long-name" if typ in (b"L", b"K") else "PAX"
            ext.refused = f"its {what} header is {size} bytes (limit {limits.human(limits.TAR_HEADER_CAP)})"
            return
        data = self._exact(size)
        self._skip(padded)
        if typ == b"L":
            ext.long_name = _name(data)
        elif typ in (b"x", b"X"):
            ext.pax = _pax(data)

    def __iter__(self) -> Iterator[Member]:
        ext = _Extended()
        while True:
            block = self._header()
            if block is None:
                return
            typ = block[156:157]
            size = _num(block[124:136])
            padded = -size % BLOCK
            if typ in (b"L", b"K", b"x", b"g", b"X"):
                self._extended(typ, size, padded, ext)
                continue
            pax = ext.pax
            name = ext.long_name or pax.get("path") or _ustar_name(block)
            size = int(pax["size"]) if pax.get("size", "").isdigit() else size
            kind = _KINDS.get(typ, f"type {typ!r}")
            if any(k.startswith("GNU.sparse.") for k in pax):
                kind = "sparse file"
            name, skip = _refusal(typ, kind, name, ext.refused)
            ext = _Extended()
            if typ == b"S":  # old GNU sparse: more sparse-map blocks may follow the header
                more = block[482]
                while more:
                    more = self._exact(BLOCK)[504]
            self.members += 1
            raw = _Body(self.fh, size) if skip is None and size else None
            body = io.BufferedReader(raw, 1 << 16) if raw is not None else None
            yield Member(name, size, float(_safe_num(block[136:148])), kind, skip, body)
            self._skip(self._unread(raw, typ, size) + padded)

    def _unread(self, raw: _Body | None, typ: bytes, size: int) -> int:
        """How much of the member's data the caller left unread (all of it when it was not offered; links,
        devices, FIFOs and directories store none)."""
        if raw is not None:
            self.offset += size - raw.left
            return raw.left
        return 0 if typ in (b"1", b"2", b"3", b"4", b"5", b"6") else size


@dataclass
class _Extended:
    """What extended headers (GNU long name, PAX) said about the member that follows them."""

    long_name: str | None = None
    pax: dict[str, str] = field(default_factory=dict)
    refused: str | None = None  # why that member is not read (an extended header over its cap)


def _refusal(typ: bytes, kind: str, name: str, refused: str | None) -> tuple[str, str | None]:
    """The member's name (cut when over its cap) and why its data is not read, or None: a refused extended
    header, an over-long name, anything but a regular file, or a sparse file."""
    skip = refused
    if len(name.encode("utf-8", "replace")) > limits.TAR_NAME_CAP:
        skip = skip or f"member name of {len(name.encode('utf-8', 'replace'))} bytes"
        name = name[:120] + "…"
    if skip is None and kind != "file":
        skip = f"a {kind}, not read" if kind != "directory" else "a directory"
    if typ == b"S" or kind == "sparse file":
        skip = skip if skip and kind != "sparse file" else "a sparse file (holes are not stored); extract it first"
    return name, skip


def _safe_num(field: bytes) -> int:
    try:
        return _num(field)
    except TarError:
        return 0


def _ustar_name(block: bytes) -> str:
    name = _name(block[0:100])
    if block[257:263] == b"ustar\x00":  # POSIX: a prefix field
        prefix = _name(block[345:500])
        if prefix:
            return prefix + "/" + name
    return name


def _pax(data: bytes) -> dict[str, str]:
    """PAX extended header records ("%d %s=%s\\n"); a malformed record ends the parse (the fields so far stay)."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        sp = data.find(b" ", pos, pos + 20)
        if sp < 0:
            break
        try:
            length = int(data[pos:sp])
        except ValueError:
            break
        if length <= sp - pos or pos + length > len(data):
            break
        rec = data[sp + 1 : pos + length - 1]
        key, eq, value = rec.partition(b"=")
        if eq:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        pos += length
    return out


def _seekable(fh) -> bool:
    """A plain file (not a pipe, not a decompressing stream): members are skipped by seeking."""
    import stat

    try:
        return bool(fh.seekable()) and stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
