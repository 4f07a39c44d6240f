"""Streamed decompression with a cap on the expanded size, keeping what a damaged archive still yields.

A truncated .gz (a log copied while it was written, a full disk) holds a readable head: that part is diagnosed and
a note says where the data stopped. Only an archive that yields nothing is refused. A decompression bomb stops at
limits.EXPANDED_CAP instead of filling memory.
"""
from __future__ import annotations

import bz2
import lzma
import zlib

from logdoctor import limits
from logdoctor.errors import InputError

_CHUNK = 1 << 20     # most output bytes per decompress call
_FEED = 256 << 10    # compressed bytes fed per call (zlib copies its unconsumed input on every call)
_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError)


def _decompressor(kind: str):
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "xz":
        return lzma.LZMADecompressor()
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    raise ValueError(kind)


def _step(d, kind: str, data: bytes, room: int) -> bytes:
    if kind == "gzip":
        return d.decompress(data, room)
    return d.decompress(data, max_length=room)


def _pending(d, kind: str) -> bytes | None:
    """Input the decompressor holds back because max_length stopped it (None when it needs more input)."""
    if kind == "gzip":
        return d.unconsumed_tail or None
    return b"" if not d.needs_input and not d.eof else None


class Stream:
    """A file's first bytes plus the rest still unread, so that decompression reads a pipe or a file chunk by chunk
    and stops at the cap (`gzip < /dev/zero | logdoctor explain` ends). Indexing sees the first bytes only (magic)."""

    def __init__(self, head: bytes, fh):
        self.head, self.fh = head, fh

    def __getitem__(self, index):
        return self.head[index]

    def chunks(self):
        yield self.head
        while True:
            chunk = self.fh.read(_FEED)
            if not chunk:
                return
            yield chunk


def _chunks(data):
    if isinstance(data, Stream):
        return data.chunks()
    return (data[pos:pos + _FEED] for pos in range(0, len(data), _FEED))


class Expansion:
    """Iterate the decompressed chunks of `data` (bytes or a Stream; every concatenated member/stream), at most `cap`
    bytes in all; after the iteration `stopped` says why the output ended early (truncated or corrupt data, or the
    cap), or is None when the archive was read whole. A streaming reader consumes the chunks; `expand` collects
    them."""

    def __init__(self, data, kind: str, cap: int = limits.EXPANDED_CAP):
        self.data, self.kind, self.cap = data, kind, cap
        self.size = 0
        self.stopped: str | None = None

    def _after(self) -> str:
        return f" after {self.size} decompressed bytes" if self.size else ""

    def __iter__(self):
        kind, cap = self.kind, self.cap
        feed = _chunks(self.data)
        buf = next(feed, b"")
        while buf:
            d = _decompressor(kind)
            try:
                while True:
                    while True:   # drain: max_length keeps each chunk (and the overshoot of the cap) small
                        chunk = _step(d, kind, buf, min(_CHUNK, cap - self.size))
                        if chunk:
                            self.size += len(chunk)
                            yield chunk
                        if self.size >= cap or d.eof:
                            break
                        pend = _pending(d, kind)
                        if pend is None:
                            break
                        buf = pend
                    if self.size >= cap or d.eof:
                        break
                    buf = next(feed, None)
                    if buf is None:
                        break
            except _ERRORS as exc:
                self.stopped = f"corrupt {kind} data{self._after()} ({_short(exc)})"
                return
            if not d.eof:
                self.stopped = (f"stopped at the {limits.human(cap)} cap on decompressed size" if self.size >= cap
                                else f"the {kind} data is truncated" + (f" (ends{self._after()})" if self.size else ""))
                return
            # the next member/stream (gzip -c a b > c.gz, pigz, rotated logs concatenated)
            buf = d.unused_data
            while len(buf) < 8:
                more = next(feed, None)
                if more is None:
                    break
                buf += more
            if kind == "gzip":
                buf = buf.lstrip(b"\x00")   # zero padding after the last member
            if buf and not buf.startswith(_MAGIC[kind]):
                return  # trailing garbage after a complete archive: ignored, as gzip -d does
            if buf and self.size >= cap:
                self.stopped = f"stopped at the {limits.human(cap)} cap on decompressed size"
                return


def expand(data, kind: str, origin: str, cap: int = limits.EXPANDED_CAP) -> tuple[bytearray, str | None]:
    """All of an Expansion in one bytearray (grown in place, so the peak stays near the output size, not twice it).
    Raises InputError only when nothing came out."""
    exp = Expansion(data, kind, cap)
    out = bytearray()
    for chunk in exp:
        out += chunk
    if not out:
        raise InputError(f"{origin}: nothing could be read: {exp.stopped or f'empty {kind} data'}")
    return out, exp.stopped


_MAGIC = {"gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "bzip2": b"BZh"}


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:120]
