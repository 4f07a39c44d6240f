"""Batch triage on an archive generated here from our fixtures: many hosts, rotated and gzipped files, a tar.gz,
real .journal files (systemd-journal-remote, two units), a corrupt .gz, a binary file, an empty file and a log with
<script> in it. Expected counts come from `logdoctor.diagnose` on the same logs, not from constants."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from checks import read_pty  # noqa: E402
from journal_export import journal_remote, make_journal, read_export, write_export  # noqa: E402

import logdoctor  # noqa: E402
from logdoctor.triage import (  # noqa: E402
    apply_filters,
    run,
    views,  # noqa: E402
)

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"
EXPORT = FIX / "formats" / "export" / "sglang-tp2-graph-capture.export"
# a spread of causes and engines; seed-all-attempts holds three attempts and an Xid on one host
CASES = (
    "seed-all-attempts",
    "sglang-graph_capture_fault-unsafe-gdn-h100",
    "sglang-hardware_fault-xid94-serving",
    "vllm-healthy-llama8b",
    "sglang-healthy-llama8b-classic",
    "sglang-kv_cache_oom-llama70b-a100-classic",
    "sglang-kv_cache_oom-qwen3-32b-l40s-attempts",
    "sglang-port_in_use-http-attempts",
    "vllm-hardware_fault-attempts",
    "sglang-host_oom-tail",
    "sglang-healthy-after-port-retry",
    "vllm-healthy-after-kv-fix",
)
SCRIPT = "<script>document.body.setAttribute('data-pwned','1')</script>"


def _cases() -> list[str]:
    have = [c for c in CASES if (FIX / c / "journal.log").exists()]
    assert len(have) >= 8, "the fixture corpus changed: pick other cases"
    return have


def _attempts(source) -> int:
    """Attempts `diagnose` sees (text, or a ReadResult for journal export data)."""
    return len(logdoctor.diagnose(source).attempts)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    """Build the archive; return (root, expected) with expected attempt rows per input path/member."""
    root = tmp_path_factory.mktemp("fleet")
    expected: dict[tuple[str, str | None], int] = {}
    cases = _cases()
    for i, case in enumerate(cases):
        text = (FIX / case / "journal.log").read_text()
        host_dir = root / "hosts" / f"node-{i:02d}"
        host_dir.mkdir(parents=True)
        if i % 3 == 0:  # rotated: the current log plain, the rotated-out one (an earlier log) gzipped
            p = host_dir / "engine.log"
            p.write_text(text)
            expected[(str(p), None)] = _attempts(text)
            earlier = (FIX / cases[(i + 1) % len(cases)] / "journal.log").read_text()
            old = host_dir / "engine.log.1.gz"
            old.write_bytes(gzip.compress(earlier.encode()))
            expected[(str(old), None)] = _attempts(earlier)
        elif i % 3 == 1:
            p = host_dir / "engine.log.gz"
            p.write_bytes(gzip.compress(text.encode()))
            expected[(str(p), None)] = _attempts(text)
        else:
            p = host_dir / "engine.log"
            p.write_text(text)
            expected[(str(p), None)] = _attempts(text)
    # a tar.gz whose members are logs (one of them gzipped inside)
    tpath = root / "bundle.tar.gz"
    with tarfile.open(tpath, "w:gz") as tar:
        for j, case in enumerate(cases[:4]):
            data = (FIX / case / "journal.log").read_bytes()
            name = f"bugreport/{case}.log" + (".gz" if j == 1 else "")
            blob = gzip.compress(data) if j == 1 else data
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(blob), 1748000000
            tar.addfile(info, io.BytesIO(blob))
            expected[(str(tpath), name)] = _attempts(data.decode())
    # a log with <script> in the decisive error line
    bad_text = (FIX / "sglang-graph_capture_fault-unsafe-gdn-h100" / "journal.log").read_text()
    bad_text = bad_text.replace(
        "operation not permitted when stream is capturing", f"operation not permitted when stream is capturing {SCRIPT}"
    )
    sp = root / "hosts" / "script-host" / "engine.log"
    sp.parent.mkdir(parents=True)
    sp.write_text(bad_text)
    expected[(str(sp), None)] = _attempts(bad_text)
    # broken inputs
    (root / "junk").mkdir()
    good = gzip.compress((FIX / cases[0] / "journal.log").read_bytes())
    (root / "junk" / "truncated.log.gz").write_bytes(good[: len(good) // 2])
    # what decompressed is read, as explain reads it (one input policy: docs/reliability.md)
    expected[(str(root / "junk" / "truncated.log.gz"), None)] = _attempts(root / "junk" / "truncated.log.gz")
    rnd = random.Random(7)
    (root / "junk" / "core.bin").write_bytes(bytes(rnd.randrange(256) for _ in range(20000)) + b"\x00" * 64)
    (root / "junk" / "empty.log").write_bytes(b"")
    # real journal files: the engine unit plus an unrelated unit in the same journal
    jdir = None
    if journal_remote() is not None:
        entries = read_export(EXPORT.read_bytes())
        last = entries[-1]
        extra = []
        for k in range(3):
            extra.append(
                {
                    "__REALTIME_TIMESTAMP": str(int(last["__REALTIME_TIMESTAMP"]) + 1000 + k),
                    "_BOOT_ID": last["_BOOT_ID"].decode(),
                    "_HOSTNAME": "gpu-node-7",
                    "_TRANSPORT": "stdout",
                    "_SYSTEMD_UNIT": "sshd.service",
                    "SYSLOG_IDENTIFIER": "sshd",
                    "_PID": "999",
                    "PRIORITY": "6",
                    "MESSAGE": f"Accepted publickey for ops from 10.0.0.{k} port 22",
                }
            )
        jdir = root / "journal" / "gpu-node-7"
        make_journal(write_export(entries + extra), jdir / "system.journal")
        from logdoctor.input.read import read_bytes

        expected[(str(jdir), None)] = _attempts(read_bytes(EXPORT.read_bytes()))
    return root, expected, jdir


def _rows(df):
    return df[df["status"].isin(["diagnosed", "healthy"])]


def test_rows_per_input_match_diagnose(archive):
    root, expected, jdir = archive
    res = run([str(root)], jobs=2)
    df = res.frame
    got = _rows(df).groupby(["source", "member"], dropna=False).size()
    got = {(s, None if m is None or m != m else m): n for (s, m), n in got.items()}
    assert got == expected
    # the journal: split by unit, the sshd unit gives no attempt
    if jdir is not None:
        j = df[df["source"] == str(jdir)]
        assert set(j["unit"]) <= {"sglang-qwen.service", "sglang.service"} or j["unit"].str.contains("sglang").all()
    # every failed row has a cause, a rule or 'unknown', a signature and evidence
    f = df[df["outcome"] == "failed"]
    assert f["signature"].notna().all() and f["cause"].notna().all()
    assert (f["evidence"].notna() | (f["cause"] == "unknown")).all()
    # the last attempt of each plain log agrees with diagnose (the verdict explain gives)
    for src, member in expected:
        if member is None and src.endswith("engine.log"):
            d = logdoctor.diagnose(Path(src).read_text())
            last = df[df["source"] == src].sort_values("attempt").iloc[-1]
            assert (last["outcome"] == "failed") == d.failed
            if d.failed:
                assert last["cause"] == d.cause and last["rule"] == d.rule


def test_unreadable_inputs_listed_with_reasons(archive):
    root, expected, _ = archive
    df = run([str(root)], jobs=1).frame
    acct = {Path(i["source"]).name: i for i in df.attrs["inputs"]}
    assert acct["truncated.log.gz"]["status"] == "unreadable"
    assert "the gzip data is truncated" in acct["truncated.log.gz"]["reason"]
    assert acct["core.bin"]["status"] == "unreadable" and "binary data" in acct["core.bin"]["reason"]
    assert acct["empty.log"]["status"] == "empty"
    # each of them also has a row of its own, so csv/json/parquet list it
    for name in ("truncated.log.gz", "core.bin", "empty.log"):
        assert (df["source"].str.endswith(name)).any()


def test_cli_exit_2_json_and_formats(archive, tmp_path):
    root, expected, _ = archive
    exe = [sys.executable, "-m", "logdoctor", "triage", str(root), "--jobs", "2"]
    p = subprocess.run(exe + ["--format", "json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    assert "unreadable" in p.stderr and "Traceback" not in p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "logdoctor.triage/v1"
    assert len([a for a in doc["attempts"] if a["status"] in ("diagnosed", "healthy")]) == sum(expected.values())
    reasons = {Path(i["source"]).name: i["reason"] for i in doc["inputs"] if i["status"] == "unreadable"}
    assert set(reasons) == {"truncated.log.gz", "core.bin"}
    # table summary, csv, markdown, parquet
    t = subprocess.run(exe, capture_output=True, text=True, timeout=300)
    assert t.returncode == 2 and "top causes" in t.stdout and "suspect hosts" in t.stdout
    c = subprocess.run(exe + ["--format", "csv"], capture_output=True, text=True, timeout=300)
    csv = pd.read_csv(io.StringIO(c.stdout))
    assert len(csv) == len(doc["attempts"])
    m = subprocess.run(exe + ["--format", "markdown"], capture_output=True, text=True, timeout=300)
    assert "## Signatures" in m.stdout
    # log text is quoted as is (no HTML entities, issue 23), inside code spans, where a renderer shows it as text
    for line in m.stdout.splitlines():
        for hit in re.finditer(r"<script>", line):
            assert line[: hit.start()].count("`") % 2 == 1, line
    pytest.importorskip("pyarrow")
    out = tmp_path / "t.parquet"
    pq = subprocess.run(exe + ["--format", "parquet", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert pq.returncode == 2 and len(pd.read_parquet(out)) == len(doc["attempts"])
    # a clean subset reads fully: exit 0
    ok = subprocess.run(
        [sys.executable, "-m", "logdoctor", "triage", str(root / "hosts")], capture_output=True, text=True, timeout=300
    )
    assert ok.returncode == 0, ok.stderr
    # usage error: one line, exit 2
    u = subprocess.run(
        [sys.executable, "-m", "logdoctor", "triage", str(root), "--format", "html"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert u.returncode == 2 and "--out" in u.stderr and "Traceback" not in u.stderr


def test_host_suspects_hardware_evidence(archive):
    root, _, _ = archive
    df = run([str(root / "hosts")], jobs=2).frame
    sus = {s.host: s for s in views.host_suspects(df)}
    xid_hosts = set(df.loc[df["hardware_evidence"].fillna("").str.contains("Xid"), "host"])
    assert xid_hosts and xid_hosts <= set(sus)
    for h in xid_hosts:
        assert any("Xid" in e for e in sus[h].evidence)
    # a host with only healthy attempts is never a suspect
    healthy = set(df.groupby("host")["outcome"].agg(lambda s: (s != "failed").all()).loc[lambda s: s].index)
    assert not healthy & set(sus)


def test_host_suspect_from_configurations():
    """Failing under two configs, one of which comes up on another host → suspect; failing under one config that
    fails everywhere → not."""
    rows = []

    def row(host, cfg, outcome, cause=None):
        rows.append(
            {
                "host": host,
                "config_id": cfg,
                "outcome": outcome,
                "cause": cause,
                "status": "diagnosed" if outcome == "failed" else "healthy",
                "hardware_evidence": None,
                "evidence": None,
            }
        )

    row("bad-1", "A", "failed", "illegal_memory_access")
    row("bad-1", "B", "failed", "graph_capture_fault")
    row("good-2", "A", "ready")
    row("meh-3", "C", "failed", "kv_cache_oom")
    row("meh-3", "C", "failed", "kv_cache_oom")
    row("meh-4", "C", "failed", "kv_cache_oom")
    sus = {s.host: s for s in views.host_suspects(pd.DataFrame(rows))}
    assert set(sus) == {"bad-1"}
    assert "2 different configurations" in sus["bad-1"].reasons[0] and "good-2" in sus["bad-1"].reasons[0]


def test_filters_and_year(archive, tmp_path):
    root, _, _ = archive
    df = run([str(root / "hosts")], jobs=1, year=2024).frame
    a = _rows(df)
    short = a[a["year_source"] == "--year"]
    assert len(short) and (short["start_time"].dt.year == 2024).all()
    causes = a["cause"].dropna().unique()
    one = apply_filters(df, causes=[causes[0]])
    assert set(_rows(one)["cause"]) == {causes[0]}
    host = a["host"].dropna().iloc[0]
    assert set(_rows(apply_filters(df, hosts=[host]))["host"]) == {host}
    t = a["start_time"].dropna().sort_values()
    mid = t.iloc[len(t) // 2]
    assert (_rows(apply_filters(df, since=mid))["start_time"] >= mid).all()
    assert (_rows(apply_filters(df, until=mid))["start_time"] <= mid).all()
    # without --year the year comes from the file's mtime, and the frame says so
    p = tmp_path / "h" / "engine.log"
    p.parent.mkdir()
    p.write_text((FIX / "sglang-healthy-llama8b-classic" / "journal.log").read_text())
    os.utime(p, (1700000000, 1700000000))  # 2023-11-14
    r = _rows(run([str(p)], jobs=1).frame)
    if (r["year_source"] == "file metadata").any():
        assert (r["start_time"].dt.year <= 2023).all()


def test_jobs_1_equals_jobs_2(archive):
    root, _, _ = archive
    a = run([str(root)], jobs=1).frame
    b = run([str(root)], jobs=2).frame
    pd.testing.assert_frame_equal(a, b)


def test_dask_local_cluster_same_frame(archive):
    distributed = pytest.importorskip("distributed")
    root, _, _ = archive
    local = run([str(root)], jobs=1).frame
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    ) as cluster:
        assert len(cluster.workers) == 2
        pids = set()
        with distributed.Client(cluster) as client:
            pids = set(client.run(os.getpid).values())
        assert len(pids) == 2 and os.getpid() not in pids  # two real worker processes
        remote = logdoctor.triage([str(root)], scheduler=cluster.scheduler_address)
    pd.testing.assert_frame_equal(local, remote)


def test_every_fixture_agrees_with_diagnose():
    """Prefilter, segments and reduced parses change nothing: per fixture log, as many rows as `diagnose` sees
    attempts, and the row of the attempt the verdict is about (the most recent failed one, issue 10) has its verdict
    (failed, cause, phase, rule); every row has its attempt's outcome."""
    df = run([str(FIX)], jobs=2).frame
    n = 0
    for log in sorted(FIX.glob("*/journal.log")):
        d = logdoctor.diagnose(log)
        rows = df[df["source"] == str(log)].sort_values("attempt")
        assert len(rows) == len(d.attempts), log
        assert list(rows["outcome"]) == [a["outcome"] for a in d.attempts], log
        last = rows.iloc[d.attempt_index]
        assert (last["outcome"] == "failed") == d.failed, log
        assert last["phase"] == d.phase, log
        if d.failed:
            rule = last["rule"] if isinstance(last["rule"], str) else None  # pandas keeps a missing rule as NaN
            assert (last["cause"], rule) == (d.cause, d.rule), log
        n += 1
    assert n >= 200


def test_progress_bar_on_a_terminal_only(archive):
    root, _, _ = archive
    cmd = [sys.executable, "-m", "logdoctor", "triage", str(root / "hosts"), "--jobs", "1"]
    quiet = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0 and "files" not in quiet.stderr and "it/s" not in quiet.stderr
    import pty

    master, slave = pty.openpty()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=slave, timeout=300)
        os.close(slave)
        err = read_pty(master).decode(errors="replace")
    finally:
        os.close(master)
    assert p.returncode == 0
    assert "triage" in err and "files" in err and "B/s" in err  # files done, bytes, rate


def test_a_kernel_log_whose_xid_killed_the_engine_gets_a_row(tmp_path):
    """A dmesg/kernel-journal excerpt has no service line, but an Xid naming the engine's process is a failure that
    `diagnose` reports; triage gives it a row with its hardware evidence (it used to count such a file as empty),
    while a kernel log with nothing wrong in it stays empty."""
    bad = tmp_path / "node7-kernel.log"
    bad.write_text(
        "Nov 30 03:12:09 node7 kernel: NVRM: GPU at PCI:0000:b3:00: GPU-5f1e9a42-0c1d-4b8e-9e77-1a2b3c4d5e6f\n"
        "Nov 30 03:12:09 node7 kernel: NVRM: Xid (PCI:0000:b3:00): 79, pid=771204, name=python3, "
        "GPU has fallen off the bus.\n"
        "Nov 30 03:12:09 node7 kernel: NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.\n"
    )
    quiet = tmp_path / "node8-kernel.log"
    quiet.write_text(
        "Nov 30 03:12:09 node8 kernel: nvidia-nvswitch0: open (major=509)\n"
        "Nov 30 03:12:10 node8 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.86.15\n"
    )
    d = logdoctor.diagnose(bad)
    assert d.failed
    r = run([str(bad), str(quiet)], jobs=1)
    rows = r.frame[r.frame["source"] == str(bad)]
    assert len(rows) == 1
    row = rows.iloc[0]
    assert (row["outcome"], row["cause"], row["phase"]) == ("failed", d.cause, d.phase)
    assert row["host"] == "node7" and "fallen off the bus" in row["hardware_evidence"]
    status = {i["source"]: i["status"] for i in r.inputs}
    assert status == {str(bad): "diagnosed", str(quiet): "empty"}
