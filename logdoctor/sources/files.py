"""Read a SOURCE (path or '-') into bytes, decompressing by content (magic bytes), not by file name."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from logdoctor.errors import InputError

# A systemd journal file starts with this signature; it is read through the journal source, not as text.
JOURNAL_MAGIC = b"LPKSHHRH"
_MAGICS = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
MAX_INPUT_BYTES = 2 * 1024**3  # refuse to decompress beyond this (a decompression bomb is not a log)


@dataclass(slots=True)
class RawInput:
    data: bytes
    origin: str             # file name or "<stdin>"
    compression: str | None = None
    is_journal_file: bool = False


def sniff_compression(head: bytes) -> str | None:
    for magic, name in _MAGICS:
        if head.startswith(magic):
            return name
    return None


def decompress(data: bytes, kind: str, origin: str) -> bytes:
    """Decompress whole-input data; corrupt or truncated archives raise InputError with one line."""
    import bz2  # here, not at import: most inputs are plain text (start-up, issue 11)
    import gzip
    import lzma
    import zlib
    try:
        if kind == "gzip":
            return gzip.decompress(data)
        if kind == "xz":
            return lzma.decompress(data)
        if kind == "bzip2":
            return bz2.decompress(data)
    except (OSError, EOFError, lzma.LZMAError, zlib.error, ValueError) as exc:
        raise InputError(f"{origin}: corrupt or truncated {kind} data ({_short(exc)})") from None
    if kind == "zstd":
        raise InputError(f"{origin}: zstd-compressed input is not supported; decompress it first (zstd -dc FILE | logdoctor explain)")
    raise InputError(f"{origin}: unknown compression {kind}")


def read_source(source: str | os.PathLike | None, stdin=None) -> RawInput:
    """Read SOURCE ('-' or None = stdin) fully; decompress nested compression (e.g. .log.gz) by magic."""
    if source is None or str(source) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        from logdoctor.progress import read_all
        try:
            data = read_all(stream, "<stdin>")
        except OSError as exc:
            raise InputError(f"cannot read stdin: {_short(exc)}") from None
        origin = "<stdin>"
    else:
        origin = str(source)
        try:
            if os.path.isdir(origin):
                raise InputError(f"{origin}: is a directory (use --journal-dir for a journal directory)")
            from logdoctor.progress import read_all
            with open(origin, "rb") as fh:
                data = read_all(fh, origin)
        except InputError:
            raise
        except FileNotFoundError:
            raise InputError(f"{origin}: no such file") from None
        except PermissionError:
            raise InputError(f"{origin}: permission denied") from None
        except OSError as exc:
            raise InputError(f"{origin}: cannot read ({_short(exc)})") from None
    return from_bytes(data, origin)


def from_bytes(data: bytes, origin: str = "<bytes>") -> RawInput:
    compression = None
    for _ in range(3):  # e.g. a .tar is not handled, but gzip-of-xz is
        kind = sniff_compression(data[:8])
        if kind is None:
            break
        compression = kind if compression is None else f"{compression}+{kind}"
        data = decompress(data, kind, origin)
        if len(data) > MAX_INPUT_BYTES:
            raise InputError(f"{origin}: decompresses to more than {MAX_INPUT_BYTES >> 30} GiB; not a log")
    return RawInput(data=data, origin=origin, compression=compression, is_journal_file=data.startswith(JOURNAL_MAGIC))


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
