"""Full JSON-Schema validation of rule files (for `rules lint` / `rules test`; jsonschema is too slow to import
on the explain path), and a static check for regexes prone to catastrophic backtracking."""

from __future__ import annotations

import json
import re
from functools import lru_cache

from logdoctor.core.errors import RuleError
from logdoctor.core.paths import PACKAGE

SCHEMA_DIR = PACKAGE / "schemas"


@lru_cache(maxsize=4)
def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def validate_rule_data(data: dict, path, text: str = "") -> None:
    """Raise RuleError for the first schema problem (the explain path's strict loads)."""
    found = schema_problems(data, path, text)
    if found:
        raise RuleError(found[0])


def schema_problems(data: dict, path, text: str = "") -> list[str]:
    """Every JSON-Schema problem of a rule file, each as `file:line: schema: where: message` (rules lint)."""
    import jsonschema

    v = jsonschema.Draft202012Validator(load_schema("rule.schema.json"))
    out = []
    for e in sorted(v.iter_errors(data), key=lambda e: [str(p) for p in e.path]):
        key = next((str(p) for p in reversed(list(e.path)) if isinstance(p, str)), "id")
        msg = " ".join(e.message.split())
        extra = (
            re.findall(r"'([^']+)'", msg.split("(", 1)[1])
            if e.validator == "additionalProperties" and "(" in msg
            else []
        )
        if extra:  # point at the unexpected key itself, and say what it is: a misspelt condition is the usual case
            key = extra[0]
            from logdoctor.matching.conditions import COMBINATORS, LEAVES  # the leaf registry, as the loader

            in_match = any(str(p) == "match" or str(p) in COMBINATORS for p in e.path)
            if in_match:  # the loader's own words for it, so lint and explain say it the same way
                msg = f"unknown condition {key!r} (known: {', '.join((*LEAVES, *COMBINATORS))})"
            else:
                msg = f"unknown field {key!r} ({msg})"
        m = None
        for pat in (rf"^[ \t]*-?[ \t]*{re.escape(key)}\s*:", rf"[{{,]\s*{re.escape(key)}\s*:"):  # block, flow
            m = m or (re.search(pat, text, re.M) if text else None)
        where = f":{text.count(chr(10), 0, m.start()) + 1}" if m else ""
        loc = "/".join(str(p) for p in e.path) or "(top)"
        out.append(f"{path}{where}: schema: {loc}: {msg if len(msg) <= 2000 else msg[:2000] + '…'}")
    return out


def backtracking_risk(pattern: str) -> str | None:
    """A reason string when `pattern` nests unbounded repeats (e.g. (a+)+, (.*)*, (\\w+\\s?)+), else None."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore
    try:
        tree = sre_parse.parse(pattern)
    except re.error as exc:
        return f"does not compile: {exc}"
    MAXREPEAT = sre_parse.MAXREPEAT

    def walk(items, inside_unbounded: bool) -> str | None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                unbounded = hi == MAXREPEAT or hi > 100
                if unbounded and inside_unbounded and name != "POSSESSIVE_REPEAT":
                    return "nested unbounded repeat"
                # only a repeat that opens the repeated body, with nothing mandatory after it, can overlap with
                # itself: (a+)+, (\w+\s?)+, (.*)* — but not (\d+,)*
                r = walk(_head(sub), unbounded) if unbounded and _rest_optional(sub) else None
                if r:
                    return r
                r = walk(sub, False)
                if r:
                    return r
            elif name == "SUBPATTERN":
                r = walk(av[-1], inside_unbounded)
                if r:
                    return r
            elif name == "BRANCH":
                for alt in av[1]:
                    r = walk(alt, inside_unbounded)
                    if r:
                        return r
            elif name == "ATOMIC_GROUP":
                continue
        return None

    def _rest_optional(sub) -> bool:
        body = sub
        while len(body) == 1 and str(body[0][0]) == "SUBPATTERN":
            body = body[0][1][-1]
        try:
            return len(body) <= 1 or body[1:].getwidth()[0] == 0
        except (AttributeError, TypeError):
            return True

    def _head(sub):
        items = list(sub)
        while items and str(items[0][0]) == "SUBPATTERN":
            items = list(items[0][1][-1])
        return items[:1]

    return walk(tree, False) or _split_ambiguous(tree, sre_parse) or _overlapping_alternation(tree, sre_parse)


def _charset(item, sre_parse) -> set[str] | None:
    """The printable ASCII characters one parse item can start with (None: not a single-character item)."""
    op, av = item
    name = str(op)
    chars = [chr(c) for c in range(32, 127)]
    if name == "LITERAL":
        return {chr(av)}
    if name == "NOT_LITERAL":
        return {c for c in chars if ord(c) != av}
    if name == "ANY":
        return set(chars)
    if name == "IN":
        neg = False
        out: set[str] = set()
        for sop, sav in av:
            sname = str(sop)
            if sname == "NEGATE":
                neg = True
            elif sname == "LITERAL":
                out.add(chr(sav))
            elif sname == "RANGE":
                out |= {c for c in chars if sav[0] <= ord(c) <= sav[1]}
            elif sname == "CATEGORY":
                rx = {
                    "CATEGORY_DIGIT": r"\d",
                    "CATEGORY_NOT_DIGIT": r"\D",
                    "CATEGORY_SPACE": r"\s",
                    "CATEGORY_NOT_SPACE": r"\S",
                    "CATEGORY_WORD": r"\w",
                    "CATEGORY_NOT_WORD": r"\W",
                }.get(str(sav))
                if rx is None:
                    return None
                out |= {c for c in chars if re.match(rx, c)}
        return set(chars) - out if neg else out
    return None


def _split_ambiguous(tree, sre_parse) -> str | None:
    """(x y+)* where y can match x: a run of text splits into repeats in exponentially many ways (the vLLM tag
    prefix "(a_a_a_…!" hung on this, issue 11)."""
    MAXREPEAT = sre_parse.MAXREPEAT

    def body_of(sub):
        items = list(sub)
        while len(items) == 1 and str(items[0][0]) == "SUBPATTERN":
            items = list(items[0][1][-1])
        return items

    def walk(items) -> str | None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                lo, hi, sub = av
                body = body_of(sub)
                if (hi == MAXREPEAT or hi > 100) and len(body) >= 2:
                    last = body[-1]
                    if str(last[0]) in ("MAX_REPEAT", "MIN_REPEAT") and (last[1][1] == MAXREPEAT or last[1][1] > 100):
                        inner = body_of(last[1][2])
                        head = _charset(body[0], sre_parse) if len(body[0]) else None
                        tail = _charset(inner[0], sre_parse) if len(inner) == 1 else None
                        if head and tail and head & tail:
                            return "repeat whose body can split the same text several ways ((x y+)* with y matching x)"
                r = walk(sub)
                if r:
                    return r
            elif name == "SUBPATTERN":
                r = walk(av[-1])
                if r:
                    return r
            elif name == "BRANCH":
                for alt in av[1]:
                    r = walk(alt)
                    if r:
                        return r
        return None

    return walk(tree)


def _overlapping_alternation(tree, sre_parse) -> str | None:
    """(a|aa)+: a repeated body with two ways through it (alternatives, optional parts) that can read the same
    text, so a run of it splits exponentially many ways. Two ways are told apart when, position by position, their
    single-character items stop overlapping; a way that ends first overlaps only if the other's next character can
    start the body again. Anything not a single character (a nested repeat) counts as overlapping."""
    MAXREPEAT = sre_parse.MAXREPEAT

    def walk(items) -> str | None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                unbounded = name != "POSSESSIVE_REPEAT" and (hi == MAXREPEAT or hi > 100)
                if unbounded and _repeat_overlaps(sub, sre_parse):
                    return "repeated alternation whose branches can match the same text ((a|aa)+)"
                r = walk(sub)
            elif name == "SUBPATTERN":
                r = walk(av[-1])
            elif name == "BRANCH":
                r = next((x for x in (walk(alt) for alt in av[1]) if x), None)
            else:
                r = None
            if r:
                return r
        return None

    return walk(tree)


def _ways(items, limit: int = 64) -> list[list] | None:
    """Every way through `items` as a flat list of items: groups inlined, alternatives and optional parts expanded
    (None past `limit` ways: too many to compare)."""
    out: list[list] = [[]]
    for op, av in items:
        name = str(op)
        alts: list[list] | None
        if name == "SUBPATTERN":
            alts = _ways(av[-1], limit)
        elif name == "BRANCH":
            alts = []
            for alt in av[1]:
                sub = _ways(alt, limit)
                if sub is None:
                    return None
                alts += sub
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and av[0] == 0 and av[1] == 1:
            sub = _ways(av[2], limit)
            alts = None if sub is None else [[], *sub]
        else:
            alts = [[(op, av)]]
        if alts is None or len(out) * len(alts) > limit:
            return None
        out = [p + a for p in out for a in alts]
    return out


def _repeat_overlaps(sub, sre_parse) -> bool:
    ways = [w for w in (_ways(sub) or []) if w]
    if len(ways) < 2:
        return False
    firsts = [_charset(w[0], sre_parse) for w in ways]
    first = None if any(f is None for f in firsts) else set().union(*firsts)  # type: ignore[arg-type]
    return any(_ways_overlap(p, q, first, sre_parse) for i, p in enumerate(ways) for q in ways[i + 1 :])


def _ways_overlap(p, q, first: set[str] | None, sre_parse) -> bool:
    for i in range(min(len(p), len(q))):
        a, b = _charset(p[i], sre_parse), _charset(q[i], sre_parse)
        if a is None or b is None:
            return True
        if not a & b:
            return False
    if len(p) == len(q):
        return True
    nxt = _charset((q if len(q) > len(p) else p)[min(len(p), len(q))], sre_parse)
    return nxt is None or first is None or bool(nxt & first)
