"""Full JSON-Schema validation of rule files (for `rules lint` / `rules test`; jsonschema is too slow to import
on the explain path), and a static check for regexes prone to catastrophic backtracking."""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from logdoctor.errors import RuleError

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


@lru_cache(maxsize=4)
def load_schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / name).read_text())


def validate_rule_data(data: dict, path, text: str = "") -> None:
    import jsonschema
    v = jsonschema.Draft202012Validator(load_schema("rule.schema.json"))
    errs = sorted(v.iter_errors(data), key=lambda e: list(e.path))
    if errs:
        e = errs[0]
        key = next((str(p) for p in reversed(list(e.path)) if isinstance(p, str)), "id")
        m = re.search(rf"^\s*-?\s*{re.escape(key)}\s*:", text, re.M) if text else None
        where = f":{text.count(chr(10), 0, m.start()) + 1}" if m else ""
        loc = "/".join(str(p) for p in e.path) or "(top)"
        raise RuleError(f"{path}{where}: schema: {loc}: {e.message[:200]}")


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

    return walk(tree, False)
