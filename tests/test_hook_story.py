"""The deploy-hook story end to end, as a deploy script runs it: real journal files (export → systemd-journal-remote),
`logdoctor explain/fix/history` as subprocesses, one history, two hosts; the seed story as the acceptance test; and
the OnFailure path (the template unit's ExecStart against a journal file, read back with systemd-python)."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hookstory import entries_from_short
from journal_export import journal_remote, make_journal

import logdoctor

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals"
UNIT = "sglang-qwen.service"
UNIT_FILE = ROOT / "tests" / "data" / "hook" / "sglang-qwen.service"
SCHEMA = json.loads((ROOT / "logdoctor" / "schemas" / "diagnosis.schema.json").read_text())
TEMPLATE = ROOT / "contrib" / "systemd" / "logdoctor-diagnose@.service"
FLAG_CHANGES = (
    "--disable-cuda-graph",
    "--cuda-graph-backend-decode",
    "--mem-fraction-static",
    "--cuda-graph-max-bs",
    "--max-running-requests",
    "--context-length",
    "--chunked-prefill-size",
)

needs_remote = pytest.mark.skipif(journal_remote() is None, reason="systemd-journal-remote is not installed")


def seed(name: str) -> str:
    return (SEED / name / "journal.log").read_text()


def attempt3_without_xid() -> str:
    """Attempt 3 as a log that alone does not point at the hardware: no kernel lines, and the rank's CUDA error is
    an illegal memory access, which on its own reads as a kernel bug (the planner would try another backend)."""
    lines = [l for l in seed("seed-attempt3-hardware").splitlines() if " kernel: " not in l]
    text = "\n".join(lines) + "\n"
    return text.replace("unspecified launch failure", "an illegal memory access was encountered").replace(
        "cudaErrorLaunchFailure", "cudaErrorIllegalAddress"
    )


def healthy_on_ct200() -> str:
    """The attempt-3 configuration (graphs off, mem 0.95) coming up on another host earlier that day."""
    head = []
    for l in seed("seed-attempt3-hardware").splitlines():
        head.append(l)
        if "TP1] Load weight begin" in l:
            break
    head = [l.replace("h200-qwen-03", "ct200").replace("May 22 10:33:", "May 22 09:14:") for l in head]
    p = "May 22 09:15:{s:02d} ct200 python3[52001]: [2026-05-22 09:15:{s:02d}{r}] "
    tail = []
    for s, rank, msg in (
        (
            5,
            " TP0",
            "Load weight end. elapsed=24.1 s, type=Qwen3NextForCausalLM, avail mem=60.1 GB, mem usage=77.8 GB.",
        ),
        (
            5,
            " TP1",
            "Load weight end. elapsed=24.1 s, type=Qwen3NextForCausalLM, avail mem=60.2 GB, mem usage=77.8 GB.",
        ),
        (9, " TP0", "Memory pool end. avail mem=8.9 GB"),
        (9, " TP1", "Memory pool end. avail mem=9.0 GB"),
        (12, "", "INFO:     Application startup complete."),
        (14, "", "The server is fired up and ready to roll!"),
    ):
        tail.append(p.format(s=s, r=rank) + msg)
    return "\n".join(head + tail) + "\n"


def cli(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", *map(str, args)], capture_output=True, text=True, cwd=ROOT, **kw
    )


def explain_json(*args):
    p = cli("explain", "--format", "json", *args)
    assert p.returncode in (0, 1, 3), p.stderr
    doc = json.loads(p.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)  # history included
    return p.returncode, doc


# ---------------------------------------------------------------------------------------------------------------


def test_seed_story_acceptance(history_db, tmp_path):
    """The three seed logs of one host, one after another, into one history."""
    verdicts = []
    for name in ("seed-attempt1-kv-oom", "seed-attempt2-capture-unsafe", "seed-attempt3-hardware"):
        verdicts.append(explain_json(str(SEED / name / "journal.log"))[1])
    assert [v["cause"] for v in verdicts] == ["kv_cache_oom", "graph_capture_fault", "hardware_fault"]
    third = verdicts[2]
    assert third["fixes"] == []
    assert not any(a.startswith(FLAG_CHANGES) for a in third["actions"])
    assert any("another host" in a for a in third["actions"])
    assert third["history"]["escalation"] == "history.same-host-regression"
    assert third["history"]["attempts_here"] == 2


def test_history_is_what_escalates_a_log_that_alone_reads_as_a_kernel_bug(history_db, tmp_path):
    a3 = tmp_path / "attempt3.log"
    a3.write_text(attempt3_without_xid())
    _, alone = explain_json(str(a3), "--no-history")
    assert alone["cause"] == "illegal_memory_access" and alone["fixes"]  # one log: try another backend
    for name in ("seed-attempt1-kv-oom", "seed-attempt2-capture-unsafe"):
        explain_json(str(SEED / name / "journal.log"))
    rc, doc = explain_json(str(a3))
    assert rc == 1
    assert doc["cause"] == "hardware_fault" and doc["rule"] == "history.same-host-regression"
    assert doc["fixes"] == []
    assert doc["alternatives"][0]["cause"] == "illegal_memory_access"
    assert "fails earlier, in weight_load" in doc["explanation"]


@needs_remote
def test_two_hosts_diagnose_history_fix(history_db, tmp_path):
    """A deploy loop on ct100 (the seed story's host, renamed) next to a healthy start on ct200, all read from real
    journal files; the scripts' commands: explain → fix → redeploy …, history at the end."""

    def journal(text: str, name: str, host: str) -> Path:
        return make_journal(entries_from_short(text, unit=UNIT, host=host), tmp_path / f"{name}.journal")

    a1 = journal(seed("seed-attempt1-kv-oom"), "ct100-a1", "ct100")
    a2 = journal(seed("seed-attempt2-capture-unsafe"), "ct100-a2", "ct100")
    a3 = journal(attempt3_without_xid(), "ct100-a3", "ct100")
    ok = journal(healthy_on_ct200(), "ct200", "ct200")

    # the earlier healthy deploy on ct200
    rc, doc = explain_json("--unit", "sglang-qwen", "--journal-file", ok)
    assert rc == 0 and doc["failed"] is False

    # attempt 1 on ct100: raise the static fraction; the next unit file says so
    rc, doc = explain_json("--unit", "sglang-qwen", "--journal-file", a1)
    assert (rc, doc["cause"], doc["fixes"][0]["to"]) == (1, "kv_cache_oom", 0.92)
    unit = tmp_path / "sglang-qwen.service"
    unit.write_bytes(UNIT_FILE.read_bytes())
    p = cli("fix", unit, "--log", a1, "--write", "--new-unit")
    assert p.returncode == 1 and (tmp_path / "sglang-qwen-mem092.service").exists(), p.stderr

    # attempt 2 (the operator went to 0.95): a capture-unsafe op; the fix turns decode graphs off
    rc, doc = explain_json("--unit", "sglang-qwen", "--journal-file", a2)
    assert doc["cause"] == "graph_capture_fault"
    assert not any(f["flag"].startswith("--mem-fraction-static") for f in doc["fixes"])
    p = cli("fix", tmp_path / "sglang-qwen-mem092.service", "--log", a2, "--write", "--new-unit")
    assert p.returncode == 1, p.stderr
    nograph = tmp_path / "sglang-qwen-mem092-nograph.service"
    assert "--cuda-graph-backend-decode disabled" in nograph.read_text()

    # attempt 3: fails earlier than before with the fix applied → the host; ct200 ran this config fine
    rc, doc = explain_json("--unit", "sglang-qwen", "--journal-file", a3)
    assert (rc, doc["cause"]) == (1, "hardware_fault")
    assert doc["fixes"] == [] and not any(a.startswith(FLAG_CHANGES) for a in doc["actions"])
    assert doc["history"]["healthy_elsewhere"][0]["host"] == "ct200"
    assert any("came up on ct200" in a for a in doc["actions"])
    text = " ".join(cli("explain", "--unit", "sglang-qwen", "--journal-file", a3).stdout.split())  # text is wrapped
    assert "history: sglang-qwen.service came up on ct200 with the same flags at 09:14" in text
    p = cli("fix", nograph, "--log", a3, "--write", "--new-unit")
    assert p.returncode == 2 and "hardware_fault" in p.stderr and len(p.stderr.strip().splitlines()) == 1

    # re-diagnosing adds nothing; the history lists both hosts
    explain_json("--unit", "sglang-qwen", "--journal-file", a3)
    rows = json.loads(cli("history", "--format", "json").stdout)["attempts"]
    assert [(r["host"], r["outcome"], r["cause"]) for r in rows] == [
        ("ct200", "ready", None),
        ("ct100", "failed", "kv_cache_oom"),
        ("ct100", "failed", "graph_capture_fault"),
        ("ct100", "failed", "hardware_fault"),
    ]
    assert rows[1]["fix"]["to"] == 0.92 and rows[2]["fix"]["lever"] == "graphs_off"
    only = json.loads(cli("history", "--host", "ct200", "--format", "json").stdout)["attempts"]
    assert len(only) == 1 and only[0]["config"]["graphs_off"] is True


def test_planner_skips_values_tried_on_this_host(tmp_path):
    """Attempt 1 again, after an attempt with 0.92 failed the same way on the same host: not 0.92 again."""
    db = tmp_path / "h.db"
    a1 = seed("seed-attempt1-kv-oom")
    tried = (
        a1.replace("'mem_fraction_static': 0.88", "'mem_fraction_static': 0.92")
        .replace("May 22 10:31:", "May 22 10:21:")
        .replace("mem_fraction_static=0.88", "mem_fraction_static=0.92")
    )
    first = logdoctor.diagnose(tried, history=db)
    assert first.cause == "kv_cache_oom"
    d = logdoctor.diagnose(a1, history=db)
    assert d.cause == "kv_cache_oom"
    mem = [f for f in d.fixes if f.lever == "mem_fraction"]
    assert mem and mem[0].to not in (0.88, 0.92)
    assert logdoctor.diagnose(a1).fixes[0].to == 0.92  # without the history: the usual first step


@needs_remote
def test_onfailure_template_writes_the_verdict_back(tmp_path, history_db):
    """Run the template unit's ExecStart (instance = the failed unit) against a journal file; with no journald it
    emits the entry in export format; systemd-journal-remote appends it to the journal and systemd-python reads
    the LOGDOCTOR_* fields back, right under the failure."""
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    cp.read(TEMPLATE)
    exec_start = cp["Service"]["ExecStart"]
    argv = shlex.split(exec_start.replace("%i", UNIT))
    assert Path(argv[0]).name == "logdoctor" and argv[1:] == ["notify", UNIT]
    journal = make_journal(
        entries_from_short(seed("seed-attempt1-kv-oom"), unit=UNIT, host="ct100"), tmp_path / "system.journal"
    )
    out = tmp_path / "verdict.export"
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", *argv[1:], "--journal-file", str(journal), "--export", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    # journal-remote appends to an existing file: the verdict lands in the same journal, after the failure
    r = subprocess.run([journal_remote(), "-o", str(journal), str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and re.search(r"writing 1 entries", r.stderr), r.stderr
    from systemd import journal as sdj

    reader = sdj.Reader(files=[str(journal)])
    reader.add_match(LOGDOCTOR_CAUSE="kv_cache_oom")
    [e] = list(reader)
    assert e["LOGDOCTOR_UNIT"] == UNIT and e["LOGDOCTOR_PHASE"] == "memory_pool"
    assert float(e["LOGDOCTOR_CONFIDENCE"]) >= 0.8
    assert e["LOGDOCTOR_FIX"] == "--mem-fraction-static 0.88 → 0.92"
    assert e["MESSAGE"].startswith(f"logdoctor: {UNIT} failed during memory_pool: kv_cache_oom")
    # `journalctl -u UNIT` shows it as the last line, right under systemd's failure lines
    jc = subprocess.run(
        ["journalctl", "--file", str(journal), "-u", UNIT, "-o", "cat", "--no-pager"], capture_output=True, text=True
    )
    if jc.returncode == 0:
        last = jc.stdout.strip().splitlines()
        assert last[-1].startswith("logdoctor: ") and "Failed with result" in "\n".join(last[-4:])
    # and a second run over the journal that now holds the verdict ignores its own entry
    p2 = subprocess.run(
        [sys.executable, "-m", "logdoctor", *argv[1:], "--journal-file", str(journal), "--export", "-"],
        capture_output=True,
        cwd=ROOT,
    )
    assert b"LOGDOCTOR_CAUSE=kv_cache_oom" in p2.stdout
