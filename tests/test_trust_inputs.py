"""Trust boundaries of the inputs (issue 18): one input policy for explain and triage, archives read member by
member within bounds, folder walks that do not block or wander, line endings, and terminal-safe names.

Every input is built here and run through the CLI as a subprocess, as a user runs it. The rows of the
"Trust boundaries: archives and input policy" table in docs/reliability.md are the ids in ROWS; a test checks that
the table lists exactly these rows.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import re
import struct
import subprocess
import sys
import tarfile
import threading
import time
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
SEED = (ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log").read_bytes()  # kv_cache_oom
LD = [sys.executable, "-m", "logdoctor"]
ENV = dict(os.environ, NO_COLOR="1", COLUMNS="200")  # wide: evidence lines shown whole, not cut to fit

# row id -> what the row promises (the doc's table lists the same ids)
ROWS = {
    "same-policy": "explain and triage give the same verdict on lying gzip trailers/headers, NUL bytes, zstd, CR-only",
    "run-cap": "once finished tasks reach the run's cap on decompressed bytes, the inputs not started are listed",
    "gzip-refused": "gzip that yields nothing gives explain's one line and the same words as triage's reason",
    "tar-member-errors": "a corrupt member is named archive:member and the members after it are still read",
    "plain-tar-not-gzip": "a plain .tar is never blamed as gzip",
    "tar-long-name": "a long-name header over the cap makes its member unreadable, bounded memory, the rest read",
    "tar-journal-sparse": "a sparse journal member is skipped, nothing written to the temp folder",
    "tar-rejected-member": "a binary compressed member is refused from its head and skipped by its raw bytes",
    "tar-special-members": "symlink, hard link, FIFO and device members are listed as skipped",
    "tar-many-members": "at most MAX_LISTED members that gave nothing are listed, the rest counted in one entry",
    "tar-nested": "a tar inside a tar (or inside a compressed member) is named a nested archive",
    "explain-tar": "explain on a tar archive says it is one and points to triage",
    "walk-fifo": "a FIFO in a folder is skipped without blocking",
    "walk-symlink-out": "a symlink out of the folder is not followed",
    "walk-not-logs": "YAML manifests and notes are skipped, never healthy",
    "explain-fifo-note": "explain on a silent FIFO or an open pipe says so on stderr after 5 s",
    "explain-growing-file": "a file still being written is read up to its size at open",
    "lone-cr": "a lone-CR log is diagnosed as failed; tqdm redraws still collapse",
    "terminal-names": "control characters in file names and log text are made visible, one line stays one line",
}


def _gz(
    body: bytes, *, flags: int = 0, crc: int | None = None, isize: int | None = None, hcrc: int | None = None
) -> bytes:
    """A gzip member built by hand: header (flags), raw deflate, trailer (CRC, ISIZE) — each may lie."""
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\x03"
    if hcrc is not None:
        head += struct.pack("<H", hcrc)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = co.compress(body) + co.flush()
    return (
        head
        + data
        + struct.pack(
            "<II",
            (zlib.crc32(body) if crc is None else crc) & 0xFFFFFFFF,
            (len(body) if isize is None else isize) & 0xFFFFFFFF,
        )
    )


def _nul_line(body: bytes, line: int, nul: bytes) -> bytes:
    lines = body.split(b"\n")
    lines[line - 1] += nul
    return b"\n".join(lines)


def _variants() -> dict[str, bytes]:
    out = {
        "crc.log.gz": _gz(SEED, crc=12345),
        "isize.log.gz": _gz(SEED, isize=7),
        "hcrc.log.gz": _gz(SEED, flags=2, hcrc=0xBEEF),
        "flags.log.gz": _gz(SEED, flags=0xE0),
        "junk-after.log.gz": _gz(SEED) + b"\x1f\x8bGARBAGE" * 100,
        "nul-one.log": _nul_line(SEED, 46, b"\0"),
        "nul-many.log": _nul_line(SEED, 46, b"\0" * 100_000),
        "lonecr.log": SEED.replace(b"\n", b"\r"),
        "utf16.log": SEED.decode().encode("utf-16"),
        "xz-in-gz.log.gz": gzip.compress(lzma.compress(SEED)),
    }
    try:
        import zstandard

        out["seed.log.zst"] = zstandard.ZstdCompressor().compress(SEED)
    except ImportError:
        pass
    return out


def _triage(*args, cwd, timeout=300) -> tuple[subprocess.CompletedProcess, dict]:
    p = subprocess.run(
        LD + ["triage", *map(str, args), "--format", "json", "--jobs", "1"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p, json.loads(p.stdout) if p.stdout.strip() else {}


def _explain(*args, cwd, timeout=120, stdin=None) -> subprocess.CompletedProcess:
    p = subprocess.run(
        LD + ["explain", "--no-history", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        input=stdin,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


def _inputs(doc: dict) -> dict:
    return {(i["source"], i["member"]): i for i in doc["inputs"]}


def _tar(path: Path, members: list[tuple[str, bytes]], fmt=tarfile.GNU_FORMAT, mode="w") -> Path:
    with tarfile.open(path, mode, format=fmt) as tar:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    return path


# --------------------------------------------------------------------------------------------- one input policy


def test_same_policy_on_both_paths(tmp_path):
    """Each damaged variant: explain repairs it (exit 1, kv_cache_oom) and triage gives the same verdict."""
    folder = tmp_path / "v"
    folder.mkdir()
    for name, data in _variants().items():
        (folder / name).write_bytes(data)
    p, doc = _triage("v", cwd=tmp_path)
    rows = {r["source"]: r for r in doc["attempts"]}
    for name in _variants():
        e = _explain(f"v/{name}", cwd=tmp_path)
        assert e.returncode == 1 and "kv_cache_oom" in e.stdout, (name, e.stdout, e.stderr)
        row = rows.get(f"v/{name}")
        assert row is not None and row["cause"] == "kv_cache_oom" and row["status"] == "diagnosed", (name, row)
    # the lying trailer is said, and the data kept
    e = _explain("v/crc.log.gz", cwd=tmp_path)
    assert (
        "the CRC in gzip member 1's trailer does not match its data; the 13215 decompressed bytes are kept" in e.stderr
    ), e.stderr
    assert p.returncode == 0, p.stderr


def test_refused_gzip_same_message_on_both_paths(tmp_path):
    """Gzip that yields nothing: explain's one line (exit 2) is triage's reason, word for word."""
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = co.compress(SEED) + co.flush()
    cases = {
        "method7.gz": (b"\x1f\x8b\x07\x00" + bytes(6) + body, "unknown gzip compression method 7"),
        "fextra.gz": (
            b"\x1f\x8b\x08\x04" + bytes(6) + b"\xff\xff" + b"x" * 100,
            "the gzip header ends inside its extra field",
        ),
        "fname.gz": (
            b"\x1f\x8b\x08\x08" + bytes(6) + b"name-without-end" * 10,
            "the gzip header ends inside its file name field",
        ),
        "magic.gz": (b"\x1f\x8b", "the gzip header is cut short"),
    }
    (tmp_path / "g").mkdir()
    for name, (data, _) in cases.items():
        (tmp_path / "g" / name).write_bytes(data)
    p, doc = _triage("g", cwd=tmp_path)
    got = _inputs(doc)
    for name, (_, why) in cases.items():
        line = f"nothing could be read: corrupt gzip data ({why})"
        e = _explain(f"g/{name}", cwd=tmp_path)
        assert e.returncode == 2 and e.stderr == f"logdoctor: g/{name}: {line}\n", e.stderr
        assert got[(f"g/{name}", None)]["reason"] == line, got[(f"g/{name}", None)]


def test_expansion_caps_per_input_and_per_run():
    """The shared decompression stops at the per-input cap and at the run's budget, and says which."""
    from logdoctor.input.sources import archive

    blob = gzip.compress(b"x" * (3 << 20))
    exp = archive.Expansion(blob, "gzip", cap=1 << 20)
    got = sum(len(c) for c in exp)
    assert got == 1 << 20 and "cap on decompressed size" in (exp.stopped or ""), exp.stopped
    budget = archive.Budget(2 << 20)
    sizes = []
    for _ in range(3):
        e = archive.Expansion(blob, "gzip", cap=10 << 20, budget=budget)
        sizes.append(sum(len(c) for c in e))
    assert sum(sizes) == 2 << 20 and sizes[2] == 0, sizes
    assert "the run's" in (e.stopped or ""), e.stopped


def test_run_cap_lists_inputs_not_started(tmp_path, monkeypatch):
    """Once finished tasks reach the run's cap on decompressed bytes, the inputs not started are listed, not read."""
    from logdoctor.core import limits
    from logdoctor.triage import runner
    from logdoctor.triage.inputs import expand

    for i in range(3):
        (tmp_path / f"{i}.log.gz").write_bytes(gzip.compress(SEED))
    monkeypatch.setattr(limits, "RUN_EXPANDED_CAP", len(SEED) + 1)
    specs, _ = expand([str(tmp_path)])
    results = runner.run_local(specs, 1, None)
    status = [r.inputs[0]["status"] for r in results]
    assert status == ["diagnosed", "diagnosed", "unreadable"], status
    assert results[2].inputs[0]["reason"] == "not read: the run reached its 12.9 KiB cap on decompressed bytes"


# ------------------------------------------------------------------------------------------------------ archives


def test_tar_member_errors(tmp_path):
    """The newcomer's incident: a 20-byte broken.log.gz no longer ends the archive; each error names its member."""
    members = [
        ("inc/node03/sglang.log", SEED),
        ("inc/node07/broken.log.gz", _gz(SEED)[:20]),
        ("inc/node07/vllm-llama.journal.txt", SEED.replace(b"h200-qwen-03", b"gpu-node-07")),
        ("inc/node09/core.bin", bytes(random_bytes(3000))),
    ]
    buf = io.BytesIO()
    _tar(tmp_path / "inc.tar", members)
    (tmp_path / "inc.tar.gz").write_bytes(gzip.compress((tmp_path / "inc.tar").read_bytes()))
    del buf
    for name in ("inc.tar.gz", "inc.tar"):
        p, doc = _triage(name, cwd=tmp_path)
        got = _inputs(doc)
        assert got[(name, "inc/node07/vllm-llama.journal.txt")]["status"] == "diagnosed", got
        assert got[(name, "inc/node03/sglang.log")]["status"] == "diagnosed"
        broken = got[(name, "inc/node07/broken.log.gz")]
        assert broken["status"] == "unreadable" and "gzip data is truncated" in broken["reason"], broken
        assert (name, None) not in got, got  # nothing blamed on the whole archive
        assert f"{name}:inc/node07/broken.log.gz: nothing could be read" in p.stderr, p.stderr
        assert p.returncode == 2


def random_bytes(n: int) -> bytes:
    import random

    rnd = random.Random(7)
    return bytes(rnd.randrange(256) for _ in range(n))


def test_plain_tar_not_gzip(tmp_path):
    _tar(tmp_path / "a.tar", [("x.log", SEED), ("y.bin", random_bytes(2000))])
    p, doc = _triage("a.tar", cwd=tmp_path)
    assert "gzip" not in p.stderr and "gzip" not in json.dumps(doc["inputs"]), p.stderr
    assert _inputs(doc)[("a.tar", "x.log")]["status"] == "diagnosed"


def _long_name_tar(path: Path, name_size: int) -> None:
    """F5's shape: a GNU long-name header of name_size bytes, then a real log member."""

    def hdr(name, size, typ):
        ti = tarfile.TarInfo(name)
        ti.size, ti.type = size, typ
        return ti.tobuf(format=tarfile.GNU_FORMAT)

    with gzip.open(path, "wb", compresslevel=1) as g:
        g.write(hdr("././@LongLink", name_size, tarfile.GNUTYPE_LONGNAME))
        g.write(b"a" * name_size + b"\0" * (-name_size % 512))
        ti = tarfile.TarInfo("x.log")
        ti.size = len(SEED)
        g.write(ti.tobuf(format=tarfile.GNU_FORMAT) + SEED + b"\0" * (-len(SEED) % 512))
        ti = tarfile.TarInfo("y.log")
        ti.size = len(SEED)
        g.write(ti.tobuf(format=tarfile.GNU_FORMAT) + SEED + b"\0" * (-len(SEED) % 512) + b"\0" * 1024)


def test_tar_long_name_header(tmp_path):
    _long_name_tar(tmp_path / "ln.tar.gz", 32 << 20)
    p, doc = _triage("ln.tar.gz", cwd=tmp_path)
    got = _inputs(doc)
    bad = got[("ln.tar.gz", "x.log")]
    assert bad["status"] == "unreadable" and bad["reason"] == "its long-name header is 33554432 bytes (limit 1 MiB)"
    assert got[("ln.tar.gz", "y.log")]["status"] == "diagnosed"
    assert len(p.stdout) < 20_000  # the name never reaches the report


def test_tar_journal_sparse(tmp_path):
    """F6: a sparse 5 GiB journal member of a 10 KB tar: skipped, the temp folder untouched."""
    jdir = tmp_path / "jsp"
    jdir.mkdir()
    with open(jdir / "big.journal", "wb") as fh:
        fh.write(b"LPKSHHRH")
        fh.truncate(5 << 30)
    r = subprocess.run(["tar", "cSf", str(tmp_path / "j.tar"), "-C", str(jdir), "big.journal"], capture_output=True)
    if r.returncode != 0:
        pytest.skip("GNU tar with -S is needed")
    (jdir / "big.journal").unlink()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], sum(f.stat().st_size for f in tmp.rglob("*") if f.is_file()))
            time.sleep(0.05)

    t = threading.Thread(target=watch)
    t.start()
    try:
        p = subprocess.run(
            LD + ["triage", "j.tar", "--format", "json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(ENV, TMPDIR=str(tmp)),
        )
    finally:
        done.set()
        t.join()
    doc = json.loads(p.stdout)
    entry = _inputs(doc)[("j.tar", "big.journal")]
    assert entry["status"] == "skipped" and "sparse" in entry["reason"], entry
    assert peak[0] < 1 << 20 and not list(tmp.iterdir()), peak


def test_tar_journal_member_cap(tmp_path, monkeypatch):
    """A journal-magic member larger than the cap is refused after the cap, and its temp folder is removed."""
    import tempfile

    from logdoctor.core import limits
    from logdoctor.triage import runner
    from logdoctor.triage.inputs import InputSpec

    monkeypatch.setattr(limits, "JOURNAL_MEMBER_CAP", 1 << 20)
    _tar(tmp_path / "j.tar", [("a.journal", b"LPKSHHRH" + b"\0" * (3 << 20))])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    r = runner.process_spec(InputSpec(str(tmp_path / "j.tar"), "file", 0))
    assert r.inputs[0]["status"] == "unreadable" and "journal file over the 1 MiB cap" in r.inputs[0]["reason"]
    assert not list((tmp_path / "t").iterdir())


def test_tar_rejected_member_skipped_raw(tmp_path):
    """F16: a 4 GiB xz zero member is refused from its head and skipped by its raw bytes; the log after it is read."""
    one = lzma.compress(b"\0" * (64 << 20), preset=1)
    _tar(tmp_path / "b.tar", [("core.xz", one * 64), ("seed.log", SEED)])
    t0 = time.monotonic()
    p, doc = _triage("b.tar", cwd=tmp_path)
    took = time.monotonic() - t0
    got = _inputs(doc)
    assert got[("b.tar", "core.xz")]["status"] == "unreadable"
    assert got[("b.tar", "core.xz")]["reason"].startswith("binary data (only NUL bytes")
    assert got[("b.tar", "seed.log")]["status"] == "diagnosed"
    assert took < 60, took  # decompressing 4 GiB to skip it took minutes


def test_tar_special_members(tmp_path):
    path = tmp_path / "s.tar"
    with tarfile.open(path, "w") as tar:
        for name, typ in (
            ("ln.log", tarfile.SYMTYPE),
            ("hard.log", tarfile.LNKTYPE),
            ("p.fifo", tarfile.FIFOTYPE),
            ("null", tarfile.CHRTYPE),
        ):
            ti = tarfile.TarInfo(name)
            ti.type, ti.linkname = typ, "/etc/passwd"
            tar.addfile(ti)
        ti = tarfile.TarInfo("seed.log")
        ti.size = len(SEED)
        tar.addfile(ti, io.BytesIO(SEED))
    p, doc = _triage("s.tar", cwd=tmp_path)
    got = _inputs(doc)
    for name, kind in (
        ("ln.log", "symlink"),
        ("hard.log", "hard link"),
        ("p.fifo", "FIFO"),
        ("null", "character device"),
    ):
        assert got[("s.tar", name)] == {**got[("s.tar", name)], "status": "skipped", "reason": f"a {kind}, not read"}
    assert got[("s.tar", "seed.log")]["status"] == "diagnosed"
    assert p.returncode == 0


def test_tar_many_members(tmp_path):
    from logdoctor.core import limits

    n = limits.MAX_LISTED + 300
    _tar(tmp_path / "m.tar", [(f"m/{i:05d}.log", b"hello %d\n" % i) for i in range(n)] + [("seed.log", SEED)])
    p, doc = _triage("m.tar", cwd=tmp_path, timeout=600)
    listed = [i for i in doc["inputs"] if i["status"] == "empty"]
    assert len(listed) == limits.MAX_LISTED + 1, len(listed)
    assert listed[-1]["member"] == "(300 more empty members)", listed[-1]
    assert _inputs(doc)[("m.tar", "seed.log")]["status"] == "diagnosed"


def test_tar_nested(tmp_path):
    inner = _tar(tmp_path / "inner.tar", [("x.log", SEED)]).read_bytes()
    _tar(
        tmp_path / "outer.tar",
        [("inner.tar.gz", gzip.compress(inner)), ("inner.tar", inner), ("seed.log.bz2", bz2.compress(SEED))],
    )
    p, doc = _triage("outer.tar", cwd=tmp_path)
    got = _inputs(doc)
    assert (
        got[("outer.tar", "inner.tar.gz")]["reason"]
        == "a nested archive (a tar inside gzip); extract it and triage the folder"
    )
    assert (
        got[("outer.tar", "inner.tar")]["reason"]
        == "a nested archive (a tar inside the tar); extract it and triage the folder"
    )
    assert got[("outer.tar", "seed.log.bz2")]["status"] == "diagnosed"


def test_explain_on_a_tar(tmp_path):
    (tmp_path / "x.tar.gz").write_bytes(gzip.compress(_tar(tmp_path / "x.tar", [("x.log", SEED)]).read_bytes()))
    for name, what in (("x.tar", "a tar archive"), ("x.tar.gz", "a gzip-compressed tar archive")):
        e = _explain(name, cwd=tmp_path)
        assert e.returncode == 2
        assert (
            e.stderr == f"logdoctor: {name}: {what}; explain reads one log — list it with tar tf, or read every"
            f" member with: logdoctor triage {name}\n"
        ), e.stderr


# -------------------------------------------------------------------------------------------------- folder walks


def test_walk_fifo_symlink_and_non_logs(tmp_path):
    d = tmp_path / "inc"
    (d / "node").mkdir(parents=True)
    (d / "node" / "sglang.log").write_bytes(SEED)
    os.mkfifo(d / "zz.fifo")
    secret = tmp_path / "secret.log"
    secret.write_text("SECRET-TOKEN-abc123\n" + SEED.decode())
    (d / "innocent.log").symlink_to(secret)
    (d / "again.log").symlink_to(d / "node" / "sglang.log")
    (d / "vllm-deployment.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nspec:\n  image: vllm/vllm\n")
    (d / "label.yaml").write_text("cause: kv_cache_oom\nengine: sglang\n")
    (d / "sglang-notes.txt").write_text(
        "Notes on sglang-qwen\nWe restarted sglang with --mem-fraction-static 0.9"
        " and it served fine.\nThe server is ready and healthy.\n"
    )
    p, doc = _triage("inc", cwd=tmp_path, timeout=60)
    got = _inputs(doc)
    assert got[("inc/zz.fifo", None)]["status"] == "skipped"
    assert got[("inc/zz.fifo", None)]["reason"] == "not a regular file (a FIFO)"
    assert got[("inc/innocent.log", None)]["reason"] == "a symlink out of the folder, not followed"
    assert got[("inc/again.log", None)]["reason"] == "a symlink to a file in the folder, read there"
    assert "SECRET-TOKEN" not in p.stdout
    assert got[("inc/vllm-deployment.yaml", None)]["reason"] == "not a log (a .yaml file)"
    assert got[("inc/label.yaml", None)]["status"] == "skipped"
    assert got[("inc/sglang-notes.txt", None)]["status"] == "skipped"
    assert got[("inc/sglang-notes.txt", None)]["reason"].startswith("not a log (no timestamped")
    healthy = [i for i in doc["inputs"] if i["status"] == "healthy"]
    assert not healthy, healthy
    assert got[("inc/node/sglang.log", None)]["status"] == "diagnosed"


# ---------------------------------------------------------------------------------------------- explain sources


def test_explain_fifo_note(tmp_path):
    os.mkfifo(tmp_path / "p.fifo")
    proc = subprocess.Popen(
        LD + ["explain", "--no-history", "p.fifo"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    time.sleep(7)
    with open(tmp_path / "p.fifo", "wb") as w:  # the writer arrives late: the note came, then the verdict
        w.write(SEED)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "kv_cache_oom" in out
    assert "p.fifo: nothing could be opened or read yet after 5 s; explain reads to the end of its input" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_explain_open_pipe_note(tmp_path):
    """`(cat log; sleep 60) | logdoctor explain`: the pipe stays open after the log; a note says why nothing happens."""
    proc = subprocess.Popen(
        LD + ["explain", "--no-history"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdin is not None
    proc.stdin.write(SEED)
    proc.stdin.flush()
    time.sleep(7)
    out, err = proc.communicate(timeout=60)  # closes stdin: the writer ends
    assert proc.returncode == 1 and b"kv_cache_oom" in out
    assert b"<stdin>: the input has not ended after 5 s" in err, err


def test_explain_growing_file(tmp_path):
    """A log appended to at ~40 MB/s while explain reads it: read up to its size at open, so explain ends."""
    path = tmp_path / "grow.log"
    filler = b"May 22 10:40:00 h200-qwen-03 python3[1]: [2026-05-22 10:40:00 TP0] Decode batch. #running-req: 1\n"
    path.write_bytes(SEED + filler * ((9 << 20) // len(filler)))
    stop = threading.Event()

    def writer() -> None:
        block = filler * ((1 << 20) // len(filler))
        with open(path, "ab") as fh:
            while not stop.is_set():
                fh.write(block)
                fh.flush()
                time.sleep(0.025)

    t = threading.Thread(target=writer)
    t.start()
    try:
        p = _explain("--stats", "grow.log", cwd=tmp_path, timeout=120)
    finally:
        stop.set()
        t.join()
    final = path.stat().st_size
    assert p.returncode in (0, 1), p.stderr
    read = int(re.search(r"lines: read (\d+)", p.stderr).group(1))
    # main chased the writer (40 MB/s, faster than a full parse) and never ended; now the read stops at the size
    # the file had at open, well short of what the writer had appended by the end
    assert read * len(filler) < 0.8 * final, (read * len(filler), final)


# -------------------------------------------------------------------------------------------------- line endings


def test_lone_cr_and_progress_bars(tmp_path):
    (tmp_path / "cr.log").write_bytes(SEED.replace(b"\n", b"\r"))
    e = _explain("--stats", "cr.log", cwd=tmp_path)
    assert e.returncode == 1 and "kv_cache_oom" in e.stdout, e.stdout
    assert "lines: read 89," in e.stderr, e.stderr
    # alternating LF / lone CR: every line kept
    lines = SEED.split(b"\n")
    mixed = b"".join(line + (b"\r" if i % 2 else b"\n") for i, line in enumerate(lines[:-1]))
    (tmp_path / "mixed.log").write_bytes(mixed)
    e = _explain("--stats", "mixed.log", cwd=tmp_path)
    assert e.returncode == 1 and "lines: read 89," in e.stderr, e.stderr
    # a real tqdm redraw inside a log line still collapses
    bar = (
        b"May 22 10:31:40 h200-qwen-03 python3[115949]: "
        + b"\r".join(
            b"Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:0%d<00:03]" % (25 * k, k, k)
            for k in range(5)
        )
        + b"\n"
    )
    (tmp_path / "bar.log").write_bytes(lines[0] + b"\n" + bar + b"\n".join(lines[1:]))
    e = _explain("--stats", "bar.log", cwd=tmp_path)
    assert e.returncode == 1 and "4 progress-bar frames collapsed" in e.stderr, e.stderr


# ------------------------------------------------------------------------------------------------------ terminals


def test_visible_unit():
    from logdoctor.render.visible import visible, visible_lines

    assert visible("a\x1b]0;T\x07b\x9b2J\u202ec\rd\ne\bf") == "a^[]0;T^Gb<U+009B>2J<U+202E>c^Md^Je^Hf"
    assert visible("tab\tstays, é and 日本 too") == "tab\tstays, é and 日本 too"
    assert visible_lines("\x1b[31mFAILED\x1b[0m x\u202ey\nnext") == "\x1b[31mFAILED\x1b[0m x<U+202E>y\nnext"


def test_terminal_names(tmp_path):
    d = tmp_path / "ansi"
    d.mkdir()
    evil = "x\n\x1b[31mFAKE all good\x1b[0m\rlog"
    (d / evil).write_bytes(random_bytes(3000))
    e = _explain(f"ansi/{evil}", cwd=tmp_path)
    assert e.returncode == 2 and len(e.stderr.splitlines()) == 1, e.stderr
    assert "\x1b" not in e.stderr and "^[[31mFAKE" in e.stderr, e.stderr
    p, _ = _triage("ansi", cwd=tmp_path)
    assert len(p.stderr.splitlines()) == 1 and "\x1b" not in p.stderr and "\r" not in p.stderr, p.stderr
    # log text: C1 CSI, bidi override and backspaces in an evidence line are shown as escapes
    lines = SEED.decode().split("\n")
    i = next(k for k, line in enumerate(lines) if "Not enough memory" in line)
    lines[i] = lines[i].replace("Not enough memory", "Not enough \u009b2J\u202eyromem\u202c memory\b\b")
    (tmp_path / "c1.log").write_text("\n".join(lines))
    e = _explain("-v", "c1.log", cwd=tmp_path)
    assert "\u009b" not in e.stdout and "\u202e" not in e.stdout and "\b" not in e.stdout
    assert "<U+009B>2J<U+202E>yromem" in e.stdout


# -------------------------------------------------------------------------------------------------- the doc table


def test_doc_rows_match():
    text = DOC.read_text()
    assert "### Trust boundaries: archives and input policy" in text
    section = text.split("### Trust boundaries: archives and input policy", 1)[1].split("\n## ", 1)[0]
    section = section.split("\nFuzzing of the new targets", 1)[0]  # the fuzz table below names targets, not rows
    doc_rows = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.M)
    assert doc_rows == list(ROWS), set(doc_rows) ^ set(ROWS)
