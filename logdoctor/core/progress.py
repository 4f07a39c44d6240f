"""Progress on stderr for long inputs, only on a TTY (a pipe or a file gets nothing): bytes read and rate while
reading, then one "diagnosing" line, cleared when the verdict is printed. A user piping days of journal into
`explain` sees that it is working."""

from __future__ import annotations

import os
import sys
import time

CHUNK = 1 << 22  # 4 MiB reads
SHOW_AFTER_S = 0.5  # nothing for inputs that finish quickly
MIN_INTERVAL_S = 0.25


class Progress:
    def __init__(self, origin: str, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"
        self.origin = origin
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def update(self, nbytes: int, final: bool = False) -> None:
        if not self.on:
            return
        now = time.monotonic()
        el = now - self.start
        if el < SHOW_AFTER_S or (now - self.last < MIN_INTERVAL_S and not final):
            return
        self.last = now
        rate = nbytes / el / 1e6 if el > 0 else 0.0
        self._write(
            f"logdoctor: {self.origin}: read {nbytes / 1e6:.1f} MB ({rate:.1f} MB/s)"
            + (", diagnosing…" if final else "…")
        )

    def _write(self, text: str) -> None:
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


_current: Progress | None = None


def read_all(fh, origin: str) -> bytes:
    """fh.read() in chunks, with progress on a TTY; the last line stays until `clear()` (after diagnosing)."""
    global _current
    p = Progress(origin)
    if not p.on:
        return fh.read()
    parts: list[bytes] = []
    n = 0
    while True:
        b = fh.read(CHUNK)
        if not b:
            break
        parts.append(b)
        n += len(b)
        p.update(n)
    p.update(n, final=True)
    _current = p
    return b"".join(parts)


def set_current(p: Progress) -> None:
    """A reader that drew its own progress (stream.py) leaves it for `clear()` to remove."""
    global _current
    _current = p if p.on else None


def clear() -> None:
    global _current
    if _current is not None:
        _current.done()
        _current = None
