"""Compiled rule cache: a folder of YAML rules is parsed once and kept as a pickle keyed by the folder's content
hash, so `explain` does not parse 112 YAML files per run.

The key hashes every rule file's relative path and bytes (plus the logdoctor version and this format's number), so
an edited, added or removed rule — bundled or from --rules DIR / $LOGDOCTOR_RULES_PATH — gives a new key and the
folder is parsed again. The cache lives in $LOGDOCTOR_CACHE_DIR, else $XDG_CACHE_HOME/logdoctor, else
~/.cache/logdoctor; a damaged or unreadable entry is rebuilt, an unwritable cache folder only costs the parse.
Only the non-strict (explain) path uses it: `rules lint`/`rules test` always parse and validate the files.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

FORMAT = 2
_KEEP = 8   # entries per cache folder (old keys are pruned: a rule author edits often)


def cache_dir() -> Path:
    env = os.environ.get("LOGDOCTOR_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "logdoctor"


def rule_files(d: Path) -> list[Path]:
    return sorted(d.rglob("*.yaml")) + sorted(d.rglob("*.yml"))


def content_key(d: Path, files: list[Path]) -> str:
    from logdoctor import __version__
    h = hashlib.sha256(f"logdoctor {__version__} rule-cache {FORMAT} {d.resolve()}\n".encode())
    for p in files:
        h.update(p.relative_to(d).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:32]


def load_dir(d: Path, build) -> list:
    """The rules of folder `d` (in file order), from the cache when its key matches, else `build(files)` and store.
    `build` raises RuleError for a bad file, which is never cached."""
    files = rule_files(d)
    try:
        key = content_key(d, files)
    except OSError:
        return build(files)     # an unreadable file: let the loader name it
    path = cache_dir() / f"rules-{key}.pickle"
    from logdoctor.matching import prefilter
    try:
        with open(path, "rb") as fh:
            entry = pickle.load(fh)
        rules, reqs = entry["rules"], entry["requirements"]
        if isinstance(rules, list) and len(rules) == len(files) and isinstance(reqs, dict):
            prefilter.seed(reqs)
            return rules
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged entry (truncated, other Python, stale class) is rebuilt
        pass
    rules = build(files)
    # each regex's required literal words (the prefilter's index), so a run never parses a pattern to learn them
    reqs = {p: prefilter.requirement(p) for p in prefilter.patterns(rules)}
    _store(path, {"rules": rules, "requirements": reqs})
    return rules


def _store(path: Path, entry: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(entry, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        old = sorted(path.parent.glob("rules-*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for p in old[_KEEP:]:
            p.unlink(missing_ok=True)
    except OSError:
        pass    # read-only home, full disk: the next run parses again


def cached_json(path) -> object:
    """A JSON file (the classifier model: 0.5 MB, ~10-18 ms to parse) through a marshal copy keyed by the file's
    content hash in the same cache folder (under 1 ms to load); any problem with the copy means parsing the JSON."""
    import json
    import marshal
    data = Path(path).read_bytes()
    key = hashlib.blake2b(data, digest_size=16).hexdigest()
    cpath = cache_dir() / f"json-{key}.marshal"
    try:
        with open(cpath, "rb") as fh:
            return marshal.load(fh)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged copy is rebuilt
        pass
    value = json.loads(data)
    try:
        cpath.parent.mkdir(parents=True, exist_ok=True)
        tmp = cpath.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            marshal.dump(value, fh)
        os.replace(tmp, cpath)
    except (OSError, ValueError):
        pass
    return value
