"""Compiled rule cache: a folder of YAML rules is parsed once and kept as JSON keyed by the folder's content hash,
so `explain` does not parse 112 YAML files per run.

The cache is data, never code (docs/reliability.md): JSON whose only objects are the loader's own dataclasses, named
in an allow-list, and tuples (a rule's parsed condition tree is kept as plain lists, `Node.cache_data`); no pickle,
whose load runs whatever the file says. A cache file that another user
could have written (not ours, or group/world-writable) is not read.

The key hashes every rule file's relative path and bytes (plus the logdoctor version and this format's number), so
an edited, added or removed rule — bundled or from --rules DIR / $LOGDOCTOR_RULES_PATH — gives a new key and the
folder is parsed again. The cache lives in $LOGDOCTOR_CACHE_DIR, else $XDG_CACHE_HOME/logdoctor, else
~/.cache/logdoctor; a damaged or unreadable entry is rebuilt, an unwritable cache folder only costs the parse.
Only the non-strict (explain) path uses it: `rules lint`/`rules test` always parse and validate the files.
"""

from __future__ import annotations

import os
from pathlib import Path

FORMAT = 7  # 3: Rule.tier replaced Rule.priority; 4: JSON instead of pickle; 5: user folders schema-checked;
# 6: Rule.cond, the parsed condition tree; 7: the prefilter index as plain lists
_KEEP = 8  # entries per cache folder (old keys are pruned: a rule author edits often)


def _blake2b(data: bytes = b"", digest_size: int = 16):
    """blake2b without importing hashlib (which loads OpenSSL's _hashlib: ~2 ms of start-up)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without the builtin module
        from hashlib import blake2b
    return blake2b(data, digest_size=digest_size)


def cache_dir() -> Path:
    env = os.environ.get("LOGDOCTOR_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "logdoctor"


def rule_files(d: Path) -> list[Path]:
    """Every *.yaml, then every *.yml, under `d`, each group in Path order (as sorted(d.rglob(...)) gives them: not
    into symlinked folders), walked once with os.walk (rglob and sorting Paths cost ~2 ms of every explain)."""
    found: tuple[list[tuple[tuple[str, ...], str]], list[tuple[tuple[str, ...], str]]] = ([], [])
    top = str(d)
    for root, _dirs, files in os.walk(top):
        parts = tuple(os.path.relpath(root, top).split(os.sep)) if root != top else ()
        for f in files:
            if f.endswith(".yaml"):
                found[0].append((parts, f))
            elif f.endswith(".yml"):
                found[1].append((parts, f))
    return [d.joinpath(*parts, f) for group in found for parts, f in sorted(group, key=lambda x: (*x[0], x[1]))]


def content_key(d: Path, files: list[Path]) -> str:
    import hashlib

    from logdoctor import __version__

    h = hashlib.sha256(f"logdoctor {__version__} rule-cache {FORMAT} {d.resolve()}\n".encode())
    for p in files:
        h.update(p.relative_to(d).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:32]


def stat_key(d: Path, files: list[Path]) -> str:
    """What the folder looks like without reading a file: every rule file's path, size and mtime (ns)."""
    h = _blake2b(f"{FORMAT} {d.resolve()}\n".encode())
    for p in files:
        st = os.stat(p)
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def known_key(d: Path, files: list[Path]) -> str:
    """The content key, read from a stat-keyed note when no file's path, size or mtime changed since the note was
    written (no 112 file reads to hash them, issue 11), else hashed and noted. A changed file changes its mtime or
    size, so the note is a shortcut in front of the content hash, never a replacement for it."""
    from logdoctor import __version__

    skey = stat_key(d, files)
    note = cache_dir() / f"stat-{skey}.key"
    try:  # only a note this user wrote (owner and mode checked, as every cache entry; hostile-inputs F4)
        got = _read_own(note).decode().split()
        if len(got) == 2 and got[0] == __version__:
            return got[1]
    except (OSError, UnicodeDecodeError):
        pass
    key = content_key(d, files)
    # through the atomic writer: an O_EXCL|O_NOFOLLOW temporary, mode 0600, renamed over the entry itself
    write_entry(note, f"{__version__} {key}\n".encode(), keep=_KEEP * 4)
    return key


def load_dir(d: Path, build, classes: dict[str, type], derive, restore) -> list:
    """The rules of folder `d` (in file order), from the cache when its key matches, else `build(files)` and store.
    `build` raises RuleError for a bad file, which is never cached.

    The caller (the loader) says what an entry holds, so that this module imports nothing above it: `classes` are
    the dataclasses an entry may name (the allow-list), `derive(rules)` is the JSON data kept beside the rules (the
    prefilter's index), `restore(entry)` takes that data back on a hit (False: the entry is unusable, rebuild)."""
    files = rule_files(d)
    try:
        key = known_key(d, files)
    except OSError:
        return build(files)  # an unreadable file: let the loader name it
    path = cache_dir() / f"rules-{key}.json"
    try:
        entry = _decode(_read_own(path), classes)
        rules = entry["rules"]
        if isinstance(rules, list) and len(rules) == len(files) and restore(entry):
            return rules
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001, S110 - a damaged entry (cut, other version, unknown class) is rebuilt
        pass
    rules = build(files)
    _store(path, {"rules": rules, **derive(rules)})
    return rules


def _store(path: Path, entry: dict) -> None:
    import json

    try:
        text = json.dumps(_encode(entry), separators=(",", ":"))
    except (TypeError, ValueError):
        return  # a value JSON cannot hold (a YAML date in a user rule): parse every run rather than guess
    write_entry(path, text.encode(), keep=_KEEP)


def write_entry(path: Path, data: bytes, keep: int | None = None) -> None:
    """Write one cache entry atomically, mode 0600, and keep only the `keep` newest entries of its kind (the files
    of its folder named like it up to the first "-": rules-*, hyperscan-*, ...). Never raises: a read-only home or
    a full disk only costs the next run a rebuild."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        from logdoctor.core.atomic import write_bytes

        write_bytes(path, data, mode=0o600, private=True)
        if keep:
            kind = path.name.split("-", 1)[0] + "-*" + path.suffix
            old = sorted(path.parent.glob(kind), key=lambda p: p.stat().st_mtime, reverse=True)
            for p in old[keep:]:
                p.unlink(missing_ok=True)
    except OSError:
        pass


def read_entry(path: Path) -> bytes:
    """A cache entry's bytes, only if this user wrote it (see `_read_own`)."""
    return _read_own(path)


def _read_own(path: Path) -> bytes:
    """The bytes of a cache file only if this user wrote it: owned by us and writable by no one else (as ssh treats
    its keys); anything else is treated as absent and rebuilt."""
    import stat

    # no link followed, no FIFO waited on: a name planted in a shared cache folder is treated as absent
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with open(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise PermissionError(f"{path}: not this user's cache file")
        return fh.read()


def _encode(obj):
    names = _field_names(obj)
    if names is not None:
        out = {"__dc__": type(obj).__name__}
        for name in names:
            if name != "compiled":  # compiled regexes: rebuilt lazily on first use
                out[name] = _encode(getattr(obj, name))
        return out
    data = getattr(obj, "cache_data", None)
    if callable(data):  # a condition tree: kept as plain data, which its rule rebuilds it from (Rule.__post_init__)
        return _encode(data())
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(x) for x in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"__frozenset__": sorted(_encode(x) for x in obj)}
    if isinstance(obj, list):
        return [_encode(x) for x in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj) or {"__dc__", "__tuple__", "__frozenset__"} & obj.keys():
            raise TypeError("a mapping JSON cannot hold unambiguously")
        return {k: _encode(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot cache a {type(obj).__name__}")


def _field_names(obj) -> list[str] | None:
    """The field names of a dataclass instance (core/lean's, or a standard one), else None."""
    if isinstance(obj, type):
        return None
    lean = getattr(type(obj), "__lean_fields__", None)
    if lean is not None:
        return [f.name for f in lean]
    if not hasattr(type(obj), "__dataclass_fields__"):
        return None
    import dataclasses

    return [f.name for f in dataclasses.fields(obj)]


def _decode(data: bytes, classes: dict[str, type]):
    import json

    def hook(d: dict):  # called for every JSON object of the entry (~6700): the common cases first
        if len(d) == 1:
            if "__tuple__" in d:
                return tuple(d["__tuple__"])
            if "__frozenset__" in d:
                return frozenset(d["__frozenset__"])
        name = d.pop("__dc__", None)
        if name is None:
            return d
        return classes[name](**d)  # an unknown name: a damaged or foreign entry, rebuilt

    return json.loads(data, object_hook=hook)


def cached_json(path) -> object:
    """A JSON file (the classifier model: 0.5 MB, ~10-18 ms to parse) through a binary copy keyed by the file's
    content hash in the same cache folder (about 1 ms to load); any problem with the copy means parsing the JSON.

    The copy is data only (docs/reliability.md): a small JSON header plus the big numeric tables as raw machine
    doubles/integers (array.frombytes), checked against the shapes the header declares; never marshal or pickle,
    which would build whatever objects a tampered file describes."""
    import json

    data = Path(path).read_bytes()
    key = _blake2b(data).hexdigest()
    cpath = cache_dir() / f"json-{key}.bin"
    try:
        return _unpack(_read_own(cpath))
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001, S110 - a damaged or foreign copy is rebuilt
        pass
    value = json.loads(data)
    try:
        packed = _pack(value)
    except (ValueError, TypeError):
        return value
    write_entry(cpath, packed)
    return value


_MAGIC = b"LDCACHE1"


def _table(v) -> str | None:
    """'d' for a non-empty list of equal-length rows of floats, 'q' for a flat list of ints, else None."""
    if isinstance(v, list) and v and all(isinstance(r, list) for r in v):
        width = len(v[0])
        if width and all(len(r) == width and all(type(x) is float for x in r) for r in v):
            return "d"
    if isinstance(v, list) and v and all(type(x) is int for x in v):
        return "q"
    return None


def _pack(value) -> bytes:
    import array
    import json

    if not isinstance(value, dict):
        raise TypeError("only a JSON object is packed")
    head: dict = {"plain": {}, "tables": []}
    blobs: list[bytes] = []
    for k, v in value.items():
        kind = _table(v)
        if kind is None:
            head["plain"][k] = v
            continue
        flat = [x for r in v for x in r] if kind == "d" else v
        blob = array.array(kind, flat).tobytes()
        head["tables"].append(
            {"key": k, "kind": kind, "rows": len(v), "width": len(v[0]) if kind == "d" else 0, "bytes": len(blob)}
        )
        blobs.append(blob)
    h = json.dumps(head, separators=(",", ":")).encode()
    return _MAGIC + len(h).to_bytes(8, "little") + h + b"".join(blobs)


def _unpack(raw: bytes) -> dict:
    import array
    import json

    if not raw.startswith(_MAGIC):
        raise ValueError("not a cache copy")
    n = int.from_bytes(raw[8:16], "little")
    head = json.loads(raw[16 : 16 + n])
    out = dict(head["plain"])
    pos = 16 + n
    for t in head["tables"]:
        a = array.array(t["kind"])
        a.frombytes(raw[pos : pos + t["bytes"]])
        pos += t["bytes"]
        rows, width = t["rows"], t["width"]
        if (t["kind"] == "d" and len(a) != rows * width) or (t["kind"] == "q" and len(a) != rows):
            raise ValueError("a table does not have its declared shape")
        flat = a.tolist()
        out[t["key"]] = [flat[i * width : (i + 1) * width] for i in range(rows)] if t["kind"] == "d" else flat
    if pos != len(raw):
        raise ValueError("trailing bytes")
    return out
