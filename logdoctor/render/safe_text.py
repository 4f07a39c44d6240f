"""Log text made visible before it reaches a terminal (issue 18, F21).

A log line is written by whoever could put text into the service's output (a prompt the engine echoes, a file name
in an exception). Printed raw, its control characters act on the reader's terminal: ESC and C1 CSI (U+009B) start
escape sequences (clear the screen, set the title, write the clipboard), a backspace or CR overwrites what was
shown, and a bidi override (U+202E) reorders the text so it reads as something else. `visible` keeps tab and
newline and writes every other C0/C1 control, DEL and bidi control as a visible token: `^[` for ESC, `^H` for a
backspace, `<U+009B>` and `<U+202E>` for the rest.
"""

from __future__ import annotations

import re

# C0 except tab and newline, DEL, C1, the bidi embeddings/overrides/isolates and marks, the line and paragraph
# separators
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _token(m: re.Match) -> str:
    c = ord(m.group())
    if c < 0x20:
        return "^" + chr(c + 0x40)  # caret notation: ESC -> ^[, BS -> ^H, CR -> ^M
    if c == 0x7F:
        return "^?"
    return f"<U+{c:04X}>"


def visible(text: str) -> str:
    """`text` with every control character that could act on a terminal written as a visible token."""
    return _UNSAFE.sub(_token, text)
