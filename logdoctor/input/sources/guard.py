"""Reading a source that may never end: a FIFO or pipe whose writer is still running, a file that keeps growing.

explain reads its input to the end, so a pipe that stays open, or a FIFO with no writer, would make it wait silently
forever. `waiting` prints one note on stderr when a read has given nothing for limits.WAIT_NOTE_SECONDS (the read
goes on: a slow writer is legitimate, and Ctrl-C stops it). `upto` reads a regular file up to the size it had when it
was opened, so a log that is being written (20 MB/s) is diagnosed as of that moment instead of chased.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from contextlib import contextmanager

from logdoctor.core import limits


@contextmanager
def waiting(origin: str, what: str = "no data yet"):
    """One note on stderr if the body is still blocked after WAIT_NOTE_SECONDS."""

    def note() -> None:
        from logdoctor.render.visible import visible

        sys.stderr.write(
            f"logdoctor: {visible(origin)}: {what} after {limits.WAIT_NOTE_SECONDS:.0f} s; explain reads"
            " to the end of its input — is the writer still running? (Ctrl-C stops)\n"
        )
        sys.stderr.flush()

    timer = threading.Timer(limits.WAIT_NOTE_SECONDS, note)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


class Upto:
    """A binary file read up to `size` bytes (its size at open), whatever is appended while it is read."""

    def __init__(self, fh, size: int):
        self.fh, self.left = fh, size

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = self.fh.read(n)
        self.left -= len(data)
        return data

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def upto(fh):
    """`fh` bounded to its current size when it is a regular file; a pipe or FIFO as it is."""
    try:
        st = os.fstat(fh.fileno())
    except (OSError, ValueError, AttributeError):
        return fh
    return Upto(fh, st.st_size) if stat.S_ISREG(st.st_mode) else fh


def read_regular(path: str | os.PathLike[str], cap: int, what: str) -> bytes:
    """A named input file's bytes: a regular file only, at most `cap` bytes. A FIFO or a device is refused at once
    (opened non-blocking, never waited on or read without end); InputError (exit 2) in one line naming `what`. The
    one reader for the small files an operator names: unit files, preflight's kernel log, XML and model configs."""
    from logdoctor.core.errors import InputError

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    with open(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            kind = (
                "a folder"
                if stat.S_ISDIR(st.st_mode)
                else "a FIFO"
                if stat.S_ISFIFO(st.st_mode)
                else "a device"
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "not a regular file"
            )
            raise InputError(f"{path} is {kind}, not {what}")
        try:
            data = fh.read(cap + 1)
        except OSError as e:
            raise InputError(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > cap:
        raise InputError(f"{path} is larger than {cap >> 20} MiB: not {what}")
    return data
