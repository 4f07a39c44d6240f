"""Rule text templates (`explain:`, a fix's `why:`): `{name}` is replaced by a value, nothing else is evaluated.

`str.format` on rule text runs format specs (`{x:>4000000000}` allocates gigabytes) and attribute/index access
(`{x.__class__.__mro__}`), so rule text is never passed to it. `check` refuses any brace field that is not a plain
name when the rule loads; `fill` substitutes plain names only and leaves any other text as written. `{{` and `}}`
stay what str.format made of them, a literal brace (the classifier's generated text escapes its braces so).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from logdoctor.core import rxcache

_FIELD = rxcache.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]{0,63})\}")
_BRACE = re.compile(r"\{[^{}]{0,80}\}?")


def check(text: str) -> str | None:
    """Why `text` is not a valid template (a `{...}` that is not `{name}`), or None."""
    rest = _FIELD.sub("", text)
    m = _BRACE.search(rest)
    if m:
        field = m.group()[:40]
        return f"{field!r} in text: only {{name}} is substituted (no format spec, conversion, attribute or index)"
    if "}" in rest:
        return "a lone '}' in text: only {name} fields are allowed ('}}' for a brace)"
    return None


def fill(text: str, values: Mapping[str, object], missing: Callable[[str], str]) -> str:
    """`text` with each `{name}` replaced by str(values[name]), or by missing(name) when the value is absent."""

    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key is None:
            return m.group()[0]  # {{ or }}: a literal brace
        return str(values[key]) if key in values else missing(key)

    return _FIELD.sub(sub, text)
