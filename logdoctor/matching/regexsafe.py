"""Regexes from user rule folders run in bounded time: under RE2 (linear, `pip install 'logdoctor[triage]'`) where
the pattern compiles there, else with Python's backtracking engine only after the lint (schema.backtracking_risk)
found no catastrophic shape. The bundled rules are linted by the test suite and keep Python's `re`.

`problem` is also what `rules lint` reports for every pattern, so a rule that lint passes is one explain runs.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_PATTERN = 4096  # characters; the longest bundled pattern is a few hundred
MAX_NESTING = 64  # group depth; Python's parser recurses per level (2000 levels: RecursionError)


def nesting(pattern: str) -> int:
    """The deepest group nesting of `pattern`, counted without parsing it (escapes and [...] classes skipped)."""
    depth = best = 0
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]" or pattern[i + 1 : i + 3] == "^]":
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "(":
            depth += 1
            best = max(best, depth)
        elif c == ")":
            depth = max(depth - 1, 0)
        i += 1
    return best


def problem(pattern: str) -> str | None:
    """Why `pattern` may not run: too long, too deeply nested, does not compile, or a backtracking risk."""
    if len(pattern) > MAX_PATTERN:
        return f"pattern is {len(pattern)} characters (limit {MAX_PATTERN})"
    depth = nesting(pattern)
    if depth > MAX_NESTING:
        return f"groups nested {depth} deep (limit {MAX_NESTING})"
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"does not compile: {exc}"
    except (RecursionError, OverflowError, MemoryError) as exc:
        return f"does not compile: {type(exc).__name__}"
    from logdoctor.matching.schema import backtracking_risk

    try:
        why = backtracking_risk(pattern)
    except RecursionError:
        return "too deeply nested to check"
    return f"{why} (catastrophic backtracking risk)" if why else None


@lru_cache(maxsize=1)
def _re2():
    try:
        import re2  # google-re2, the triage extra
    except ImportError:
        return None
    opts = re2.Options()
    opts.log_errors = False  # RE2 would print its parse errors on stderr
    return re2, opts


def re2_available() -> bool:
    return _re2() is not None


def compile_user(pattern: str):
    """A compiled pattern with `search(text, pos, endpos)`, `fullmatch` and match `groupdict()`: RE2's when it
    takes the pattern (and the shape checks pass), else Python's after the lint. Raises ValueError(reason)."""
    if len(pattern) > MAX_PATTERN or nesting(pattern) > MAX_NESTING:
        raise ValueError(problem(pattern))
    mod = _re2()
    if mod is not None:
        re2, opts = mod
        try:
            return re2.compile(pattern, options=opts)
        except re2.error:
            pass  # look-around, back-references: Python's engine, after the lint
    why = problem(pattern)
    if why:
        raise ValueError(why)
    return re.compile(pattern)
