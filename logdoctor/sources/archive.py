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


class Expansion:
    """Iterate the decompressed chunks of `data` (every concatenated member/stream), at most `cap` bytes in all;
    after the iteration `stopped` says why the output ended early (truncated or corrupt data, or the cap), or is
    None when the archive was read whole. A streaming reader consumes the chunks; `expand` collects them."""

    def __init__(self, data: bytes, kind: str, cap: int = limits.EXPANDED_CAP):
        self.data, self.kind, self.cap = data, kind, cap
        self.size = 0
        self.stopped: str | None = None

    def _after(self) -> str:
        return f" after {self.size} decompressed bytes" if self.size else ""

    def __iter__(self):
        kind, cap = self.kind, self.cap
        rest = self.data
        while rest:
            d = _decompressor(kind)
            pos = 0
            try:
                for pos in range(0, len(rest), _FEED):
                    buf = rest[pos:pos + _FEED]
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
            except _ERRORS as exc:
                self.stopped = f"corrupt {kind} data{self._after()} ({_short(exc)})"
                return
            if self.size >= cap and not (d.eof and not d.unused_data.strip(b"\x00") and pos + _FEED >= len(rest)):
                self.stopped = f"stopped at the {limits.human(cap)} cap on decompressed size"
                return
            if not d.eof:
                self.stopped = f"the {kind} data is truncated" + (f" (ends{self._after()})" if self.size else "")
                return
            # the next member/stream (gzip -c a b > c.gz, pigz, rotated logs concatenated)
            rest = d.unused_data + rest[pos + _FEED:]
            if kind == "gzip":
                rest = rest.lstrip(b"\x00")   # zero padding after the last member
            if rest and not rest.startswith(_MAGIC[kind]):
                return  # trailing garbage after a complete archive: ignored, as gzip -d does


def expand(data: bytes, kind: str, origin: str, cap: int = limits.EXPANDED_CAP) -> tuple[bytearray, str | None]:
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
