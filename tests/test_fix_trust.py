"""`logdoctor fix` at its trust boundaries (issue 18, issue 22 part 5): values that reach a command line, unit-file
shapes systemd accepts, UNIT_FILE that is no file, and the drop-in deploy loop. Every case runs the CLI."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals"
UNIT = ROOT / "tests" / "data" / "hook" / "sglang-qwen.service"
KV_LOG = SEED / "seed-attempt1-kv-oom" / "journal.log"  # --mem-fraction-static 0.88 -> 0.92 (specific)
CAPTURE_LOG = SEED / "seed-attempt2-capture-unsafe" / "journal.log"  # add --cuda-graph-backend-decode disabled
INFERRED_LOG = SEED / "sglang-graph_capture_fault-pool-then-capture" / "journal.log"  # a rule of tier inferred
QUANT_LOG = SEED / "vllm-config_invalid-quantization-mismatch" / "journal.log"


def fix(*args, env=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", "fix", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )


def one_line(p) -> str:
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


def unit_in(tmp_path: Path, name="sglang-qwen.service", text: str | None = None) -> Path:
    u = tmp_path / name
    if text is None:
        u.write_bytes(UNIT.read_bytes())
    else:
        u.write_text(text)
    return u


# ---------------------------------------------------------------------------------------------------------------
# values (F1): both routes refused before anything is written


BAD_RULE = """id: sglang.kv-pool.not-enough-memory
cause: kv_cache_oom
title: the KV pool did not fit in the static memory budget left after the weights
engines: [any]
tier: specific
confidence: 0.93
match: {error: 'Not enough memory\\. Please try to increase --mem-fraction-static'}
explain: the pool did not fit
fixes:
  - {lever: mem_fraction, op: set, value: "VALUE", why: "x"}
"""


@pytest.mark.parametrize(
    "value",
    ["0.92 --trust-remote-code --model-path /tmp/evil-model", "0.01; rm -rf /", "-0.5", "1e3", "0.92\\n--host 0.0.0.0"],
)
def test_a_rule_value_that_is_not_one_number_is_refused(tmp_path, value):
    rules = tmp_path / "rules" / "kv_cache_oom"
    rules.mkdir(parents=True)
    (rules / "a.yaml").write_text(BAD_RULE.replace("VALUE", value))
    env = dict(os.environ, LOGDOCTOR_RULES_PATH=str(tmp_path / "rules"))
    u = unit_in(tmp_path)
    for mode in (["--write"], ["--write", "--new-unit"], []):
        p = fix(u, "--log", KV_LOG, "--no-history", *mode, env=env)
        assert p.returncode == 2, p.stdout + p.stderr
        assert "rule sglang.kv-pool.not-enough-memory" in one_line(p) and "mem_fraction refused" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["rules", "sglang-qwen.service"]  # nothing written


def test_a_value_captured_from_the_log_that_is_a_flag_is_refused(tmp_path):
    log = tmp_path / "qm.log"
    text = QUANT_LOG.read_text()
    import re

    hostile, n = re.subn(r"model config \(([a-z0-9_-]*)\)", "model config (--trust-remote-code)", text)
    assert n >= 1
    log.write_text(hostile)
    unit = unit_in(
        tmp_path,
        "vllm.service",
        "[Unit]\nDescription=vllm\n[Service]\nExecStart=/usr/bin/vllm serve /models/x --quantization awq --port 8000\n",
    )
    p = fix(unit, "--log", log, "--no-history", "--write")
    assert p.returncode == 2
    msg = one_line(p)
    assert "rule vllm." in msg and "from the log (line " in msg and "'--trust-remote-code'" in msg
    assert not (tmp_path / "vllm.service.d").exists()
    # the same log with the checkpoint's real method: applied
    p = fix(unit, "--log", QUANT_LOG, "--no-history", "--out", "-", "--min-confidence", "0")
    assert p.returncode == 1 and "--quantization awq" not in p.stdout and "--quantization " in p.stdout, p.stderr


@pytest.mark.parametrize("rank", ["1000000000000000000000", "0"])
def test_a_computed_or_captured_number_out_of_the_levers_range_is_refused(tmp_path, rank):
    """A value the log states (a LoRA rank) goes through the lever's range, not just its type: a 22-digit rank or a
    zero never reaches the unit file."""
    log = tmp_path / "lora.log"
    log.write_text(
        "(APIServer pid=1) INFO 10-18 09:00:03 [utils.py:233] non-default args: {'model': 'm', 'enable_lora': True}\n"
        f"(APIServer pid=1) ValueError: Call to add_lora method failed: LoRA rank {rank} is greater than "
        "max_lora_rank 16.\n"
    )
    unit = unit_in(tmp_path, "vllm.service", "[Service]\nExecStart=/usr/bin/vllm serve m --enable-lora --port 8000\n")
    p = fix(unit, "--log", log, "--no-history", "--write")
    assert p.returncode == 2
    assert "fix value" in one_line(p) and "refused: expected an integer in [1, 1024]" in one_line(p)
    assert not (tmp_path / "vllm.service.d").exists()


# ---------------------------------------------------------------------------------------------------------------
# unit-file shapes (F17, F18, F22)


SG = "/usr/bin/python3 -m sglang.launch_server --model-path /m --tp-size 2"


def test_bash_c_script_is_edited_inside_the_quotes(tmp_path):
    u = unit_in(
        tmp_path,
        text="[Service]\nExecStart=/bin/bash -c 'source /opt/venv/bin/activate && exec "
        f"{SG} --mem-fraction-static 0.88 --port 30000'\n",
    )
    p = fix(u, "--log", KV_LOG, "--no-history", "--out", "-", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert f"exec {SG} --mem-fraction-static 0.92 --port 30000'\n" in p.stdout
    u.write_text(f'[Service]\nExecStart=/bin/sh -c "exec {SG} --port 30000 2>&1; echo done"\n')
    p = fix(u, "--log", CAPTURE_LOG, "--no-history", "--out", "-", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert f'-c "exec {SG} --port 30000 2>&1 --cuda-graph-backend-decode disabled; echo done"' in p.stdout
    u.write_text(f"[Service]\nExecStart=/usr/bin/env A=1 bash -lc 'exec {SG} --mem-fraction-static 0.88' extra\n")
    p = fix(u, "--log", KV_LOG, "--no-history", "--out", "-", "--new-unit")
    assert p.returncode == 1 and f"-lc 'exec {SG} --mem-fraction-static 0.92' extra\n" in p.stdout, p.stderr
    u.write_text(f"[Service]\nExecStart=/bin/bash -c 'exec {SG} --mem-fraction-static 0.88 \\'x\\''\n")
    p = fix(u, "--log", KV_LOG, "--no-history", "--new-unit")
    assert p.returncode == 2 and "edit it by hand" in one_line(p)


def test_a_cleared_execstart_edits_the_command_systemd_runs(tmp_path):
    u = unit_in(
        tmp_path,
        text=f"[Service]\nExecStart={SG} --mem-fraction-static 0.7\nExecStart=\n"
        "ExecStart=/opt/wrapper.sh --mem-fraction-static 0.88\n",
    )
    p = fix(u, "--log", KV_LOG, "--no-history", "--out", "-", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert f"ExecStart={SG} --mem-fraction-static 0.7\n" in p.stdout
    assert "ExecStart=/opt/wrapper.sh --mem-fraction-static 0.92\n" in p.stdout


def test_oneshot_edits_the_command_the_log_shows_or_refuses(tmp_path):
    text = (
        f"[Service]\nType=oneshot\nExecStart={SG} --mem-fraction-static 0.88\n"
        f"ExecStart={SG} --mem-fraction-static 0.70\n"
    )
    u = unit_in(tmp_path, text=text)
    p = fix(u, "--log", KV_LOG, "--no-history", "--out", "-", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert "--mem-fraction-static 0.92\n" in p.stdout and "--mem-fraction-static 0.70\n" in p.stdout
    u.write_text(text.replace("0.70", "0.88"))  # both show the log's value: which one ran is unknowable
    p = fix(u, "--log", KV_LOG, "--no-history", "--new-unit")
    assert p.returncode == 2 and "ambiguous" in one_line(p)


def test_crlf_unit_files_are_accepted_and_stay_crlf(tmp_path):
    u = tmp_path / "crlf.service"
    u.write_bytes(UNIT.read_bytes().replace(b"\n", b"\r\n"))
    p = fix(u, "--log", KV_LOG, "--no-history", "--write", "--new-unit")
    assert p.returncode == 1, p.stderr
    new = (tmp_path / "crlf-mem092.service").read_bytes()
    assert new.count(b"\n") == new.count(b"\r\n") and b"--mem-fraction-static 0.92 \\\r\n" in new
    p = fix(u, "--log", KV_LOG, "--no-history", "--write")
    assert (
        p.returncode == 1
        and "--mem-fraction-static 0.92" in (tmp_path / "crlf.service.d" / "50-logdoctor.conf").read_text()
    )


def test_never_writes_over_unit_file_itself(tmp_path):
    u = unit_in(tmp_path, "qwen-mem092.service")
    before = u.read_bytes()
    p = fix(u, "--log", KV_LOG, "--no-history", "--write", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert u.read_bytes() == before and "--mem-fraction-static 0.92" in (tmp_path / "qwen-mem092-2.service").read_text()


def test_twenty_thousand_execstart_lines_are_fast(tmp_path):
    body = "".join(f"ExecStart=/bin/true {i}\n" for i in range(20000))
    u = unit_in(
        tmp_path,
        text=f"[Unit]\nDescription=x\n[Service]\nType=oneshot\n{body}ExecStart={SG} --mem-fraction-static 0.88\n",
    )
    t = time.monotonic()
    p = fix(u, "--log", KV_LOG, "--no-history", "--out", tmp_path / "out.service", "--new-unit")
    assert p.returncode == 1, p.stderr
    assert time.monotonic() - t < 15  # was 92 s (a section rescan per ExecStart=)
    assert (tmp_path / "out.service").read_text().endswith("--mem-fraction-static 0.92\n")


@pytest.mark.parametrize("kind", ["fifo", "zero", "chr", "dir", "big"])
def test_unit_file_that_is_no_file_is_refused_at_once(tmp_path, kind):
    target = tmp_path / "u.service"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "zero":
        target = Path("/dev/zero")
    elif kind == "chr":
        if os.geteuid() != 0:
            pytest.skip("mknod needs root")
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # a private /dev/zero
    elif kind == "dir":
        target.mkdir()
    else:
        target.write_text("[Service]\nExecStart=" + SG + " " + "x" * (5 << 20) + "\n")
    t = time.monotonic()
    p = fix(target, "--log", KV_LOG, "--no-history", timeout=60)
    assert p.returncode == 2 and time.monotonic() - t < 30
    msg = one_line(p)
    assert ("larger than" in msg) if kind == "big" else ("not a unit file" in msg or "is a directory" in msg)


# ---------------------------------------------------------------------------------------------------------------
# the drop-in loop (issue 22 part 5)


def test_drop_in_rounds_keep_the_unit_and_update_one_file(tmp_path):
    u = unit_in(tmp_path)
    before = u.read_bytes()
    p = fix(u, "--log", KV_LOG, "--no-history", "--write")
    assert p.returncode == 1, p.stderr
    dropin = tmp_path / "sglang-qwen.service.d" / "50-logdoctor.conf"
    assert p.stdout.startswith(f"wrote {dropin}: --mem-fraction-static 0.92")
    assert u.read_bytes() == before and stat.S_IMODE(dropin.stat().st_mode) == 0o644
    text = dropin.read_text()
    assert "[Service]\nExecStart=\nExecStart=/opt/sglang/bin/python3 -m sglang.launch_server \\\n" in text
    assert "--mem-fraction-static 0.92 \\\n" in text and "0.88" not in text
    # the diff (default) previews round 2 against the drop-in: only the command's last line and the header move
    p = fix(u, "--log", CAPTURE_LOG, "--no-history")
    assert p.returncode == 1 and p.stdout.startswith("--- a/sglang-qwen.service.d/50-logdoctor.conf\n")
    changed = [x for x in p.stdout.splitlines()[2:] if x[:1] in "+-" and not x.startswith(("+#", "-#"))]
    assert changed == ["-    --port 30000", "+    --port 30000 \\", "+    --cuda-graph-backend-decode disabled"]
    # round 2 reads the command in force from the drop-in and updates the same file
    p = fix(u, "--log", CAPTURE_LOG, "--no-history", "--write")
    assert p.returncode == 1, p.stderr
    text2 = dropin.read_text()
    assert "--mem-fraction-static 0.92 \\\n" in text2 and text2.endswith("    --cuda-graph-backend-decode disabled\n")
    assert "# round 1: --mem-fraction-static 0.92, after kv_cache_oom\n" in text2
    assert "# round 2: add --cuda-graph-backend-decode disabled, after graph_capture_fault\n" in text2
    assert sorted(x.name for x in dropin.parent.iterdir()) == ["50-logdoctor.conf"]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["sglang-qwen.service", "sglang-qwen.service.d"]


def test_a_hand_edited_drop_in_is_refused(tmp_path):
    u = unit_in(tmp_path)
    assert fix(u, "--log", KV_LOG, "--no-history", "--write").returncode == 1
    dropin = tmp_path / "sglang-qwen.service.d" / "50-logdoctor.conf"
    edited = dropin.read_text().replace("--port 30000", "--port 30001")
    dropin.write_text(edited)
    p = fix(u, "--log", CAPTURE_LOG, "--no-history", "--write")
    assert p.returncode == 2 and "edited since logdoctor wrote it" in one_line(p)
    assert dropin.read_text() == edited


def test_a_drop_in_read_after_ours_that_sets_execstart_is_refused(tmp_path):
    u = unit_in(tmp_path)
    d = tmp_path / "sglang-qwen.service.d"
    d.mkdir()
    (d / "override.conf").write_text(f"[Service]\nExecStart=\nExecStart={SG} --mem-fraction-static 0.88\n")
    p = fix(u, "--log", KV_LOG, "--no-history", "--write")
    assert p.returncode == 2 and "override.conf is read after 50-logdoctor.conf" in one_line(p)
    assert sorted(x.name for x in d.iterdir()) == ["override.conf"]
    # a renamed copy of a drop-in would load beside it: refused
    p = fix(d / "override.conf", "--log", KV_LOG, "--no-history", "--write", "--new-unit")
    assert p.returncode == 2 and "is a drop-in" in one_line(p)
    assert sorted(x.name for x in d.iterdir()) == ["override.conf"]
    # an earlier-sorting drop-in holding the command: its command is the one edited, into ours
    (d / "override.conf").rename(d / "10-flags.conf")
    p = fix(u, "--log", KV_LOG, "--no-history", "--write")
    assert p.returncode == 1, p.stderr
    assert f"ExecStart=\nExecStart={SG} --mem-fraction-static 0.92\n" in (d / "50-logdoctor.conf").read_text()


def test_min_confidence_leaves_weaker_verdicts_for_a_person(tmp_path):
    u = unit_in(tmp_path)
    p = fix(u, "--log", INFERRED_LOG, "--no-history", "--write")
    assert p.returncode == 3 and "left for a person" in one_line(p) and "tier inferred" in p.stderr
    assert not (tmp_path / "sglang-qwen.service.d").exists()
    p = fix(u, "--log", INFERRED_LOG, "--no-history")  # a diff is for a person: shown
    assert p.returncode == 1 and "+++ b/sglang-qwen.service.d/50-logdoctor.conf" in p.stdout
    for bar in ("inferred", "0.5"):
        shutil.rmtree(tmp_path / "sglang-qwen.service.d", ignore_errors=True)
        p = fix(u, "--log", INFERRED_LOG, "--no-history", "--write", "--min-confidence", bar)
        assert p.returncode == 1, p.stderr
    p = fix(u, "--log", KV_LOG, "--no-history", "--write", "--min-confidence", "0.99")
    assert p.returncode == 3
    p = fix(u, "--log", KV_LOG, "--no-history", "--write", "--min-confidence", "sure")
    assert p.returncode == 2 and "--min-confidence" in one_line(p)


def test_the_attempt_is_recorded_under_the_units_name(tmp_path):
    """A docker log (no unit, no host in it): the history row carries UNIT_FILE's unit and this host."""
    log = tmp_path / "docker.log"
    log.write_text(
        "\n".join(
            line.split(": ", 1)[1] if ": " in line else line
            for line in KV_LOG.read_text().splitlines()
            if "sglang" in line or "python" in line
        )
        + "\n"
    )
    u = unit_in(tmp_path)
    db = tmp_path / "h.db"
    p = fix(u, "--log", KV_LOG, "--history", db)
    assert p.returncode == 1, p.stderr
    import sqlite3

    rows = sqlite3.connect(db).execute("select host, unit from attempts").fetchall()
    assert rows and all(unit == "sglang-qwen.service" and host for host, unit in rows), rows
    db2 = tmp_path / "h2.db"
    p = fix(u, "--log", log, "--history", db2)
    assert p.returncode == 1, p.stderr
    import socket

    rows = sqlite3.connect(db2).execute("select host, unit from attempts").fetchall()
    assert rows and all((host, unit) == (socket.gethostname(), "sglang-qwen.service") for host, unit in rows), rows


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed (apt-get install systemd)"
)
def test_systemd_analyze_verifies_the_written_drop_in(tmp_path):
    """The drop-in as systemd reads it: `systemd-analyze verify` on the unit (its .d folder beside it) finds no
    problem in our file, and `systemd-analyze cat-config`-style loading sees our ExecStart= as the one in force."""
    venv = tmp_path / "bin"
    venv.mkdir()
    (venv / "python3").symlink_to(sys.executable)
    text = UNIT.read_text().replace("/opt/sglang/bin/python3", str(venv / "python3"))
    text = text.replace("ExecStartPre=/usr/bin/nvidia-smi -pm 1\n", "").replace(
        "OnFailure=logdoctor-diagnose@%n.service\n", ""
    )
    u = unit_in(tmp_path, text=text)
    assert fix(u, "--log", KV_LOG, "--no-history", "--write").returncode == 1

    def verify():
        return subprocess.run(
            ["systemd-analyze", "verify", "--man=no", str(u)],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, SYSTEMD_LOG_LEVEL="warning"),
        )

    p = verify()
    assert p.returncode == 0 and p.stdout + p.stderr == "", p.stdout + p.stderr
    # the check has teeth: without the ExecStart= reset systemd sees two commands and refuses the unit
    dropin = tmp_path / "sglang-qwen.service.d" / "50-logdoctor.conf"
    dropin.write_text(dropin.read_text().replace("ExecStart=\n", "", 1))
    p = verify()
    assert p.returncode != 0 and "more than one ExecStart=" in p.stdout + p.stderr


def test_a_masked_drop_in_is_not_written_through(tmp_path):
    """50-logdoctor.conf linked to /dev/null (masked on purpose): refused, not streamed into /dev/null as 'written'."""
    u = unit_in(tmp_path)
    d = tmp_path / "sglang-qwen.service.d"
    d.mkdir()
    (d / "50-logdoctor.conf").symlink_to("/dev/null")
    p = fix(u, "--log", KV_LOG, "--no-history", "--write")
    assert p.returncode == 2 and "not a regular file" in one_line(p)
    assert os.readlink(d / "50-logdoctor.conf") == "/dev/null"
