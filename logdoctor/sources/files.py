"""Read a SOURCE (path or '-') into bytes, decompressing by content (magic bytes), not by file name."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from logdoctor import limits
from logdoctor.errors import InputError
from logdoctor.intake import Damage, sniff
from logdoctor.sources.archive import Stream, expand

# A systemd journal file starts with this signature; it is read through the journal source, not as text.
JOURNAL_MAGIC = b"LPKSHHRH"
_MAGICS = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


@dataclass(slots=True)
class RawInput:
    data: bytes | bytearray  # decompressed input is a bytearray (not copied once more)
    origin: str             # file name or "<stdin>"
    compression: str | None = None
    is_journal_file: bool = False
    damage: Damage = field(default_factory=Damage)   # where a truncated/capped archive stopped (read_bytes reports it)


def sniff_compression(head: bytes) -> str | None:
    for magic, name in _MAGICS:
        if head.startswith(magic):
            return name
    return None


def decompress(data: bytes | bytearray | Stream, kind: str, origin: str) -> tuple[bytearray, str | None]:
    """Streamed, capped decompression (sources/archive.py): (output, where it stopped early or None). Only an
    archive that yields nothing raises InputError."""
    if kind == "zstd":
        raise InputError(f"{origin}: zstd-compressed input is not supported; decompress it first (zstd -dc FILE | logdoctor explain)")
    if kind not in ("gzip", "xz", "bzip2"):
        raise InputError(f"{origin}: unknown compression {kind}")
    return expand(data, kind, origin, limits.EXPANDED_CAP)


def read_source(source: str | os.PathLike | None, stdin=None) -> RawInput:
    """Read SOURCE ('-' or None = stdin) fully; decompress nested compression (e.g. .log.gz) by magic."""
    if source is None or str(source) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        try:
            return from_bytes(read_checked(stream, "<stdin>"), "<stdin>")
        except OSError as exc:
            raise InputError(f"cannot read stdin: {_short(exc)}") from None
    else:
        origin = str(source)
        try:
            if os.path.isdir(origin):
                raise InputError(f"{origin}: is a directory (use --journal-dir for a journal directory)")
            with open(origin, "rb") as fh:   # a compressed file is decompressed while it is read
                return from_bytes(read_checked(fh, origin), origin)
        except InputError:
            raise
        except FileNotFoundError:
            raise InputError(f"{origin}: no such file") from None
        except PermissionError:
            raise InputError(f"{origin}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{origin}: cannot read ({_short(exc)})") from None


def read_checked(fh, origin: str) -> bytes | Stream:
    """Read a stream whole, but look at its first MiB before reading on: `cat /dev/urandom | logdoctor explain`
    or `logdoctor explain /dev/zero` is refused at once instead of filling memory."""
    head = fh.read(limits.EARLY_SNIFF)
    if len(head) < limits.EARLY_SNIFF:
        return head
    if sniff_compression(head[:8]) is not None:
        return Stream(head, fh)   # decompressed as it is read, up to the cap (gzip < /dev/zero | logdoctor explain)
    if not head.startswith(JOURNAL_MAGIC):
        from logdoctor.formats.journal_export import looks_like_export
        if not looks_like_export(head):
            sniff(head, origin, partial=True)
    from logdoctor.progress import read_all  # the rest, with progress on a TTY (bytes read, rate)
    return head + read_all(fh, origin)


def from_bytes(source: bytes | bytearray | Stream, origin: str = "<bytes>") -> RawInput:
    compression: str | None = None
    dmg = Damage()
    data: bytes | bytearray
    stopped: str | None
    if isinstance(source, Stream):   # a compressed stream: decompressed as it is read
        compression = sniff_compression(source.head[:8]) or "gzip"
        data, stopped = decompress(source, compression, origin)
        _note_stop(dmg, origin, stopped, data)
    else:
        data = source
    for _ in range(3):  # e.g. a .tar is not handled, but gzip-of-xz is
        kind = sniff_compression(bytes(data[:8]))
        if kind is None:
            break
        compression = kind if compression is None else f"{compression}+{kind}"
        data, stopped = decompress(data, kind, origin)
        _note_stop(dmg, origin, stopped, data)
    return RawInput(data=data, origin=origin, compression=compression, is_journal_file=data.startswith(JOURNAL_MAGIC),
                    damage=dmg)


def _note_stop(dmg: Damage, origin: str, stopped: str | None, data: bytes | bytearray) -> None:
    """Say where a truncated or capped archive stopped (--stats, a warning, JSON window.cut)."""
    if not stopped:
        return
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)   # the last one may be cut short
    dmg.stopped = f"{stopped}, at line {lines}"
    if "cap" in stopped:
        dmg.notes.append(f"{origin}: {stopped}; diagnosing the first {limits.human(len(data))} only"
                         " (to diagnose the end instead: zcat FILE | tail -n 100000 | logdoctor explain)")
    else:
        dmg.notes.append(f"{origin}: {stopped}; diagnosing the {lines} line{'s' if lines != 1 else ''}"
                         " read before it stopped")


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
