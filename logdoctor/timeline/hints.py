"""An engine's hint is advice, not evidence: evaluate the condition it states against the facts in the same line.

SGLang: "Rank 0 scheduler died during initialization (exit code: 1). If exit code is -9 (SIGKILL), a common cause
is the OS OOM killer." The hint names host OOM, but only on a condition the line itself refutes (the exit code is 1).
`strip_false` removes such hint sentences before the text reaches the rules' error leaves and the classifier, so the
hint's cause and flag are never proposed when the stated condition does not hold. Hints whose condition holds, and
unconditional hints, are kept (rules may read them through the `hint` leaf; calibration caps a verdict resting on
one of them).
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache

_EXIT = rxcache.compile(r"\(exit code:? (?P<code>-?\d+)\)|exit code (?P<code2>-?\d+)\b|exit status (?P<code3>-?\d+)")
# "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T` to check ..." (to the sentence end
# and a following "Run/Check ..." sentence that belongs to it)
_IF_EXIT = rxcache.compile(
    r"(?<!\s)\s*If (?:the )?exit code is (?P<want>-?\d+)\b[^.]*\.(?:\s*(?:Run|Check|See)\b[^.]*?(?:\.(?=\s|$)|$))?"
)


def strip_false(text: str) -> str:
    """The text without conditional hint sentences whose condition the same text refutes."""
    if not text or "If " not in text:
        return text
    m = _EXIT.search(text)
    if not m:
        return text
    code = int(next(g for g in m.groups() if g is not None))

    def drop(h: re.Match) -> str:
        return "" if int(h.group("want")) != code else h.group(0)

    return _IF_EXIT.sub(drop, text).rstrip()
