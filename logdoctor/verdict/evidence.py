"""Evidence is quoted, never invented (issue 11): an evidence line is a log line as the log shows it — whole, or
cut visibly with "…" — at its own line number. What a leaf derives (a frame summary, "TP1 failed alone: ...",
"flag = value") is a statement about the log, not a quote: it goes to the explanation instead."""

from __future__ import annotations

ELLIPSIS = "…"
MAX_QUOTE = 2000  # a line longer than this is not evidence anyone reads whole (JSON keeps this much)


def cut(text: str, limit: int) -> str:
    """`text` whole when it fits, else its first limit-1 characters and a visible "…"."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def quote(records, pairs) -> tuple[list[tuple[int, str]], list[str]]:
    """(line, matched text) pairs of a rule hit → (quoted evidence lines, derived statements).

    A pair whose text occurs in a record of that line quotes that record; one that does not (the leaf wrote it)
    quotes the record at that line instead, when there is one, and its own text becomes a derived statement."""
    by_line: dict[int, list[str]] = {}
    for r in records:
        by_line.setdefault(r.line, []).append(r.msg)
    seen: dict[int, str] = {}
    derived: list[str] = []
    for ln, text in pairs:
        first = text.splitlines()[0] if text else ""
        if not ln:
            if first and first not in derived:
                derived.append(first)
            continue
        whole = next((m for m in by_line.get(ln, ()) if first and first in m), None)
        if whole is None:
            if first and first not in derived:
                derived.append(first)
            whole = next((m for m in by_line.get(ln, ()) if m.strip()), None)
            if whole is None:
                continue
        if ln not in seen:
            seen[ln] = cut(whole, MAX_QUOTE)
    return sorted(seen.items()), derived
