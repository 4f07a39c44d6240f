"""Read a SOURCE (path or '-') into bytes, decompressing by content (magic bytes), not by file name."""

from __future__ import annotations

import io
import os
import sys

from logdoctor.core import limits
from logdoctor.core.errors import InputError
from logdoctor.core.lean import dataclass, field
from logdoctor.input.intake import Damage, sniff
from logdoctor.input.sources import archive, guard
from logdoctor.input.sources.archive import Stream

# A systemd journal file starts with this signature; it is read through the journal source, not as text.
JOURNAL_MAGIC = b"LPKSHHRH"


@dataclass(slots=True)
class RawInput:
    """An input's bytes after decompression, where they came from, and where an archive stopped early."""

    data: bytes | bytearray  # decompressed input is a bytearray (not copied once more)
    origin: str  # file name or "<stdin>"
    compression: str | None = None
    is_journal_file: bool = False
    damage: Damage = field(default_factory=Damage)  # where a truncated/capped archive stopped (read_bytes reports it)


def sniff_compression(head: bytes) -> str | None:
    return archive.sniff(head)


def decompress(data: bytes | bytearray | Stream, kind: str, origin: str) -> tuple[bytearray, str | None]:
    """Streamed, capped decompression of one layer (sources/archive.py): (output, where it stopped early or None).
    Only an archive that yields nothing raises InputError."""
    if kind not in archive.MAGIC:
        raise InputError(f"{origin}: unknown compression {kind}")
    return archive.expand(data, kind, origin, limits.EXPANDED_CAP)


def read_source(source: str | os.PathLike | None, stdin=None) -> RawInput:
    """Read SOURCE ('-' or None = stdin) fully; decompress nested compression (e.g. .log.gz) by magic."""
    if source is None or str(source) == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        try:
            with guard.waiting("<stdin>", "the input has not ended"):
                return from_bytes(read_checked(stream, "<stdin>"), "<stdin>")
        except OSError as exc:
            raise InputError(f"cannot read stdin: {_short(exc)}") from None
    else:
        origin = str(source)
        try:
            if os.path.isdir(origin):
                raise InputError(f"{origin}: is a directory (use --journal-dir for a journal directory)")
            with guard.waiting(origin, "nothing could be opened or read yet"):  # a FIFO without a writer
                fh = open(origin, "rb")
                with fh:  # a compressed file is decompressed while it is read; a growing one up to its size at open
                    return from_bytes(read_checked(guard.upto(fh), origin), origin)
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
        return Stream(head, fh)  # decompressed as it is read, up to the cap (gzip < /dev/zero | logdoctor explain)
    if not head.startswith(JOURNAL_MAGIC):
        from logdoctor.input.formats.journal_export import looks_like_export

        if not looks_like_export(head):
            sniff(head, origin, partial=True)
    from logdoctor.core.progress import read_all  # the rest, with progress on a TTY (bytes read, rate)

    return head + read_all(fh, origin)


def from_bytes(source: bytes | bytearray | Stream, origin: str = "<bytes>") -> RawInput:
    """Undo every compression layer (the one decompression triage uses too: sources/archive.py) and refuse a tar
    archive by name: explain reads one log."""
    dmg = Damage()
    head = source.head[:8] if isinstance(source, Stream) else bytes(source[:8])
    data: bytes | bytearray = source if not isinstance(source, Stream) else source.head
    compression: str | None = None
    if archive.sniff(head) is not None:
        opened = archive.open_layers(source if isinstance(source, Stream) else io.BytesIO(source), origin)
        out = bytearray()
        while chunk := opened.stream.read(1 << 20):
            out += chunk
        compression = opened.compression
        if not out:
            kind = opened.layers[-1].kind
            raise InputError(f"{origin}: nothing could be read: {opened.stopped or f'empty {kind} data'}")
        dmg.notes += [f"{origin}: {n}" for n in opened.notes]
        _note_stop(dmg, origin, opened.stopped, out)
        data = out
    if is_tar(bytes(data[:512])):
        what = f"a {compression}-compressed tar archive" if compression else "a tar archive"
        raise InputError(
            f"{origin}: {what}; explain reads one log — list it with tar tf, or read every member"
            f" with: logdoctor triage {origin}"
        )
    return RawInput(
        data=data, origin=origin, compression=compression, is_journal_file=data.startswith(JOURNAL_MAGIC), damage=dmg
    )


def is_tar(head: bytes) -> bool:
    """POSIX ustar or GNU tar: the magic at offset 257 of the first header."""
    return len(head) >= 262 and head[257:262] == b"ustar"


def _note_stop(dmg: Damage, origin: str, stopped: str | None, data: bytes | bytearray) -> None:
    """Say where a truncated or capped archive stopped (--stats, a warning, JSON window.cut)."""
    if not stopped:
        return
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)  # the last one may be cut short
    dmg.stopped = f"{stopped}, at line {lines}"
    if "cap" in stopped:
        dmg.notes.append(
            f"{origin}: {stopped}; diagnosing the first {limits.human(len(data))} only"
            " (to diagnose the end instead: zcat FILE | tail -n 100000 | logdoctor explain)"
        )
    else:
        dmg.notes.append(
            f"{origin}: {stopped}; diagnosing the {lines} line{'s' if lines != 1 else ''} read before it stopped"
        )


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
