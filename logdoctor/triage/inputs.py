"""What triage reads: expand PATH arguments into input specs, and open each one as a stream of logs.

A spec is one task (local process or Dask worker): a file (plain, gz/xz/bz2/zstd by magic bytes, or a tar whose
members are logs, itself compressed or not) or a folder of systemd .journal files (read together, so rotated files
of one machine interleave by time). Opening never reads a whole file into memory: decompression streams, tar
members stream one after another (`tarfile` stream mode).
"""

from __future__ import annotations

import glob
import io
import lzma
import os
import stat
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from logdoctor.core import limits
from logdoctor.core.errors import InputError
from logdoctor.input.sources import tarstream
from logdoctor.input.sources.archive import Budget, Opened, open_layers
from logdoctor.input.sources.files import JOURNAL_MAGIC

SKIP_DIRS = {".git", "__pycache__", ".venv"}


@dataclass(frozen=True)
class InputSpec:
    path: str
    kind: str  # file | journal-dir | skipped
    size: int  # bytes on disk (for progress)
    files: tuple[str, ...] = ()  # journal-dir: its .journal files
    reason: str | None = None  # skipped: why
    walked: bool = False  # found in a folder walk (not named on the command line)


# Files in a folder that are not logs, by name: manifests, notes, labels, code, documents, images. A file named on
# the command line is always read; one of these met in a folder walk is listed as skipped, never as a healthy run.
NOT_LOG_SUFFIXES = (
    ".yaml",
    ".yml",
    ".toml",
    ".ini",
    ".cfg",
    ".md",
    ".rst",
    ".py",
    ".sh",
    ".html",
    ".htm",
    ".csv",
    ".tsv",
    ".pdf",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".svg",
    ".parquet",
    ".service",
    ".conf",
    ".sqlite",
    ".db",
    ".so",
    ".whl",
    ".ipynb",
    ".xlsx",
    ".docx",
)


def expand(paths: list[str] | tuple[str, ...]) -> tuple[list[InputSpec], list[tuple[str, str]]]:
    """PATH arguments → (specs in a stable order, [(path, reason)] for arguments that name nothing)."""
    specs: list[InputSpec] = []
    missing: list[tuple[str, str]] = []
    seen: set[str] = set()

    def add_file(p: str, walked: bool = False) -> None:
        if p in seen:
            return
        seen.add(p)
        specs.append(InputSpec(p, "file", _size(p), walked=walked))

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
        st = os.lstat(p)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _walk(root: str, specs: list[InputSpec], seen: set[str], add_file) -> None:
    """Regular files under `root` (lstat: a FIFO or device is listed as skipped, never opened); a symlink is
    followed only to a file inside the folder, and then only once; directory symlinks are not followed."""
    real_root = os.path.realpath(root)

    def skip(p: str, why: str) -> None:
        if p not in seen:
            seen.add(p)
            specs.append(InputSpec(p, "skipped", 0, reason=why, walked=True))

    for d, dirs, files in os.walk(root, onerror=lambda e: specs.append(InputSpec(e.filename or root, "file", 0))):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS)
        regular, links = [], []
        for f in sorted(files):
            p = os.path.join(d, f)
            try:
                mode = os.lstat(p).st_mode
            except OSError:
                regular.append(f)  # vanished or unreadable: open() names the reason
                continue
            if stat.S_ISLNK(mode):
                links.append(f)
            elif not stat.S_ISREG(mode):
                skip(p, f"not a regular file ({_file_kind(mode)})")
            else:
                regular.append(f)
        for f in links:
            p = os.path.join(d, f)
            target = os.path.realpath(p)
            if os.path.commonpath([real_root, target]) != real_root:
                skip(p, "a symlink out of the folder, not followed")
            elif not os.path.isfile(target):
                skip(p, "a symlink to something that is not a regular file, not followed")
            else:  # the walk reaches the file itself (a rotated-log alias would count it twice)
                skip(p, "a symlink to a file in the folder, read there")
        journals = sorted(os.path.join(d, f) for f in regular if f.endswith((".journal", ".journal~")))
        if journals and d not in seen:
            seen.add(d)
            seen.update(journals)
            specs.append(InputSpec(d, "journal-dir", sum(_size(j) for j in journals), tuple(journals)))
        for f in sorted(regular):
            p = os.path.join(d, f)
            if p in seen or f.endswith((".journal", ".journal~")):
                continue
            if f.lower().endswith(NOT_LOG_SUFFIXES):
                skip(p, f"not a log (a {os.path.splitext(f)[1].lower()} file)")
            else:
                add_file(p, walked=True)


class Unreadable(Exception):
    """An input (or a member) that cannot be read; the message is the reason shown in the report."""


class Skipped(Exception):
    """An input that is not read on purpose (not a regular file, a link out of the folder, not a log)."""


def open_decompressed(
    raw, origin: str = "<input>", cap: int = limits.STREAM_EXPANDED_CAP, budget: Budget | None = None
) -> Opened:
    """Undo compression layers by magic (the decompression explain uses: sources/archive.py), streamed and capped."""
    try:
        return open_layers(raw, origin, cap, budget)
    except InputError as exc:  # zstd without the zstandard package
        raise Unreadable(str(exc).removeprefix(origin + ": ")) from None
    except (OSError, EOFError) as exc:
        raise Unreadable(f"cannot read ({_short(exc)})") from None


@dataclass
class LogStream:
    member: str | None  # tar member name, or None for the file itself
    stream: Any  # binary, decompressed, with .peek
    compression: str | None
    mtime: float | None
    journal: bool = False  # a systemd journal file (read through the journal source)
    opened: Opened | None = None  # its decompression layers (where they stopped, what they noted)
    skip: str | None = None  # a member that is not read (a link, a device, a sparse file): why
    unreadable: str | None = None  # a member that cannot be read (a header over its cap, a nested archive): why
    raw: Any = None  # the member's raw (still compressed) body: a rejected member is skipped through it


def is_tar(head: bytes) -> bool:
    return tarstream.is_tar(head)


def open_logs(path: str, budget: Budget | None = None, *, walked: bool = False) -> Iterator[LogStream]:
    """The logs in a file: the file itself, or each member of a tar (members decompressed by magic too).
    Errors while opening raise Unreadable (Skipped: a FIFO or device met in a folder walk); errors while reading
    surface from the stream's read() or as the Opened layers' `stopped`."""
    fh = _open(path, walked)
    with fh:
        mtime = _mtime(path)
        # an archive's outer stream holds all its members: the task's cap; a single log gets the per-log one
        opened = open_decompressed(fh, path, limits.TASK_EXPANDED_CAP, budget)
        head = _peek(opened.stream, 512, opened.compression)
        if not is_tar(head):
            for layer in opened.layers:
                layer.cap = limits.STREAM_EXPANDED_CAP
        if is_tar(head):
            yield from _tar_members(opened, budget)
            if opened.stopped:
                raise Unreadable(opened.stopped)
            return
        yield LogStream(
            None, opened.stream, opened.compression, mtime, journal=head.startswith(JOURNAL_MAGIC), opened=opened
        )


def _open(path: str, walked: bool):
    """Open without blocking on a FIFO; a FIFO or device met in a folder walk is skipped, one named on the command
    line is read (`triage <(zcat x.gz)` is a pipe)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except PermissionError:
        raise Unreadable("permission denied") from None
    except IsADirectoryError:
        raise Unreadable("is a directory") from None
    except OSError as exc:
        raise Unreadable(f"cannot open ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise Unreadable("is a directory")
        if not stat.S_ISREG(mode) and walked:
            raise Skipped(f"not a regular file ({_file_kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def _peek(stream, n: int, kind: str | None = None) -> bytes:
    kind = kind or "compressed"
    try:
        head = stream.peek(n)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise Unreadable(f"corrupt or truncated {kind} data ({_short(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - zstandard raises its own ZstdError
        raise Unreadable(f"corrupt {kind} data ({_short(exc)})") from None
    return head[:n]


def _tar_members(opened: Opened, budget: Budget | None) -> Iterator[LogStream]:
    """Each member on its own (sources/tarstream.py): its own decompression, cap and error; a bad member never
    costs the ones after it. Only a broken tar header ends the archive (Unreadable, after the members before it)."""
    outer = opened.compression
    reader = tarstream.TarReader(opened.stream)
    try:
        for m in reader:
            if m.kind == "directory":
                continue
            if m.skip is not None:
                unreadable = m.skip if m.skip.startswith(("its ", "member name")) else None
                yield LogStream(
                    m.name, None, outer, m.mtime, skip=None if unreadable else m.skip, unreadable=unreadable
                )
                continue
            if m.body is None:  # an empty regular member
                yield LogStream(m.name, io.BufferedReader(io.BytesIO(b"")), outer, m.mtime)
                continue
            inner = open_decompressed(m.body, m.name, limits.STREAM_EXPANDED_CAP, budget)
            try:
                head = inner.stream.peek(512)[:512]
            except Exception:  # noqa: BLE001 - a damaged member: its reason comes from the read that follows
                head = b""
            comp = "+".join(x for x in (outer, inner.compression) if x) or None
            if inner.layers and is_tar(head):
                yield LogStream(
                    m.name,
                    None,
                    comp,
                    m.mtime,
                    raw=m.body,
                    unreadable=(
                        f"a nested archive (a tar inside {inner.compression}); extract it and triage the folder"
                    ),
                )
                continue
            if not inner.layers and is_tar(head):
                yield LogStream(
                    m.name,
                    None,
                    comp,
                    m.mtime,
                    raw=m.body,
                    unreadable="a nested archive (a tar inside the tar); extract it and triage the folder",
                )
                continue
            yield LogStream(
                m.name, inner.stream, comp, m.mtime, journal=head.startswith(JOURNAL_MAGIC), opened=inner, raw=m.body
            )
    except tarstream.TarError as exc:
        raise Unreadable(f"{exc} (after {reader.members} members)") from None
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
        raise Unreadable(f"tar archive cut short after {reader.members} members ({_short(exc)})") from None


def _mtime(path: str) -> float | None:
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]
