"""Explain and triage are one pipeline (issue 20 part 4): on every attempt of every fixture, and of an archive built
here, triage's row says what explain says: the attempt's outcome (explain's `attempts[].outcome`), and for the attempt
the verdict is about its failed/cause/phase/rule. Known disagreements that live in files under refactor are
`xfail(strict=True)` with their reason, so each one fails loudly the day it is fixed (then drop the mark). The four
the issue listed (stopped/ready, app-class Xid, NUL bytes, zstd) and the history's outcome are all fixed now."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

import logdoctor  # noqa: E402
from logdoctor.triage import run, views  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"
NOT_LOGS = {"label.yaml", "versions.txt", "results.json", "README.md", ".gitattributes"}
HEALTHY = FIX / "sglang-healthy-llama8b-classic" / "journal.log"
FAILED = FIX / "sglang-kv_cache_oom-llama70b-a100-classic" / "journal.log"
# multi-attempt folders (a restart loop, a failure then a fix, an Xid on one host), a healthy one, an app-class Xid
ARCHIVE_CASES = (
    "seed-all-attempts",
    "sglang-port_in_use-http-attempts",
    "vllm-hardware_fault-attempts",
    "sglang-healthy-after-port-retry",
    "vllm-illegal_memory_access-serving-xid13",
)


def _cli(*args: str, ok=(0, 1, 3)) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode in ok, (args, p.returncode, p.stderr[-2000:])
    return p


def _explain_json(path: Path) -> dict:
    return json.loads(_cli("explain", "--format", "json", "--no-history", str(path)).stdout)


def _triage_json(path: Path) -> list[dict]:
    return json.loads(_cli("triage", "--format", "json", "--jobs", "1", str(path), ok=(0, 2)).stdout)["attempts"]


def _stopped_after_ready(tmp_path: Path) -> Path:
    """A healthy service that the operator then stopped (systemd's own stop lines appended)."""
    unit = "sglang-llama.service - SGLang Llama-3.1-8B-Instruct"
    stop = (
        f"May 15 01:56:10 h100-inf-21 systemd[1]: Stopping {unit}...\n"
        "May 15 01:56:12 h100-inf-21 systemd[1]: sglang-llama.service: Deactivated successfully.\n"
        f"May 15 01:56:12 h100-inf-21 systemd[1]: Stopped {unit}.\n"
    )
    p = tmp_path / "stopped.log"
    p.write_text(HEALTHY.read_text() + stop)
    return p


def _disagreements(d: dict, rows: list[dict]) -> list[str]:
    """Where triage's rows (attempt order) differ from explain's JSON for one log; [] when they are one."""
    rows = sorted(rows, key=lambda r: r["attempt"] or 0)
    out = []
    if len(rows) != len(d["attempts"]):
        return [f"{len(rows)} rows, {len(d['attempts'])} attempts"]
    for i, (r, a) in enumerate(zip(rows, d["attempts"], strict=True)):
        if r["outcome"] != a["outcome"]:
            out.append(f"attempt {i + 1}: outcome {r['outcome']} in triage, {a['outcome']} in explain")
    vi = d["attempt_index"] if d.get("attempt_index") is not None else len(rows) - 1
    r = rows[vi]
    want = ("failed" if d["failed"] else r["outcome"], d["cause"] if d["failed"] else None, d["phase"])
    got = (r["outcome"], r["cause"], r["phase"])
    if got != want:
        out.append(f"verdict attempt {vi + 1}: triage {got}, explain {want}")
    return out


# ---- the whole fixture corpus, every attempt (in-process: the same functions the two commands call) ----


@pytest.mark.slow
def test_every_attempt_of_every_fixture_agrees():
    """Every log under fixtures/journals (formats/ too): one row per attempt explain sees, the same outcome on every
    attempt, the verdict's cause/phase/rule on the attempt it is about, and each earlier failed attempt's cause and
    phase as explain's `attempts[]` list them. A host is flagged for hardware only when explain says so too."""
    df = run([str(FIX)], jobs=2).frame
    # a fixture folder also holds the scripts that built it (formats/export/build_exports.py): not logs, and triage
    # says so (skipped) while explain, given one by name, reads it as text
    logs = sorted(p for p in FIX.rglob("*") if p.is_file() and p.name not in NOT_LOGS and p.suffix != ".py")
    problems, n = [], 0
    for log in logs:
        d = logdoctor.diagnose(log)
        rows = df[df["source"] == str(log)].sort_values("attempt")
        rows = rows[rows["attempt"].notna()]
        if len(rows) != len(d.attempts):
            problems.append(f"{log}: {len(rows)} rows, {len(d.attempts)} attempts")
            continue
        for i, (outcome, a) in enumerate(zip(rows["outcome"], d.attempts, strict=True)):
            if outcome != a["outcome"]:
                problems.append(f"{log}: attempt {i + 1} outcome {outcome} / {a['outcome']}")
        vi = d.attempt_index
        v = rows.iloc[vi]
        rule = v["rule"] if isinstance(v["rule"], str) else None  # pandas keeps a missing rule as NaN
        got = (v["outcome"] == "failed", v["phase"], v["cause"] if d.failed else None, rule if d.failed else None)
        want = (d.failed, d.phase, d.cause if d.failed else None, d.rule if d.failed else None)
        if got != want:
            problems.append(f"{log}: verdict attempt {vi + 1} {got} / {want}")
        for i, a in enumerate(d.attempts):
            if i != vi and a["outcome"] == "failed":
                r = rows.iloc[i]
                if (r["cause"], r["phase"]) != (a["cause"], a["phase"]):
                    problems.append(f"{log}: attempt {i + 1} {(r['cause'], r['phase'])} / {(a['cause'], a['phase'])}")
        flagged = any("hardware evidence" in x for s in views.host_suspects(rows) for x in s.reasons)
        says_hw = any(a["cause"] == "hardware_fault" for a in d.attempts) or any(
            "hardware-class Xid" in w or "fell off the bus" in w for w in d.notes
        )
        if flagged and not says_hw:
            problems.append(f"{log}: triage flags its host for hardware, explain does not")
        n += 1
    assert n >= 250
    assert not problems, "\n".join(problems)


# ---- an archive built here, through the two commands as users run them ----


@pytest.mark.slow
def test_a_generated_archive_agrees_with_explain_member_by_member(tmp_path):
    """A tar.gz of fixture folders plus a stopped service: `triage --format json` per member equals
    `explain --format json` on the same file."""
    members = {f"{c}/journal.log": FIX / c / "journal.log" for c in ARCHIVE_CASES}
    members["ops/stopped.log"] = _stopped_after_ready(tmp_path)
    tgz = tmp_path / "incident.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        for name, src in members.items():
            data = src.read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    rows = _triage_json(tgz)
    assert {r["member"] for r in rows} == set(members)
    problems = []
    for name, src in members.items():
        problems += [
            f"{name}: {p}" for p in _disagreements(_explain_json(src), [r for r in rows if r["member"] == name])
        ]
    assert not problems, "\n".join(problems)


# ---- the disagreements issue 20 lists, one test each ----


def test_a_ready_service_then_stopped_is_stopped_in_both(tmp_path):
    """Triage read `ready` here while explain's JSON said `stopped`: both now read attempts.outcome."""
    log = _stopped_after_ready(tmp_path)
    d = logdoctor.diagnose(log)
    assert [a["outcome"] for a in d.attempts] == ["stopped"]
    df = run([str(log)], jobs=1).frame
    assert list(df["outcome"]) == ["stopped"] and list(df["phase"]) == [d.phase] == ["serving"]


def test_a_stopped_service_still_counts_as_came_up_for_host_suspects(tmp_path):
    """A config that served on host B, then was stopped, still clears the config and points at host A."""
    stopped = _stopped_after_ready(tmp_path).read_text().replace("h100-inf-21", "h100-inf-99")
    (tmp_path / "b.log").write_text(stopped)
    df = run([str(tmp_path / "b.log")], jobs=1).frame
    row = df.iloc[0].to_dict()
    fails = []
    for i, cfg in enumerate(("cfg-a", "cfg-b")):
        fails.append(
            {
                **row,
                "host": "h100-inf-01",
                "outcome": "failed",
                "phase": "memory_pool",
                "config_id": cfg,
                "attempt": i + 1,
                "cause": "kv_cache_oom",
            }
        )
    frame = pd.concat([df.assign(config_id="cfg-a"), pd.DataFrame(fails)], ignore_index=True)
    suspects = {s.host: s for s in views.host_suspects(frame)}
    assert any("came up on other hosts (h100-inf-99)" in r for r in suspects["h100-inf-01"].reasons)
    assert "h100-inf-99" not in suspects or not suspects["h100-inf-99"].reasons


def test_an_app_class_xid_flags_no_host_where_explain_blames_the_engine():
    """Xid 13 (an application-class Xid, the catalogue's class) with an illegal memory access: explain says
    illegal_memory_access, and triage lists no hardware evidence against the host."""
    log = FIX / "vllm-illegal_memory_access-serving-xid13" / "journal.log"
    d = logdoctor.diagnose(log)
    assert d.cause == "illegal_memory_access"
    df = run([str(log)], jobs=1).frame
    assert list(df["cause"]) == ["illegal_memory_access"]
    assert df["hardware_evidence"].isna().all()
    assert not [s for s in views.host_suspects(df) if s.reasons]


@pytest.mark.slow
def test_nul_bytes_read_alike(tmp_path):
    lines = FAILED.read_bytes().split(b"\n")
    lines[5] = lines[5][:20] + b"\x00\x00" + lines[5][20:]
    log = tmp_path / "nul.log"
    log.write_bytes(b"\n".join(lines))
    assert _disagreements(_explain_json(log), _triage_json(log)) == []


def test_zstd_reads_alike(tmp_path):
    zstd = pytest.importorskip("zstandard")
    log = tmp_path / "journal.log.zst"
    log.write_bytes(zstd.ZstdCompressor().compress(FAILED.read_bytes()))
    assert _disagreements(_explain_json(log), _triage_json(log)) == []


@pytest.mark.slow
def test_the_history_records_the_outcome_explain_reports(tmp_path):
    log = _stopped_after_ready(tmp_path)
    db = tmp_path / "h.db"
    d = json.loads(_cli("explain", "--format", "json", "--history", str(db), str(log)).stdout)
    hist = json.loads(_cli("history", "--history", str(db), "--format", "json", ok=(0,)).stdout)["attempts"]
    assert [h["outcome"] for h in hist] == [a["outcome"] for a in d["attempts"]] == ["stopped"]
