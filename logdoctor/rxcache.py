"""Compiled regexes kept across runs: `compile(pattern, flags)` is `re.compile`, without re-parsing.

Why: `re.compile` parses and translates each pattern in pure Python (~0.1 ms each); `explain` compiles ~190 per run
(the per-line formats, prefixes and blocks at import, the ~40 rule regexes whose words are in the log) and that was
~15 ms of a ~70 ms run. The translation is a pure function of (pattern, flags, interpreter), so its result (the
`_sre` program) is stored in one marshal file in the cache directory, keyed by the interpreter's exact version and
`_sre.MAGIC`, and later runs hand it straight to `_sre.compile`, the C constructor `re.compile` itself ends with.

Safe by construction: an entry is stored only after the pattern rebuilt from it compares equal to `re.compile`'s
(a `Pattern` compares pattern, flags and program); any other interpreter, a damaged or unwritable file, or an
internal API that differs falls back to plain `re.compile`. Set LOGDOCTOR_NO_RXCACHE=1 to bypass it.
"""

from __future__ import annotations

import atexit
import marshal
import os
import re
import sys
from array import array
from pathlib import Path

try:
    import _sre
    from re import _compiler, _parser  # type: ignore[attr-defined]

    _KEY = f"2|{sys.implementation.cache_tag}|{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}"
    if array("I").itemsize != _sre.CODESIZE:  # the program is stored as packed code words
        _KEY = ""
except (ImportError, AttributeError):  # not CPython's re: plain re.compile
    _KEY = ""

_MAX = 4000  # entries kept; rules from many --rules folders cannot grow the file without bound
_table: dict[tuple[str, int], tuple] | None = None
_added = False


def _path() -> Path:
    # matching/cache.py's cache_dir(), repeated here because this is a bottom-layer module
    env = os.environ.get("LOGDOCTOR_CACHE_DIR")
    if env:
        return Path(env) / "regex.marshal"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "logdoctor" / "regex.marshal"


def _load() -> dict[tuple[str, int], tuple]:
    global _table
    _table = {}
    if not _KEY or os.environ.get("LOGDOCTOR_NO_RXCACHE"):
        return _table
    try:
        with open(_path(), "rb") as f:
            key, table = marshal.load(f)
        if key == _KEY and isinstance(table, dict):
            _table = table
    except Exception:  # noqa: BLE001 - no file, a damaged one, no home directory: compile as usual
        pass
    atexit.register(_save)
    return _table


def _save() -> None:
    if not _added or _table is None:
        return
    try:
        p = _path()
    except Exception:  # noqa: BLE001 - no home directory to keep it in
        return
    tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(marshal.dumps((_KEY, _table)))
        os.replace(tmp, p)
    except (OSError, ValueError):
        try:
            tmp.unlink()
        except OSError:
            pass


def _program(pattern: str, flags: int) -> tuple:
    """What `re._compiler.compile` hands `_sre.compile`, after the pattern string (CPython 3.11–3.13)."""
    p = _parser.parse(pattern, flags)
    # packed words: a marshalled list of ~35 000 ints loads 15x slower than the same bytes
    code = array("I", _compiler._code(p, flags)).tobytes()
    groupindex = p.state.groupdict
    indexgroup: list[str | None] = [None] * p.state.groups
    for k, i in groupindex.items():
        indexgroup[i] = k
    return (int(flags | p.state.flags), code, p.state.groups - 1, dict(groupindex), tuple(indexgroup))


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 - the point is to read like re.compile
    table = _table if _table is not None else _load()
    if not _KEY or not isinstance(pattern, str) or flags & re.DEBUG:
        return re.compile(pattern, flags)
    flags = int(flags)
    entry = table.get((pattern, flags))
    if entry is not None:
        try:
            return _sre.compile(pattern, entry[0], array("I", entry[1]).tolist(), *entry[2:])
        except Exception:  # noqa: BLE001 - a damaged entry: drop it, compile as usual
            table.pop((pattern, flags), None)
    compiled = re.compile(pattern, flags)  # raises re.error exactly as before
    if len(table) < _MAX and "LOGDOCTOR_NO_RXCACHE" not in os.environ:
        global _added
        try:
            entry = _program(pattern, flags)
            if _sre.compile(pattern, entry[0], array("I", entry[1]).tolist(), *entry[2:]) == compiled:
                table[(pattern, flags)] = entry
                _added = True
        except Exception:  # noqa: BLE001 - internals differ on this interpreter: keep plain re.compile
            pass
    return compiled
