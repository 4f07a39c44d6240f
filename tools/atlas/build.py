"""Build the atlas (logdoctor/data/atlas.json.gz) from the engines' own released sources.

    python tools/atlas/build.py --cache /work/atlas-cache --out logdoctor/data/atlas.json.gz
    python tools/atlas/build.py --sources tests/data/atlas_src --out /tmp/atlas.json.gz   # a tree ENGINE/VERSION/...

Wheels come from the package registry (`pip download --no-deps --only-binary :all: ENGINE==VERSION`, into
CACHE/wheels, never into the repository); only their `.py` members are read, straight from the zip. The output
records each wheel's name and sha256, so a rebuild from the same wheels gives the same bytes (gzip mtime 0, sorted
keys, files and versions in a fixed order). Identical files across versions are mined once (by content hash; the
per-file results are kept in CACHE/mined, keyed by the extractor's own hash).

Stable IDs: an entry is keyed on engine + module + function + exception class + the normalised literal skeleton of
its message. A message of a later version takes an earlier ID when that key matches, when only its module/function
moved (same class and skeleton), or when it is a rewording in the same function (skeleton similarity >= FUZZY).
Each ID keeps its variants (template, location) with the versions that carry each: the per-ID version history.
"""

from __future__ import annotations

import argparse
import difflib
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract import mine_source  # noqa: E402

SCHEMA = "logdoctor.atlas/v1"
# releases read, oldest first (a spread over the last 18 months: every minor, the last patch of each)
VERSIONS: dict[str, tuple[str, ...]] = {
    "sglang": (
        "0.4.6.post5",
        "0.4.9.post6",
        "0.4.10.post2",
        "0.5.2",
        "0.5.4.post3",
        "0.5.6.post2",
        "0.5.9",
        "0.5.12.post1",
        "0.5.15.post1",
        "0.5.18",
        "0.5.21",
        "0.5.23",
    ),
    "vllm": ("0.8.5.post1", "0.9.2", "0.10.2", "0.11.2", "0.12.0", "0.15.1", "0.20.2", "0.25.1", "0.30.0", "0.33.0"),
}
# the parts of each package an operator's log can come from (tests, benchmarks, examples and other front ends left out)
INCLUDE = {
    "sglang": ("sglang/srt/", "sglang/jit_kernel/", "sglang/launch_server.py", "sglang/cli/"),
    "vllm": ("vllm/",),
}
EXCLUDE = ("/tests/", "/test/", "/benchmarks/", "/examples/", "vllm/third_party/")
FUZZY = 0.75
EXTRACTOR = Path(__file__).resolve().parent / "extract.py"


def extractor_hash() -> str:
    return hashlib.sha256(EXTRACTOR.read_bytes()).hexdigest()[:16]


def wanted(engine: str, path: str) -> bool:
    return path.endswith(".py") and path.startswith(INCLUDE[engine]) and not any(x in path for x in EXCLUDE)


def fetch(engine: str, version: str, wheels: Path, download: bool) -> Path:
    """The wheel of ENGINE==VERSION in the cache, downloaded (no dependencies, binary only) when missing."""
    norm = engine.replace("-", "_")
    found = sorted(wheels.glob(f"{norm}-{version}-*.whl"))
    if not found and download:
        wheels.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:"]
        subprocess.run([*cmd, f"{engine}=={version}", "-d", str(wheels)], check=True)
        found = sorted(wheels.glob(f"{norm}-{version}-*.whl"))
    if not found:
        raise SystemExit(f"build: no wheel for {engine}=={version} in {wheels} (run without --no-download)")
    return found[0]


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def wheel_sources(engine: str, whl: Path) -> Iterator[tuple[str, bytes]]:
    with zipfile.ZipFile(whl) as z:
        for info in sorted(z.infolist(), key=lambda i: i.filename):
            if wanted(engine, info.filename):
                yield info.filename, z.read(info)


def tree_sources(engine: str, root: Path) -> Iterator[tuple[str, bytes]]:
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if wanted(engine, rel):
            yield rel, p.read_bytes()


def _mine(text: str) -> list[list]:
    return [
        [s.kind, s.exc, s.level, list(s.template), s.qualname, s.line, s.recoverable] for s in mine_source(text, "")
    ]


def mine_all(blobs: dict[str, bytes], cache: Path | None, jobs: int) -> dict[str, list[list]]:
    """content sha -> mined sites (without module), from the cache where present."""
    out: dict[str, list[list]] = {}
    todo: list[str] = []
    cdir = cache / "mined" / extractor_hash() if cache else None
    for sha in sorted(blobs):
        f = cdir / f"{sha}.json" if cdir else None
        if f is not None and f.exists():
            out[sha] = json.loads(f.read_text())
        else:
            todo.append(sha)
    texts = [blobs[s].decode("utf-8", "replace") for s in todo]
    results: Iterator[list[list]]
    if jobs > 1 and len(todo) > 20:
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(_mine, texts, chunksize=8)
    else:
        pool = None
        results = map(_mine, texts)
    for i, (sha, res) in enumerate(zip(todo, results)):
        out[sha] = res
        if cdir is not None:
            cdir.mkdir(parents=True, exist_ok=True)
            (cdir / f"{sha}.json").write_text(json.dumps(res))
        if i and i % 500 == 0:
            print(f"  mined {i}/{len(todo)} files", file=sys.stderr, flush=True)
    if pool is not None:
        pool.shutdown()
    return out


def skeleton(template: list) -> str:
    """The message's literal text, lower case, digits and spacing normalised: what survives a reworded value."""
    text = " ".join(p for p in template if p).lower()
    return " ".join("".join("#" if c.isdigit() else c for c in text).split())


class Ids:
    """Stable IDs across versions (see the module docstring)."""

    def __init__(self) -> None:
        self.exact: dict[tuple, str] = {}
        self.moved: dict[tuple, str] = {}
        self.by_func: dict[tuple, list[tuple[str, str]]] = {}

    def assign(self, engine: str, module: str, qual: str, exc: str | None, skel: str, used: set[str]) -> str:
        k = (engine, module, qual, exc, skel)
        got = self.exact.get(k)
        if got is None:
            m = self.moved.get((engine, exc, skel))
            if m is not None and m not in used:
                got = m
        if got is None:
            best, score = None, FUZZY
            for cid, old in self.by_func.get((engine, module, qual, exc), []):
                if cid in used:
                    continue
                r = difflib.SequenceMatcher(None, skel, old, autojunk=False).ratio()
                if r >= score:
                    best, score = cid, r
            got = best
        if got is None:
            got = engine[:2] + "-" + hashlib.sha1(repr(k).encode(), usedforsecurity=False).hexdigest()[:10]
        self.exact.setdefault(k, got)
        self.moved[(engine, exc, skel)] = got
        lst = self.by_func.setdefault((engine, module, qual, exc), [])
        if (got, skel) not in lst:
            lst.append((got, skel))
        return got


def build(plan: list[tuple[str, str, str, str, list[tuple[str, bytes]]]], cache: Path | None, jobs: int) -> dict:
    """plan: (engine, version, source name, sha256, [(path, bytes)]) in version order -> the atlas document."""
    blobs: dict[str, bytes] = {}
    for *_, files in plan:
        for _, data in files:
            blobs.setdefault(hashlib.sha256(data).hexdigest(), data)
    print(f"atlas: {len(blobs)} distinct source files", file=sys.stderr, flush=True)
    mined = mine_all(blobs, cache, jobs)
    versions: dict[str, list[str]] = {}
    sources = []
    ids = Ids()
    entries: dict[str, dict] = {}
    modules: dict[str, int] = {}
    for engine, version, name, sha, files in plan:
        vlist = versions.setdefault(engine, [])
        vi = len(vlist)
        vlist.append(version)
        used: set[str] = set()
        count = 0
        for path, data in files:
            for kind, exc, level, tmpl, qual, line, rec in mined[hashlib.sha256(data).hexdigest()]:
                count += 1
                eid = ids.assign(engine, path, qual, exc, skeleton(tmpl), used)
                used.add(eid)
                e = entries.setdefault(
                    eid, {"engine": engine, "kind": kind, "exc": exc, "level": level, "variants": {}}
                )
                e.update(kind=kind, exc=exc, level=level, rec=rec)  # the latest version's reading
                mi = modules.setdefault(path, len(modules))
                vk = (tuple(tmpl), mi, qual)
                var = e["variants"].setdefault(vk, {"line": line, "mask": 0})
                if not var["mask"] >> vi & 1:
                    var["line"] = line
                var["mask"] |= 1 << vi
        sources.append(
            {
                "engine": engine,
                "version": version,
                "source": name,
                "sha256": sha,
                "files": len(files),
                "messages": count,
            }
        )
    mod_names = sorted(modules, key=modules.__getitem__)
    out_entries = []
    for eid in sorted(entries):
        e = entries[eid]
        variants = sorted(
            (
                [[p if p is not None else 0 for p in vk[0]], vk[1], vk[2], v["line"], v["mask"]]
                for vk, v in e["variants"].items()
            ),
            key=lambda x: (-x[4].bit_length(), x[1], x[3]),
        )
        out_entries.append([eid, e["engine"], e["kind"], e["exc"], e["level"], e["rec"], variants])
    return {
        "schema": SCHEMA,
        "extractor": extractor_hash(),
        "sources": sources,
        "versions": versions,
        "modules": mod_names,
        "entries": out_entries,
    }


def write(doc: dict, out: Path) -> None:
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9, filename="") as g:
        g.write(raw)
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, help="wheel and mining cache (outside the repository)")
    ap.add_argument("--sources", type=Path, help="a tree ENGINE/VERSION/<package files> instead of wheels")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--engine", action="append", choices=sorted(VERSIONS), help="only these engines")
    ap.add_argument("--no-download", action="store_true", help="use only wheels already in the cache")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    a = ap.parse_args(argv)
    plan = []
    if a.sources is not None:
        for edir in sorted(p for p in a.sources.iterdir() if p.is_dir()):
            engine = edir.name
            vdirs = sorted((p for p in edir.iterdir() if p.is_dir()), key=lambda p: _vkey(p.name))
            for vdir in vdirs:
                files = list(tree_sources(engine, vdir))
                digest = hashlib.sha256(b"".join(p.encode() + b"\0" + d for p, d in files)).hexdigest()
                plan.append((engine, vdir.name, f"{engine}/{vdir.name}", digest, files))
    else:
        if a.cache is None:
            ap.error("--cache or --sources is required")
        for engine in a.engine or sorted(VERSIONS):
            for version in VERSIONS[engine]:
                whl = fetch(engine, version, a.cache / "wheels", not a.no_download)
                plan.append((engine, version, whl.name, sha256_file(whl), list(wheel_sources(engine, whl))))
    doc = build(plan, a.cache, a.jobs)
    write(doc, a.out)
    n = sum(s["messages"] for s in doc["sources"])
    print(f"atlas: {len(doc['entries'])} entries from {n} message sites in {len(plan)} releases -> {a.out}")
    return 0


def _vkey(v: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[a-z]+", v))


if __name__ == "__main__":
    raise SystemExit(main())
