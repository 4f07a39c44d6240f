"""Line clean-up shared by every format: ANSI escape codes and carriage-return progress bars."""

from __future__ import annotations

from logdoctor.core import rxcache

# CSI sequences (colours, cursor moves), OSC sequences (titles, links) and lone two-byte escapes.
_ANSI = rxcache.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_CONTROL = rxcache.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def collapse_cr(text: str) -> tuple[str, int]:
    """A tqdm bar rewrites itself with \\r; keep its last non-empty state. Returns (text, frames dropped)."""
    if "\r" not in text:
        return text, 0
    parts = [p for p in text.split("\r") if p.strip()]
    if not parts:
        return "", text.count("\r")
    return parts[-1], len(parts) - 1


def clean(text: str) -> tuple[str, int]:
    text = strip_ansi(text)
    text, frames = collapse_cr(text)
    if "\t" in text:
        text = text.expandtabs(8)
    return text, frames


def mostly_control(text: str) -> bool:
    """True for a line that is binary junk rather than text (more than a third control characters)."""
    if not text:
        return False
    n = len(_CONTROL.findall(text))
    return n > 0 and n * 3 > len(text)
