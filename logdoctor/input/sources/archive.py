"""The one decompression of explain and triage: streamed, capped, and keeping what a damaged archive still yields.

Both paths (explain reads an input whole, triage streams it) open a compressed input through `open_layers` (or
`Expansion` directly), so they agree on every damaged or lying archive (issue 18 point 8):
- gzip is parsed here, not by zlib's wrapper: a wrong CRC or ISIZE trailer keeps the data that decompressed, with a
  note, as `gzip -d` does; a wrong header CRC or reserved flag bits are noted and read on; header fields (FEXTRA,
  FNAME, FCOMMENT) are bounded; trailing garbage after a complete member is ignored with a note;
- xz, bzip2 and zstd (the `zstandard` package) are streamed the same way; every concatenated member or frame is read;
- a truncated or corrupt stream keeps its head: `stopped` says where it ended;
- the output is capped per input (`cap`) and, through a shared `Budget`, per run; past limits.EXPANDED_CAP an input
  that expands more than limits.BOMB_RATIO times its compressed size is a bomb and stops there.
Nothing here raises for damaged data; only a missing zstandard package is an InputError.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator

from logdoctor.core import limits
from logdoctor.core.errors import InputError
from logdoctor.core.lean import dataclass, field

_CHUNK = 1 << 20  # most output bytes per decompress call
_FEED = 256 << 10  # compressed bytes fed per call (zlib copies its unconsumed input on every call)
# (+ lzma.LZMAError for xz: lzma and bz2 are imported only to read such a file, not on every explain's path)
_ERRORS = (OSError, EOFError, zlib.error, ValueError)
MAGIC = {"gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00", "bzip2": b"BZh", "zstd": b"\x28\xb5\x2f\xfd"}
MAX_LAYERS = 3  # gzip of xz of ...: deeper nesting is not a log


def sniff(head: bytes) -> str | None:
    """The compression named by the magic bytes at the start of `head`, or None."""
    for kind, magic in MAGIC.items():
        if head.startswith(magic):
            return kind
    return None


class _Bad(Exception):
    """Damaged compressed data (a bad header field): the stream stops there, with what came out so far."""


class Budget:
    """Decompressed bytes left to a whole run (triage: every layer of every input of one task), shared by the
    Expansions of that run."""

    def __init__(self, total: int):
        self.total = total
        self.left = total


class Stream:
    """A file's first bytes plus the rest still unread, so that decompression reads a pipe or a file chunk by chunk
    and stops at the cap (`gzip < /dev/zero | logdoctor explain` ends). Indexing sees the first bytes only (magic)."""

    def __init__(self, head: bytes, fh):
        self.head, self.fh = head, fh

    def __getitem__(self, index):
        return self.head[index]

    def read(self, n: int = -1) -> bytes:
        if self.head:
            out, self.head = (self.head, b"") if n < 0 else (self.head[:n], self.head[n:])
            return out
        return self.fh.read(n)


def _chunks(data) -> Iterator[bytes]:
    if hasattr(data, "read"):
        while True:
            piece = data.read(_FEED)
            if not piece:
                return
            yield bytes(piece)
    else:
        view = memoryview(data)
        for pos in range(0, len(data), _FEED):
            yield bytes(view[pos : pos + _FEED])


class _Source:
    """Compressed bytes pulled in pieces; small header fields are taken exactly, the rest fed piece by piece."""

    def __init__(self, data):
        self._feed = _chunks(data)
        self.buf = b""
        self.pulled = 0  # compressed bytes read so far (the bomb ratio)

    def _pull(self) -> bool:
        more = next(self._feed, None)
        if more is None:
            return False
        self.pulled += len(more)
        self.buf += more
        return True

    def fill(self, n: int) -> bool:
        while len(self.buf) < n:
            if not self._pull():
                return False
        return True

    def take(self, n: int) -> bytes | None:
        if not self.fill(n):
            return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def take_zstring(self, what: str) -> bytes:
        """A NUL-terminated gzip header field, at most limits.GZIP_FIELD_CAP bytes."""
        start = 0
        while True:
            end = self.buf.find(b"\x00", start)
            if end >= 0:
                out, self.buf = self.buf[: end + 1], self.buf[end + 1 :]
                return out
            if len(self.buf) > limits.GZIP_FIELD_CAP:
                raise _Bad(f"the gzip {what} field runs past {limits.human(limits.GZIP_FIELD_CAP)} without its end")
            start = len(self.buf)
            if not self._pull():
                raise _Bad(f"the gzip header ends inside its {what} field")

    def piece(self) -> bytes | None:
        if self.buf:
            out, self.buf = self.buf, b""
            return out
        if not self._pull():
            return None
        out, self.buf = self.buf, b""
        return out

    def unread(self, data: bytes) -> None:
        self.buf = data + self.buf


class _SourceFile:
    """_Source as the file object zstandard's stream_reader pulls from."""

    def __init__(self, src: _Source):
        self.src = src

    def read(self, n: int = -1) -> bytes:
        piece = self.src.piece()
        if piece is None:
            return b""
        if 0 <= n < len(piece):
            self.src.unread(piece[n:])
            piece = piece[:n]
        return piece


class Expansion:
    """Iterate the decompressed chunks of `data` (bytes, a Stream or a binary file object; every concatenated
    member/frame), at most `cap` bytes (and what `budget` has left). After the iteration `stopped` says why the
    output ended early (truncated or corrupt data, a cap), or is None when the archive was read whole; `notes` holds
    what was read despite damage (a wrong trailer CRC, trailing garbage)."""

    def __init__(
        self, data, kind: str, cap: int = limits.EXPANDED_CAP, budget: Budget | None = None, origin: str = "<input>"
    ):
        self.data, self.kind, self.cap, self.budget, self.origin = data, kind, cap, budget, origin
        self.size = 0
        self.stopped: str | None = None
        self.notes: list[str] = []
        self._src: _Source | None = None

    def _after(self) -> str:
        return f" after {self.size} decompressed bytes" if self.size else ""

    def _room(self) -> int:
        room = min(_CHUNK, self.cap - self.size)
        if self.budget is not None:
            room = min(room, self.budget.left)
        if (
            self.size > limits.EXPANDED_CAP
            and self._src is not None
            and self.size > limits.BOMB_RATIO * max(1, self._src.pulled)
        ):
            return 0
        return room

    def _full(self) -> str:
        if self.size >= self.cap:
            return f"stopped at the {limits.human(self.cap)} cap on decompressed size"
        if self.budget is not None and self.budget.left <= 0:
            return f"stopped at the run's {limits.human(self.budget.total)} cap on decompressed size (all inputs)"
        return (
            f"stopped after {limits.human(self.size)}: it expands more than {limits.BOMB_RATIO} times its"
            " compressed size (a decompression bomb)"
        )

    def _out(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        if self.budget is not None:
            self.budget.left -= len(chunk)
        return chunk

    def __iter__(self) -> Iterator[bytes]:
        self._src = src = _Source(self.data)
        body = self._gzip if self.kind == "gzip" else self._zstd if self.kind == "zstd" else self._other
        lib_error: tuple = ()
        if self.kind == "xz":
            import lzma

            lib_error = (lzma.LZMAError,)
        elif self.kind == "zstd":
            try:
                import zstandard

                lib_error = (zstandard.ZstdError,)
            except ImportError:
                raise InputError(
                    f"{self.origin}: zstd-compressed; reading it needs the zstandard package (pip install"
                    " zstandard), or decompress it first (zstd -dc FILE | logdoctor explain)"
                ) from None
        try:
            yield from body(src)
        except (*_ERRORS, _Bad, *lib_error) as exc:
            self.stopped = f"corrupt {self.kind} data{self._after()} ({_short(exc)})"

    # --- gzip, parsed by hand: a lying header or trailer is noted, not fatal ------------------------------------

    def _gzip(self, src: _Source) -> Iterator[bytes]:
        member = 0
        while True:
            try:
                self._gzip_header(src)
            except _Bad as exc:
                if not member:
                    raise
                # a complete member followed by junk that starts with the magic: ignored, as gzip -d does
                self.notes.append(f"data after the end of the gzip data ignored ({exc}), as gzip -d does")
                return
            d = zlib.decompressobj(-15)
            crc = size = 0
            buf = src.piece()
            while True:
                if buf is None:
                    tail = d.flush()
                    if tail:
                        crc, size = zlib.crc32(tail, crc), size + len(tail)
                        yield self._out(tail)
                    if not d.eof:
                        self.stopped = f"the gzip data is truncated{f' (ends{self._after()})' if self.size else ''}"
                        return
                    break
                room = self._room()
                if room <= 0:
                    self.stopped = self._full()
                    return
                chunk = d.decompress(buf, room)
                if chunk:
                    crc, size = zlib.crc32(chunk, crc), size + len(chunk)
                    yield self._out(chunk)
                if d.eof:
                    break
                buf = d.unconsumed_tail or src.piece()
            src.unread(d.unused_data)
            member += 1
            trailer = src.take(8)
            if trailer is None:
                self.notes.append(f"gzip member {member} has no complete trailer (CRC and length unchecked)")
                return
            want_crc, want_size = struct.unpack("<II", trailer)
            if want_crc != crc & 0xFFFFFFFF or want_size != size & 0xFFFFFFFF:
                what = "CRC" if want_crc != crc & 0xFFFFFFFF else "length"
                self.notes.append(
                    f"the {what} in gzip member {member}'s trailer does not match its data; the"
                    f" {size} decompressed bytes are kept, as gzip -d does"
                )
            while src.fill(1) and src.buf[:1] == b"\x00":  # zero padding after the last member
                src.buf = src.buf.lstrip(b"\x00")
            if not src.fill(2):
                return
            if not src.buf.startswith(MAGIC["gzip"]):
                self.notes.append("data after the end of the gzip data ignored, as gzip -d does")
                return
            if self._room() <= 0:
                self.stopped = self._full()
                return

    def _gzip_header(self, src: _Source) -> None:
        head = src.take(10)
        if head is None:
            raise _Bad("the gzip header is cut short")
        if head[:2] != MAGIC["gzip"]:
            raise _Bad("not gzip data")
        if head[2] != 8:
            raise _Bad(f"unknown gzip compression method {head[2]}")
        flags = head[3]
        if flags & 0xE0:
            self.notes.append(f"reserved gzip header flags set (0x{flags & 0xE0:02x}); read anyway")
        header = head
        if flags & 4:  # FEXTRA: a 2-byte length (so at most 64 KiB)
            xlen = src.take(2)
            extra = src.take(int.from_bytes(xlen, "little")) if xlen is not None else None
            if xlen is None or extra is None:
                raise _Bad("the gzip header ends inside its extra field")
            header += xlen + extra
        if flags & 8:
            header += src.take_zstring("file name")
        if flags & 16:
            header += src.take_zstring("comment")
        if flags & 2:
            hcrc = src.take(2)
            if hcrc is None:
                raise _Bad("the gzip header is cut short")
            if int.from_bytes(hcrc, "little") != zlib.crc32(header) & 0xFFFF:
                self.notes.append("the gzip header CRC does not match the header; read anyway")

    # --- xz, bzip2: the library parses the container; every concatenated stream is read --------------------------

    def _other(self, src: _Source) -> Iterator[bytes]:
        import bz2
        import lzma

        kind = self.kind
        buf = src.piece()
        while buf:
            d: lzma.LZMADecompressor | bz2.BZ2Decompressor = (
                lzma.LZMADecompressor() if kind == "xz" else bz2.BZ2Decompressor()
            )
            while True:
                room = self._room()
                if room <= 0:
                    self.stopped = self._full()
                    return
                chunk = d.decompress(buf, max_length=room)
                if chunk:
                    yield self._out(chunk)
                if d.eof:
                    break
                buf = b""
                if d.needs_input:
                    nxt = src.piece()
                    if nxt is None:
                        self.stopped = f"the {kind} data is truncated{f' (ends{self._after()})' if self.size else ''}"
                        return
                    buf = nxt
            src.unread(d.unused_data)
            if kind == "xz":  # stream padding
                while src.fill(1) and src.buf[:1] == b"\x00":
                    src.buf = src.buf.lstrip(b"\x00")
            if not src.fill(len(MAGIC[kind])):
                return
            if not src.buf.startswith(MAGIC[kind]):
                self.notes.append(f"data after the end of the {kind} data ignored")
                return
            buf = src.piece()

    # --- zstd ------------------------------------------------------------------------------------------------

    def _zstd(self, src: _Source) -> Iterator[bytes]:
        import zstandard

        # the decoder's window is bounded by libzstd's default limit (128 MiB), so a frame cannot demand GBs
        reader = zstandard.ZstdDecompressor().stream_reader(_SourceFile(src), read_across_frames=True)  # type: ignore[arg-type]
        while True:
            room = self._room()
            if room <= 0:
                self.stopped = self._full()
                return
            chunk = reader.read(room)
            if not chunk:
                return
            yield self._out(chunk)


class Reader(io.RawIOBase):
    """An Expansion as a binary file object (wrap it in io.BufferedReader for peek/readline)."""

    def __init__(self, exp: Expansion):
        self.exp = exp
        self._it = iter(exp)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not len(self._pending):
            nxt = next(self._it, None)
            if nxt is None:
                return 0
            self._pending = memoryview(nxt)
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n


class _Raw(io.RawIOBase):
    """Any object with read(n) as a raw binary file (for io.BufferedReader)."""

    def __init__(self, fh):
        self.fh = fh

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.fh.read(len(b))
        b[: len(data)] = data
        return len(data)


@dataclass
class Opened:
    """A binary stream with every compression layer (by magic) undone: `stream` has read/peek/readline."""

    stream: io.BufferedReader
    layers: list[Expansion] = field(default_factory=list)

    @property
    def compression(self) -> str | None:
        return "+".join(x.kind for x in self.layers) or None

    @property
    def stopped(self) -> str | None:
        """Why the output ended early: the innermost layer that says so (its message names its own kind)."""
        return next((x.stopped for x in reversed(self.layers) if x.stopped), None)

    @property
    def notes(self) -> list[str]:
        return [n for x in self.layers for n in x.notes]


def open_layers(fh, origin: str = "<input>", cap: int = limits.EXPANDED_CAP, budget: Budget | None = None) -> Opened:
    """Undo up to MAX_LAYERS compression layers of a binary stream (gzip of xz, ...), each streamed and capped."""
    stream = fh if hasattr(fh, "peek") else io.BufferedReader(_Raw(fh))
    layers: list[Expansion] = []
    for _ in range(MAX_LAYERS):
        kind = sniff(stream.peek(8)[:8])
        if kind is None:
            break
        exp = Expansion(stream, kind, cap, budget, origin)
        layers.append(exp)
        stream = io.BufferedReader(Reader(exp), 1 << 20)
    return Opened(stream, layers)


def expand(data, kind: str, origin: str, cap: int = limits.EXPANDED_CAP) -> tuple[bytearray, str | None]:
    """All of an Expansion in one bytearray (grown in place, so the peak stays near the output size, not twice it).
    Raises InputError only when nothing came out."""
    exp = Expansion(data, kind, cap, origin=origin)
    out = bytearray()
    for chunk in exp:
        out += chunk
    if not out:
        raise InputError(f"{origin}: nothing could be read: {exp.stopped or f'empty {kind} data'}")
    return out, exp.stopped


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:120]
