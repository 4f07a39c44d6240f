"""Which atlas templates a log line carries, in time linear in the line and without building anything costly at
load: every template is indexed by one whole word of its longest literal (a dict: word -> anchors), so a line's
own words find the candidate anchors; each candidate's other literals are then found in order with str.find on
either side of the anchor. No regular expression, so nothing can backtrack. Anchors whose every word may be cut
by a neighbouring formatted value ("_size must" after "{tp}") are few and checked by substring.
"""

from __future__ import annotations

from collections.abc import Iterator

MIN_ANCHOR = 8  # a template whose longest literal is shorter is too common a phrase to index

Ref = tuple[int, int, int]  # (entry index, variant index, anchor index in the variant's literals)


class LiteralIndex:
    """Anchor literal -> the variants it anchors, reachable by one of the anchor's whole words."""

    def __init__(self, raw_entries: list, engine: str | None = None) -> None:
        """Index the entries of `engine` (all when None): a log names its engine, so half the atlas is skipped."""
        table: dict[str, list[Ref]] = {}
        literals: dict[tuple[int, int], tuple[str, ...]] = {}
        for ei, entry in enumerate(raw_entries):
            if engine is not None and entry[1] != engine:
                continue
            for vi, var in enumerate(entry[6]):
                lits = tuple([p for p in var[0] if p])
                if not lits:
                    continue
                literals[(ei, vi)] = lits
                first = longest = None
                for lit in lits:
                    n = len(lit)
                    if n >= MIN_ANCHOR:
                        if first is None:
                            first = lit
                        if longest is None or n > len(longest):
                            longest = lit
                if first is None or longest is None:
                    continue
                table.setdefault(first, []).append((ei, vi, 0))
                if longest is not first:
                    table.setdefault(longest, []).append((ei, vi, 0))
        self.table = table
        self.literals = literals
        self.by_word: dict[str, list[str]] = {}
        self.loose: list[str] = []
        for anchor in table:
            words = anchor.split(" ")
            if len(words) > 2:
                best = words[1]
                for w in words[2:-1]:
                    if len(w) > len(best):
                        best = w
                self.by_word.setdefault(best, []).append(anchor)
            else:
                self.loose.append(anchor)

    def __len__(self) -> int:
        return len(self.table)

    def _anchors(self, text: str) -> list[str]:
        """The indexed literals the text holds (each once)."""
        cands: set[str] = set()
        for w in set(text.split()):
            cands.update(self.by_word.get(w, ()))
        cands.update(k for k in self.loose if k in text)
        return sorted(k for k in cands if k in text)

    def matches(self, text: str) -> Iterator[tuple[int, int, int, int]]:
        """(entry index, variant index, literal characters found, literal characters in the template) for every
        template whose literals the text holds in order, whole or up to a cut: a log line carries only the first
        line of a multi-line message, and a release we did not read may reword the tail (`score`). Each candidate
        is checked once, left to right, so the work is linear in the line per candidate."""
        seen: set[tuple[int, int]] = set()
        for key in self._anchors(text):
            for ei, vi, _a in self.table[key]:
                if (ei, vi) in seen:
                    continue
                seen.add((ei, vi))
                lits = self.literals[(ei, vi)]
                got = score(text, lits)
                if got:
                    yield ei, vi, got, sum(len(x) for x in lits)


def score(text: str, lits: tuple[str, ...]) -> int:
    """Literal characters of the template found in order: every literal found whole adds its length; at the first
    one not found, the longest prefix of it (at least MIN_ANCHOR characters) found after the last match is added
    and the count stops there."""
    pos = got = 0
    for lit in lits:
        i = text.find(lit, pos)
        if i >= 0:
            got += len(lit)
            pos = i + len(lit)
            continue
        j = text.find(lit[:MIN_ANCHOR], pos)
        if j >= 0:
            n = MIN_ANCHOR
            while n < len(lit) and j + n < len(text) and text[j + n] == lit[n]:
                n += 1
            got += n
        break
    return got
