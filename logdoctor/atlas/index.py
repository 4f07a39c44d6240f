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

    def __init__(self, raw_entries: list) -> None:
        self.table: dict[str, list[Ref]] = {}
        self.literals: dict[tuple[int, int], tuple[str, ...]] = {}
        for ei, (_id, _eng, _kind, _exc, _lvl, _rec, variants) in enumerate(raw_entries):
            for vi, var in enumerate(variants):
                template = var[0]
                lits = tuple(p for p in template if p)
                if not lits:
                    continue
                self.literals[(ei, vi)] = lits
                a = max(range(len(lits)), key=lambda i: len(lits[i]))
                if len(lits[a]) >= MIN_ANCHOR:
                    self.table.setdefault(lits[a], []).append((ei, vi, a))
        self.by_word: dict[str, list[str]] = {}
        self.loose: list[str] = []
        for anchor in self.table:
            words = anchor.split(" ")
            inner = words[1:-1]
            if inner:
                self.by_word.setdefault(max(inner, key=len), []).append(anchor)
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

    def matches(self, text: str) -> Iterator[tuple[int, int, int]]:
        """(entry index, variant index, literal characters matched) for every template all of whose literals the
        text holds in order. Each candidate is checked once, left to right (the leftmost find of each literal is
        never worse than a later one), so the work is linear in the line per candidate."""
        for key in self._anchors(text):
            for ei, vi, _a in self.table[key]:
                lits = self.literals[(ei, vi)]
                if _holds(text, lits):
                    yield ei, vi, sum(len(x) for x in lits)


def _holds(text: str, lits: tuple[str, ...]) -> bool:
    pos = 0
    for lit in lits:
        i = text.find(lit, pos)
        if i < 0:
            return False
        pos = i + len(lit)
    return True
