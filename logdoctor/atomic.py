"""Atomic file writes: a temporary file in the same folder, flushed to disk, then renamed over the target.

An interrupted `fix --write`, report, model or cache write (Ctrl-C, SIGKILL, a full disk) then leaves either the old
file or the new one, never half a file. Every file logdoctor writes goes through here (docs/reliability.md).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from logdoctor.errors import LogdoctorError


class WriteError(LogdoctorError):
    """The file could not be written (full disk, permission, missing folder); the target is unchanged."""


def write_bytes(path: str | os.PathLike, data: bytes, *, mode: int | None = None) -> Path:
    """Write `data` to `path` atomically. Keeps the permission bits of a file it replaces (a unit file stays 0644),
    else uses `mode` or the umask default. Raises WriteError with one line; the target is never left partial."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        except OSError:
            mode = None
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
        tmp = None
        _fsync_dir(folder)
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc} (the file is unchanged)") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return path


def write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8", mode: int | None = None) -> Path:
    return write_bytes(path, text.encode(encoding), mode=mode)


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (ext4/xfs: a crash right after could otherwise lose it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
