"""Make control characters visible before text from a log or a file name reaches a terminal (issue 18, F21).

A file name or a log line is attacker-controlled text: a prompt the engine echoes, a file name in an exception, the
name of a file in a triaged folder. Printed raw, its control characters act on the reader's terminal: ESC and the
8-bit CSI U+009B start escape sequences (clear the screen, set the title, write the clipboard), a backspace or CR
overwrites what was shown, a newline fakes a second message line, and a bidi override (U+202E) reorders the text so
it reads as something else. `visible` writes each such character as a printable token, in `cat -v`'s caret notation
for C0 (`^[` for ESC, `^H` for a backspace, `^M` for CR, `^J` for LF) and `<U+XXXX>` for C1 and the bidi
controls, so one line in is one line out and reads as it is. The one place this is done: explain's and triage's
messages, the text/markdown/timeline renderers (`render/`), and file names in triage's output.
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache

# C0 except tab (and newline, where the caller keeps it), DEL, C1, the bidi embeddings/overrides/isolates and
# marks, the line and paragraph separators
_UNSAFE = rxcache.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_OWN_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours logdoctor itself adds (logs' escapes are stripped on read)


def _token(m: re.Match) -> str:
    c = ord(m.group())
    if c < 0x20:
        return "^" + chr(c + 0x40)
    if c == 0x7F:
        return "^?"
    return f"<U+{c:04X}>"


def visible(text: str) -> str:
    """`text` with every control or bidi-formatting character (newline included) written as a visible token."""
    return _UNSAFE.sub(_token, text) if _UNSAFE.search(text) else text


def visible_lines(text: str) -> str:
    """Multi-line output: each line made visible, the newlines and logdoctor's own colour codes kept."""
    out = []
    for line in text.split("\n"):
        pos, parts = 0, []
        for m in _OWN_SGR.finditer(line):
            parts += [visible(line[pos : m.start()]), m.group()]
            pos = m.end()
        parts.append(visible(line[pos:]))
        out.append("".join(parts))
    return "\n".join(out)
