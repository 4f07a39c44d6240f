"""Every file logdoctor writes: atomic for regular files, a plain stream for devices and FIFOs, never a rename over
what is not a regular file.

Why: an interrupted `fix --write`, report, model or cache write (Ctrl-C, SIGKILL, a full disk) must leave the old file
or the new one, never half a file -- so regular files get a temporary file in the same folder, fsync, rename. But a
rename replaces whatever the name points at: `--out /dev/null` run as root turned the host's /dev/null into a regular
file, and a symlinked report became a plain file beside its untouched target (hostile-inputs F4, newcomer-trial 1).
So the target decides (docs/reliability.md, "Trust boundaries: outputs and unit files"):

* `-`, a FIFO or a character device (`/dev/null`, `/dev/stdout`, a TTY) is written as a stream;
* a symlink stays a link: its resolved target is replaced atomically (created, if dangling);
* a folder, a block device or a socket is refused in one line (exit 2);
* `private=True` (caches and state in logdoctor's own folders) never follows a link planted there: the rename
  replaces the folder entry itself, whatever it is;
* `expect=` (what the target looked like when it was read) refuses, with exit 2, a target that changed since.

Temporary files are created with O_CREAT|O_EXCL|O_NOFOLLOW (tempfile.mkstemp): a name planted in the folder is never
opened.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from logdoctor.core.errors import LogdoctorError
from logdoctor.core.lean import dataclass


class WriteError(LogdoctorError):
    """The file could not be written (full disk, permission, missing folder, not a file); the target is unchanged."""


class ChangedError(WriteError):
    """The target changed since it was read (edited by hand or by another run): refused, exit 2."""


@dataclass(frozen=True)
class Seen:
    """What a file looked like when it was read (`seen(path)`): identity, size, mtime and content digest; `exists`
    False when there was no file. Compared again right before the rename that would replace it."""

    exists: bool
    ino: int = 0
    size: int = 0
    mtime_ns: int = 0
    digest: str = ""


_DIGEST_CAP = 16 << 20  # files logdoctor replaces are small; a bigger one is compared by identity, size, mtime


def seen(path: str | os.PathLike[str], data: bytes | None = None) -> Seen:
    """The current state of `path` (following links, as the write does). Pass `data` when it was just read, so the
    digest is of exactly those bytes."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Seen(False)
    except OSError as exc:
        raise WriteError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        return Seen(True, st.st_ino, 0, 0, "")
    if data is None and st.st_size <= _DIGEST_CAP:
        try:
            with open(path, "rb") as fh:
                data = fh.read(_DIGEST_CAP + 1)
        except OSError as exc:
            raise WriteError(f"cannot read {path}: {exc.strerror or exc}") from None
    digest = _digest(data) if data is not None else ""
    return Seen(True, st.st_ino, st.st_size, st.st_mtime_ns, digest)


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    mode: int | None = None,
    private: bool = False,
    expect: Seen | None = None,
) -> Path:
    """Write `data` to `path` (see the module docstring for what each kind of target gets). A replaced regular file
    keeps its permission bits (and owner, when run as root); a new one gets `mode` or the umask default. Raises
    WriteError (ChangedError when `expect` no longer holds) with one line; the target is never left partial."""
    name = str(path)
    path = Path(path)
    if name == "-":
        return _stream_stdout(data, path)
    try:
        lst = os.lstat(path)
    except FileNotFoundError:
        lst = None
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc} (the file is unchanged)") from None
    if private:
        if lst is not None and stat.S_ISDIR(lst.st_mode):
            raise WriteError(f"cannot write {path}: it is a folder")
        return _replace(path, data, mode, None, expect, keep_owner=False)
    target = path
    st = lst
    if lst is not None and stat.S_ISLNK(lst.st_mode):
        try:  # follow the link itself (/dev/stdout -> /proc/self/fd/1 -> a pipe has no path to resolve to)
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                target = Path(os.path.realpath(path))
        except FileNotFoundError:
            target = Path(os.path.realpath(path))
            st = None  # a dangling link: its target is created
        except OSError as exc:
            raise WriteError(f"cannot write {path}: {exc.strerror or exc} (the file is unchanged)") from None
    if st is None or stat.S_ISREG(st.st_mode):
        _replace(target, data, mode, st, expect, keep_owner=True)
        return path
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode):
        return _stream(path, data)
    what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file, a FIFO or a character device"
    raise WriteError(f"cannot write {path}: it is {what} (nothing written)")


def write_text(
    path: str | os.PathLike[str],
    text: str,
    *,
    encoding: str = "utf-8",
    mode: int | None = None,
    private: bool = False,
    expect: Seen | None = None,
) -> Path:
    return write_bytes(path, text.encode(encoding), mode=mode, private=private, expect=expect)


def _replace(
    path: Path, data: bytes, mode: int | None, st: os.stat_result | None, expect: Seen | None, *, keep_owner: bool
) -> Path:
    folder = path.parent if str(path.parent) else Path(".")
    if st is not None and keep_owner:
        mode = st.st_mode & 0o7777  # a replaced file keeps its bits (a unit file stays 0644)
    elif mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if keep_owner and st is not None and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
            os.chown(tmp, st.st_uid, st.st_gid)  # root editing a user's file leaves it theirs
        if expect is not None:
            _check_unchanged(path, expect)
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


def _check_unchanged(path: Path, expect: Seen) -> None:
    now = seen(path)
    if now == expect:
        return
    if not expect.exists:
        raise ChangedError(f"{path} appeared since it was read (another run or a person wrote it): not replaced")
    what = "was removed" if not now.exists else "was edited"
    raise ChangedError(f"{path} {what} since it was read: not replaced (run the command again to work from it)")


def _stream(path: Path, data: bytes) -> Path:
    """A FIFO or character device: open it for writing (no O_CREAT, no O_TRUNC, no rename) and write the bytes."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return path


def _stream_stdout(data: bytes, path: Path) -> Path:
    try:
        sys.stdout.flush()
        out = getattr(sys.stdout, "buffer", None)
        if out is not None:
            out.write(data)
            out.flush()
        else:  # a text-only stdout (a test harness)
            sys.stdout.write(data.decode("utf-8", "replace"))
            sys.stdout.flush()
    except BrokenPipeError:
        raise  # a closed reader is a normal end (run.closed_pipe)
    except OSError as exc:
        raise WriteError(f"cannot write to stdout: {exc.strerror or exc}") from None
    return path


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
