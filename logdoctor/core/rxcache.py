"""Compiled regexes kept across runs: `compile(pattern, flags)` is `re.compile`, without re-parsing.

Why: `re.compile` parses and translates each pattern in pure Python (~0.1 ms each); `explain` compiles ~190 per run
(the per-line formats, prefixes and blocks at import, the ~40 rule regexes whose words are in the log) and that was
~15 ms of a ~70 ms run. The translation is a pure function of (pattern, flags, interpreter), so its result (the
`_sre` program) is kept in one file in the cache directory, keyed by the interpreter's exact version and
`_sre.MAGIC`, and later runs hand it straight to `_sre.compile`, the C constructor `re.compile` itself ends with.

The file is data only, like the other caches (docs/reliability.md): a JSON header (patterns, flags, group names,
offsets) and the programs as raw 32-bit code words; read only if this user owns it and no one else can write it,
written atomically with mode 0600. `_sre.compile` validates every program it is given. An entry is stored only after
the pattern rebuilt from it compares equal to `re.compile`'s (a `Pattern` compares pattern, flags and program); any
other interpreter, a damaged or foreign file, or an internal API that differs falls back to plain `re.compile`.
Set LOGDOCTOR_NO_RXCACHE=1 to bypass it.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
from array import array
from pathlib import Path

try:
    import _sre
    from re import _compiler, _parser  # type: ignore[attr-defined]

    _KEY = f"3|{sys.implementation.cache_tag}|{sys.version}|{_sre.MAGIC}|{_sre.CODESIZE}"
    if array("I").itemsize != _sre.CODESIZE:  # the program is stored as packed code words
        _KEY = ""
except (ImportError, AttributeError):  # not CPython's re: plain re.compile
    _KEY = ""

_MAGIC = b"LDREGEX1"
_MAX = 4000  # entries kept; rules from many --rules folders cannot grow the file without bound
# (pattern, flags) -> (flags | inline flags, code words as bytes, groups - 1, {name: index}, (name or None, ...))
_table: dict[tuple[str, int], tuple] | None = None
_added = False


def _path() -> Path:
    # matching/cache.py's cache_dir(), repeated here because this is a bottom-layer module
    env = os.environ.get("LOGDOCTOR_CACHE_DIR")
    if env:
        return Path(env) / "regex.bin"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "logdoctor" / "regex.bin"


def _read_own(path: Path) -> bytes:
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise PermissionError(f"{path}: not this user's cache file")
        return fh.read()


def _decode(raw: bytes) -> dict[tuple[str, int], tuple]:
    import json

    if not raw.startswith(_MAGIC):
        raise ValueError("not a regex cache")
    n = int.from_bytes(raw[8:16], "little")
    head = json.loads(raw[16 : 16 + n])
    if head.get("key") != _KEY:
        return {}
    out: dict[tuple[str, int], tuple] = {}
    pos = 16 + n
    for pattern, flags, eff, size, groups, groupindex, indexgroup in head["entries"]:
        code = raw[pos : pos + size]
        pos += size
        if len(code) != size or size % _sre.CODESIZE:
            raise ValueError("a program is cut")
        out[(pattern, flags)] = (eff, code, groups, groupindex, tuple(indexgroup))
    if pos != len(raw):
        raise ValueError("trailing bytes")
    return out


def _encode(table: dict[tuple[str, int], tuple]) -> bytes:
    import json

    entries = []
    blobs = []
    for (pattern, flags), (eff, code, groups, groupindex, indexgroup) in table.items():
        entries.append([pattern, flags, eff, len(code), groups, groupindex, list(indexgroup)])
        blobs.append(code)
    head = json.dumps({"key": _KEY, "entries": entries}, separators=(",", ":")).encode()
    return _MAGIC + len(head).to_bytes(8, "little") + head + b"".join(blobs)


def _load() -> dict[tuple[str, int], tuple]:
    global _table
    _table = {}
    if not _KEY or os.environ.get("LOGDOCTOR_NO_RXCACHE"):
        return _table
    try:
        _table = _decode(_read_own(_path()))
    except Exception:  # noqa: BLE001, S110 - no file, a damaged or foreign one, no home directory: compile as usual
        pass
    atexit.register(_save)
    return _table


def _save() -> None:
    if not _added or _table is None:
        return
    try:
        from logdoctor.core.atomic import write_bytes

        p = _path()
        p.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(p, _encode(_table), mode=0o600, private=True)
    except Exception:  # noqa: BLE001, S110 - read-only home, full disk: the next run compiles again
        pass


def _program(pattern: str, flags: int) -> tuple:
    """What `re._compiler.compile` hands `_sre.compile`, after the pattern string (CPython 3.11-3.13)."""
    p = _parser.parse(pattern, flags)
    code = array("I", _compiler._code(p, flags)).tobytes()
    groupindex = p.state.groupdict
    indexgroup: list[str | None] = [None] * p.state.groups
    for k, i in groupindex.items():
        indexgroup[i] = k
    return (int(flags | p.state.flags), code, p.state.groups - 1, dict(groupindex), tuple(indexgroup))


def _build(pattern: str, entry: tuple) -> re.Pattern[str]:
    eff, code, groups, groupindex, indexgroup = entry
    words = array("I")
    words.frombytes(code)
    return _sre.compile(pattern, eff, words.tolist(), groups, groupindex, indexgroup)


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 - the point is to read like re.compile
    table = _table if _table is not None else _load()
    if not _KEY or not isinstance(pattern, str) or flags & re.DEBUG:
        return re.compile(pattern, flags)
    flags = int(flags)
    entry = table.get((pattern, flags))
    if entry is not None:
        try:
            return _build(pattern, entry)
        except Exception:  # noqa: BLE001 - a damaged entry: drop it, compile as usual
            table.pop((pattern, flags), None)
    compiled = re.compile(pattern, flags)  # raises re.error exactly as before
    if len(table) < _MAX and "LOGDOCTOR_NO_RXCACHE" not in os.environ:
        global _added
        try:
            entry = _program(pattern, flags)
            if _build(pattern, entry) == compiled:
                table[(pattern, flags)] = entry
                _added = True
        except Exception:  # noqa: BLE001, S110 - internals differ on this interpreter: keep plain re.compile
            pass
    return compiled
