"""Reading the shipped atlas (logdoctor/data/atlas.json.gz, built by tools/atlas/build.py) into entries and a
literal index, once per process and only when asked: `explain` loads it only when the decision reaches the atlas
tier (no rule fired), so a verdict a rule settles never pays for it."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from logdoctor.core.errors import LogdoctorError
from logdoctor.core.paths import PACKAGE
from logdoctor.engines.atlas.index import LiteralIndex
from logdoctor.engines.atlas.model import Entry, Variant

SCHEMA = "logdoctor.atlas/v1"
ENV = "LOGDOCTOR_ATLAS"  # another atlas file (tests, a locally rebuilt one)


class AtlasError(LogdoctorError):
    """The atlas file is missing or unreadable: one line; exit 2 for a file the user named, 4 for the shipped one (a
    broken installation)."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Atlas:
    """The loaded atlas: entries (built on demand from the raw tables), the releases read per engine, the sources'
    hashes, and the literal index."""

    path: Path
    raw: list
    modules: list[str]
    versions: dict[str, tuple[str, ...]]
    sources: tuple[dict, ...]
    extractor: str
    _built: dict[int, Entry] = field(default_factory=dict, repr=False)
    _indexes: dict[str | None, LiteralIndex] = field(default_factory=dict, repr=False)

    def index_for(self, engine: str | None = None) -> LiteralIndex:
        """The literal index of one engine's entries (all engines for None), built on first use."""
        key = engine if engine in self.versions else None
        got = self._indexes.get(key)
        if got is None:
            try:
                got = self._indexes[key] = LiteralIndex(self.raw, key)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError) as e:
                raise self._malformed(e) from None
        return got

    def _malformed(self, e: Exception) -> AtlasError:
        return AtlasError(f"atlas: {self.path} has a malformed entry ({type(e).__name__}: {str(e)[:120]})")

    @property
    def index(self) -> LiteralIndex:
        return self.index_for(None)

    def __len__(self) -> int:
        return len(self.raw)

    def entry(self, i: int) -> Entry:
        e = self._built.get(i)
        if e is None:
            try:
                eid, engine, kind, exc, level, rec, variants = self.raw[i]
                vs = tuple(
                    Variant(tuple(p if p != 0 else None for p in t), self.modules[m], q, line, mask)
                    for t, m, q, line, mask in variants
                )
            except (TypeError, ValueError, IndexError, KeyError) as err:
                raise self._malformed(err) from None
            e = self._built[i] = Entry(eid, engine, kind, exc, level, rec or "", vs)
        return e

    @property
    def entries(self) -> list[Entry]:
        return [self.entry(i) for i in range(len(self.raw))]

    def versions_of(self, engine: str, mask: int) -> tuple[str, ...]:
        vs = self.versions.get(engine, ())
        return tuple(v for i, v in enumerate(vs) if mask >> i & 1)

    def by_id(self, eid: str) -> Entry | None:
        return next((self.entry(i) for i, r in enumerate(self.raw) if r[0] == eid), None)


def default_path() -> Path:
    env = os.environ.get(ENV)
    return Path(env) if env else PACKAGE / "data" / "atlas.json.gz"


def read_document(path: Path, shipped: bool = False) -> dict:
    """The raw JSON document; AtlasError (one line) when it cannot be read."""
    code = 4 if shipped else 2
    try:
        with gzip.open(path, "rb") as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        raise AtlasError(
            f"atlas: {path} is missing (reinstall logdoctor, or rebuild with tools/atlas/build.py)", code
        ) from None
    except (OSError, EOFError, ValueError) as e:
        raise AtlasError(f"atlas: {path} is unreadable ({type(e).__name__}: {str(e)[:120]})", code) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise AtlasError(f"atlas: {path} is not a {SCHEMA} file", code)
    try:
        doc["modules"], doc["entries"], doc["versions"], doc["sources"]
    except KeyError as e:
        raise AtlasError(f"atlas: {path} lacks its {e.args[0]!r} table", code) from None
    return doc


def parse(doc: dict, path: Path) -> Atlas:
    versions = {k: tuple(v) for k, v in doc["versions"].items()}
    raw = doc["entries"]
    return Atlas(path, raw, doc["modules"], versions, tuple(doc["sources"]), doc.get("extractor", ""))


def load(path: Path | None = None) -> Atlas:
    """The atlas at `path` (default: the shipped one, or $LOGDOCTOR_ATLAS), parsed and indexed once per file."""
    p = path or default_path()
    return _load(p, path is None and ENV not in os.environ)


@lru_cache(maxsize=4)
def _load(p: Path, shipped: bool) -> Atlas:
    doc = read_document(p, shipped=shipped)
    try:
        return parse(doc, p)
    except (TypeError, ValueError, IndexError, KeyError) as e:
        raise AtlasError(f"atlas: {p} has a malformed entry ({type(e).__name__}: {str(e)[:120]})") from None
