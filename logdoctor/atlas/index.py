"""Which atlas templates a log line carries, in time linear in the line: every template is indexed by its longest
literal (one Aho-Corasick pass over the line finds all anchors; a dict of first words when pyahocorasick is
missing), then each candidate's other literals are found in order with str.find on either side of the anchor. No
regular expression, so nothing can backtrack."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from logdoctor.atlas.model import Entry, Variant

MIN_ANCHOR = 8  # a template whose longest literal is shorter is too common a phrase to index


class LiteralIndex:
    """Anchor literal -> (entry, variant) pairs."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        table: dict[str, list[tuple[Entry, Variant, int]]] = {}
        for e in entries:
            for v in e.variants:
                lits = v.literals
                if not lits:
                    continue
                a = max(range(len(lits)), key=lambda i: len(lits[i]))
                if len(lits[a]) >= MIN_ANCHOR:
                    table.setdefault(lits[a], []).append((e, v, a))
        self.table = table
        self._auto = None
        try:
            import ahocorasick  # type: ignore[import-not-found]
        except ImportError:
            self._words: dict[str, list[str]] = {}
            for key in table:
                self._words.setdefault(key.split(" ", 1)[0] or key, []).append(key)
        else:
            auto = ahocorasick.Automaton()
            for key in table:
                auto.add_word(key, key)
            auto.make_automaton()
            self._auto = auto

    def __len__(self) -> int:
        return len(self.table)

    def _anchors(self, text: str) -> Iterator[tuple[int, str]]:
        """(start, anchor) of every indexed literal in the text."""
        if self._auto is not None:
            for end, key in self._auto.iter(text):
                yield end - len(key) + 1, key
            return
        seen = set()
        for word in set(text.replace("\t", " ").split(" ")):
            for key in self._words.get(word, ()):
                if key in seen:
                    continue
                seen.add(key)
                i = text.find(key)
                while i >= 0:
                    yield i, key
                    i = text.find(key, i + 1)

    def matches(self, text: str) -> Iterator[tuple[Entry, Variant, int]]:
        """(entry, variant, literal characters matched) for every template all of whose literals the text holds in
        order."""
        done: set[int] = set()
        for start, key in self._anchors(text):
            for e, v, a in self.table[key]:
                if id(v) in done:
                    continue
                if _holds(text, v.literals, a, start):
                    done.add(id(v))
                    yield e, v, sum(len(x) for x in v.literals)


def _holds(text: str, lits: tuple[str, ...], a: int, start: int) -> bool:
    pos = 0
    for lit in lits[:a]:
        i = text.find(lit, pos, start)
        if i < 0:
            return False
        pos = i + len(lit)
    pos = start + len(lits[a])
    for lit in lits[a + 1 :]:
        i = text.find(lit, pos)
        if i < 0:
            return False
        pos = i + len(lit)
    return True
