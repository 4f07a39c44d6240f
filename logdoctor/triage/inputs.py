"""What triage reads: expand PATH arguments into input specs, and open each one as a stream of logs.

A spec is one task (local process or Dask worker): a file (plain, gz/xz/bz2/zstd by magic bytes, or a tar whose
members are logs, itself compressed or not) or a folder of systemd .journal files (read together, so rotated files
of one machine interleave by time). Opening never reads a whole file into memory: decompression streams, tar
members stream one after another (`tarfile` stream mode).
"""
from __future__ import annotations

import bz2
import glob
import gzip
import io
import lzma
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from logdoctor.sources.files import JOURNAL_MAGIC, sniff_compression

SKIP_DIRS = {".git", "__pycache__", ".venv"}


@dataclass(frozen=True)
class InputSpec:
    path: str
    kind: str          # file | journal-dir
    size: int          # bytes on disk (for progress)
    files: tuple[str, ...] = ()   # journal-dir: its .journal files


def expand(paths: list[str] | tuple[str, ...]) -> tuple[list[InputSpec], list[tuple[str, str]]]:
    """PATH arguments → (specs in a stable order, [(path, reason)] for arguments that name nothing)."""
    specs: list[InputSpec] = []
    missing: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add_file(p: str) -> None:
        if p in seen:
            return
        seen.add(p)
        try:
            size = os.path.getsize(p)
        except OSError:
            size = 0
        specs.append(InputSpec(p, "file", size))

    for arg in paths:
        arg = str(arg)
        matches = sorted(glob.glob(arg, recursive=True)) if glob.has_magic(arg) else [arg]
        if not matches:
            missing.append((arg, "no file matches this pattern"))
            continue
        for m in matches:
            if os.path.isdir(m):
                _walk(m, specs, seen, add_file)
            elif os.path.lexists(m):
                if m.endswith(".journal") or m.endswith(".journal~"):
                    if m not in seen:
                        seen.add(m)
                        specs.append(InputSpec(m, "journal-dir", _size(m), (m,)))
                else:
                    add_file(m)
            else:
                missing.append((m, "no such file or directory"))
    return specs, missing


def _size(p: str) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0


def _walk(root: str, specs: list[InputSpec], seen: set[str], add_file) -> None:
    for d, dirs, files in os.walk(root, onerror=lambda e: specs.append(InputSpec(e.filename or root, "file", 0))):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        journals = sorted(os.path.join(d, f) for f in files if f.endswith((".journal", ".journal~")))
        if journals and d not in seen:
            seen.add(d)
            seen.update(journals)
            specs.append(InputSpec(d, "journal-dir", sum(_size(j) for j in journals), tuple(journals)))
        for f in sorted(files):
            p = os.path.join(d, f)
            if p not in seen and not f.endswith((".journal", ".journal~")):
                add_file(p)


class Unreadable(Exception):
    """An input (or a member) that cannot be read; the message is the reason shown in the report."""


def open_decompressed(raw) -> tuple[io.BufferedReader, str | None]:
    """Wrap a binary stream in streaming decompressors by magic bytes (nested, e.g. gzip of xz)."""
    stream = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    kinds: list[str] = []
    for _ in range(3):
        head = _peek(stream, 8, "+".join(kinds))
        kind = sniff_compression(head)
        if kind is None:
            break
        kinds.append(kind)
        if kind == "gzip":
            stream = io.BufferedReader(gzip.GzipFile(fileobj=stream), 1 << 20)
        elif kind == "xz":
            stream = io.BufferedReader(lzma.LZMAFile(stream), 1 << 20)
        elif kind == "bzip2":
            stream = io.BufferedReader(bz2.BZ2File(stream), 1 << 20)
        elif kind == "zstd":
            try:
                import zstandard
            except ImportError:
                raise Unreadable("zstd-compressed; install the 'zstandard' package (pip install zstandard)") from None
            stream = io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True),
                                       1 << 20)
    return stream, "+".join(kinds) or None


@dataclass
class LogStream:
    member: str | None         # tar member name, or None for the file itself
    stream: Any                # binary, decompressed, with .peek
    compression: str | None
    mtime: float | None
    journal: bool = False      # a systemd journal file (read through the journal source)


def is_tar(head: bytes) -> bool:
    return len(head) >= 262 and head[257:262] == b"ustar"


def open_logs(path: str) -> Iterator[LogStream]:
    """The logs in a file: the file itself, or each member of a tar (members decompressed by magic too).
    Errors while opening raise Unreadable; errors while reading surface from the stream's read()."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except PermissionError:
        raise Unreadable("permission denied") from None
    except IsADirectoryError:
        raise Unreadable("is a directory") from None
    except OSError as exc:
        raise Unreadable(f"cannot open ({exc.strerror or exc})") from None
    with fh:
        mtime = _mtime(path)
        stream, comp = open_decompressed(fh)
        head = _peek(stream, 512, comp)
        if is_tar(head):
            yield from _tar_members(stream, comp)
            return
        yield LogStream(None, stream, comp, mtime, journal=head.startswith(JOURNAL_MAGIC))


def _peek(stream, n: int, kind: str | None = None) -> bytes:
    kind = kind or "compressed"
    try:
        head = stream.peek(n)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise Unreadable(f"corrupt or truncated {kind} data ({_short(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - zstandard raises its own ZstdError
        raise Unreadable(f"corrupt {kind} data ({_short(exc)})") from None
    return head[:n]


def _tar_members(stream, comp: str | None) -> Iterator[LogStream]:
    try:
        tar = tarfile.open(fileobj=stream, mode="r|")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise Unreadable(f"corrupt tar archive ({_short(exc)})") from None
    with tar:
        while True:
            try:
                info = tar.next()
            except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as exc:
                raise Unreadable(f"tar archive cut short ({_short(exc)})") from None
            if info is None:
                return
            if not info.isfile():
                continue
            f = tar.extractfile(info)
            if f is None:
                continue
            inner, icomp = open_decompressed(f)
            head = _peek(inner, 512, icomp)
            yield LogStream(info.name, inner, "+".join(x for x in (comp, icomp) if x) or None, float(info.mtime),
                            journal=head.startswith(JOURNAL_MAGIC))


def _mtime(path: str) -> float | None:
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]
