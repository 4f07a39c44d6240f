"""Compile only the rule regexes the log can match: each regex's required literal words, checked against the
log once.

`requirement(pattern)` reads the regex's parse tree and returns what any match must contain: an AND/OR tree of
literal words (runs of 3+ word characters taken from literal text the pattern cannot skip — optional parts,
character classes and repeats that may be empty are left out, and an alternation needs only one of its branches).
A leaf whose every pattern requires a word the attempt's text does not contain cannot match, so it is not compiled
or run (the answer is the same: no match). Words are compared in lower case, so (?i) patterns and any case stay
sound. The words present are found in one pass over the attempt's text with an Aho-Corasick automaton
(pyahocorasick, a dependency; bench/bench_prefilter.py measured it against one `in` test per word in the same run:
0.7 ms vs 56 ms for all 833 words on a 140-line log, 1.1 s vs 21.5 s on 10 MB); without it, lookups fall back to
one substring test per word that a leaf asks for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

_WORD = re.compile(r"\w{3,}")


def _req(items) -> tuple | None:
    """AND-list of requirements for a sequence of parse items (None: nothing required)."""
    try:
        import re._constants as C  # noqa: N812  (Python 3.11+)
        import re._parser as P  # noqa: N812
    except ImportError:  # pragma: no cover
        import sre_constants as C  # type: ignore  # noqa: N812
        import sre_parse as P  # type: ignore  # noqa: N812
    out: list = []
    run: list[str] = []

    def flush():
        if run:
            out.extend(("w", w.lower()) for w in _WORD.findall("".join(run)))
            run.clear()

    for op, av in items:
        if op is C.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is C.SUBPATTERN:
            sub = _req(av[-1])
            if sub:
                out.append(sub)
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT) or getattr(C, "POSSESSIVE_REPEAT", None) is op:
            lo, _hi, body = av
            if lo >= 1:
                sub = _req(body)
                if sub:
                    out.append(sub)
        elif op is C.BRANCH:
            alts = [_req(alt) for alt in av[1]]
            if all(alts):
                out.append(("or", tuple(alts)))
        elif getattr(C, "ATOMIC_GROUP", None) is op:
            sub = _req(av)
            if sub:
                out.append(sub)
        # IN, ANY, AT, NOT_LITERAL, GROUPREF, ASSERT(_NOT), CATEGORY ...: no literal word required
    flush()
    del P
    return ("and", tuple(out)) if out else None


_KNOWN: dict[str, object] = {}  # seeded from the compiled rule cache (matching/cache.py): no parse at run time


def seed(reqs: dict, pwords: dict | None = None) -> None:
    _KNOWN.update(reqs)
    if pwords:
        _WORDS.update(pwords)


def requirement(pattern: str):
    try:
        return _KNOWN[pattern]
    except KeyError:
        r = _KNOWN[pattern] = _requirement(pattern)
        return r


def patterns(rules) -> set[str]:
    """Every regex of the rules' regex leaves (each loader Rule names its own: `Rule.regexes`, read from its parsed
    condition tree, so that this module imports no rule code)."""
    out: set[str] = set()
    for r in rules:
        out |= r.regexes()
    return out


def _requirement(pattern: str):
    try:
        import re._parser as P  # noqa: N812
    except ImportError:  # pragma: no cover
        import sre_parse as P  # type: ignore  # noqa: N812
    try:
        return _req(P.parse(pattern))
    except (re.error, RecursionError, OverflowError):
        return None  # let the real compile report it


def words(req) -> set[str]:
    if req is None:
        return set()
    if req[0] == "w":
        return {req[1]}
    return set().union(*(words(x) for x in req[1]))


def satisfied(req, present: set[str] | Present) -> bool:
    if req is None:
        return True
    kind = req[0]
    if kind == "w":
        return req[1] in present
    if kind == "and":
        return all(satisfied(x, present) for x in req[1])
    return any(satisfied(x, present) for x in req[1])


class Present:
    """The literal words found in one text, looked up lazily per word and remembered.

    The text comes as `text`, or as `chunks` (a function returning an iterable of pieces that no word spans, e.g.
    batches of lines joined by newlines), so a 100 MB attempt is never copied whole just to be searched."""

    __slots__ = ("_chunks", "_text", "found", "absent")

    def __init__(self, text: str | None = None, chunks: Callable[[], Iterable[str]] | None = None):
        self._chunks: Callable[[], Iterable[str]] = chunks if chunks is not None else (lambda: (text or "",))
        self._text: str | None = None
        self.found: set[str] = set()
        self.absent: set[str] = set()

    def prime(self, vocabulary: set[str]) -> None:
        """Find all of `vocabulary` in one pass (Aho-Corasick) when available; else lookups stay lazy."""
        todo = vocabulary - self.found - self.absent
        if not todo:
            return
        A = _automaton(frozenset(todo))
        if A is None:
            return
        hit: set[str] = set()
        for chunk in self._chunks():
            hit.update(w for _end, w in A.iter(chunk.lower()))
        self.found |= hit
        self.absent |= todo - hit

    def __contains__(self, w: str) -> bool:
        if w in self.found:
            return True
        if w in self.absent:
            return False
        if self._text is None:  # the fallback without an automaton: one lowercased copy, searched per word
            self._text = "\n".join(c.lower() for c in self._chunks())
        (self.found if w in self._text else self.absent).add(w)
        return w in self.found


_AUTOMATA: dict[frozenset[str], Any] = {}


def _automaton(words: frozenset[str]) -> Any:
    """The Aho-Corasick automaton of `words`, built once per word set (every attempt of a run primes the same
    vocabulary: building it again cost ~3 ms an attempt); None without pyahocorasick."""
    got = _AUTOMATA.get(words)
    if got is None:
        try:
            import ahocorasick
        except ImportError:
            return None
        got = ahocorasick.Automaton()
        for w in words:
            got.add_word(w, w)
        got.make_automaton()
        if len(_AUTOMATA) > 8:
            _AUTOMATA.clear()
        _AUTOMATA[words] = got
    return got


def warm(rules) -> None:
    """Build the vocabulary of `rules` and its automaton now (before a pool of workers forks, say)."""
    _automaton(frozenset(vocabulary(rules)))


def can_match(patterns: Iterable[str], present: Present) -> bool:
    """Can any of a regex leaf's patterns (`LeafNode.searches`, matching/conditions.py) match the text?"""
    for p in patterns:
        if satisfied(requirement(p), present):
            return True
    return False


def for_context(ctx, vocabulary=None) -> Present:
    """The words present in the attempt a rule context looks at (every leaf's text derives from its records, plus
    the names of death events, which the death leaf matches as "name text")."""
    pres = ctx.__dict__.get("_prefilter")
    if pres is None:
        a = ctx.attempt

        def chunks(batch: int = 4096):
            recs = a.records
            for i in range(0, len(recs), batch):
                yield "\n".join(r.msg for r in recs[i : i + batch])
            yield " ".join(e.name for e in a.events if e.kind == "death")

        pres = ctx.__dict__["_prefilter"] = Present(chunks=chunks)
        if vocabulary is not None:
            pres.prime(vocabulary())
    return pres


_WORDS: dict[str, frozenset[str]] = {}  # pattern → its words (seeded from the rule cache too)
_VOCAB: dict[tuple, tuple] = {}


def pattern_words(p: str) -> frozenset[str]:
    got = _WORDS.get(p)
    if got is None:
        got = _WORDS[p] = frozenset(words(requirement(p)))
    return got


def vocabulary(rules) -> set[str]:
    """Every literal word the regex leaves of `rules` can ask for (remembered per rule list: explain asks once per
    attempt, and walking every requirement tree again cost ~4 ms a time)."""
    key = tuple(map(id, rules))
    got = _VOCAB.get(key)
    if got is not None:
        return got[1]
    out: set[str] = set()
    for p in patterns(rules):
        out |= pattern_words(p)
    if len(_VOCAB) > 8:
        _VOCAB.clear()
    _VOCAB[key] = (list(rules), out)  # the list keeps the ids in the key alive
    return out
