"""Make control characters visible before text from a log or a file name reaches a terminal.

A file name or a log line is attacker-controlled text: ESC sequences (CSI, OSC titles and clipboard writes), the
8-bit CSI U+009B that some terminals honour in UTF-8 mode, backspaces and carriage returns that overwrite what was
printed, and bidi overrides (U+202E) that reorder it can all fake what the user reads. `visible` turns each such
character into a printable escape (`\\x1b`, `\\u202e`), so a one-line message stays one line and reads as it is.
"""

from __future__ import annotations

import re

# C0 (tab kept when asked), DEL, C1, the bidi embeddings/overrides/isolates/marks, line and paragraph separators
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_NO_TAB = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_OWN_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours logdoctor itself adds (logs' escapes are stripped on read)


def _escape(m: re.Match) -> str:
    ch = m.group()
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, keep_tab: bool = True) -> str:
    """`text` with every control or bidi-formatting character written as an escape; one line in, one line out."""
    rx = _CONTROL if keep_tab else _CONTROL_NO_TAB
    return rx.sub(_escape, text) if rx.search(text) else text


def visible_lines(text: str) -> str:
    """Rendered multi-line output: each line made visible, newlines and logdoctor's own colour codes kept."""
    if not _CONTROL.search(text.replace("\n", "")):
        return text
    out = []
    for line in text.split("\n"):
        pos, parts = 0, []
        for m in _OWN_SGR.finditer(line):
            parts += [visible(line[pos : m.start()]), m.group()]
            pos = m.end()
        parts.append(visible(line[pos:]))
        out.append("".join(parts))
    return "\n".join(out)
