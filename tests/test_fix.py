"""`logdoctor fix`: the edit touches only the changed flag (plus Description=), everything else stays byte for
byte; a plain command line and `docker run` work too; nothing flag-shaped → exit 2 with one line."""

from __future__ import annotations

import difflib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.hook.unitfile import NothingToApply, apply_to_text, find_command, new_name, scan
from logdoctor.verdict.diagnosis import FixStep

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals"
UNIT = ROOT / "tests" / "data" / "hook" / "sglang-qwen.service"
KV_LOG = SEED / "seed-attempt1-kv-oom" / "journal.log"
CAPTURE_LOG = SEED / "seed-attempt2-capture-unsafe" / "journal.log"
HW_LOG = SEED / "seed-attempt3-hardware" / "journal.log"
UNKNOWN_LOG = ROOT / "tests" / "data" / "hook" / "unknown-failure.log"


def fix(*args):
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", "fix", *map(str, args), "--no-history"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    return [l[2:] for l in diff if l.startswith("- ")], [l[2:] for l in diff if l.startswith("+ ")]


def test_scan_keeps_spans_quotes_and_skips_comment_lines():
    text = UNIT.read_text()
    cmd = find_command(text)
    assert cmd.kind == "unit"
    values = [a.value for a in cmd.args]
    assert values[:3] == ["/opt/sglang/bin/python3", "-m", "sglang.launch_server"]
    assert "/models/Qwen3 Next DFlash b16" in values
    assert "{% for m in messages %}{{ m.content }}{% endfor %}" in values
    assert not any(v.startswith("#") for v in values)  # the comment inside the continuation
    assert values[-2:] == ["--port", "30000"]
    for a in cmd.args:  # every span is the argument as written
        raw = text[a.start : a.end]
        assert raw == a.value or raw[0] in "'\""


def test_replacing_a_value_touches_only_that_flag(tmp_path):
    p = fix(UNIT, "--log", KV_LOG, "--out", tmp_path / "new.service", "--new-unit")
    assert p.returncode == 1, p.stderr
    old, new = UNIT.read_text(), (tmp_path / "new.service").read_text()
    minus, plus = changed_lines(old, new)
    assert minus == ["Description=SGLang Qwen3-Next-80B-A3B (DFLASH)", "    --mem-fraction-static 0.88 \\"]
    assert plus == [
        "Description=SGLang Qwen3-Next-80B-A3B (DFLASH) (logdoctor: --mem-fraction-static 0.92, after kv_cache_oom)",
        "    --mem-fraction-static 0.92 \\",
    ]
    assert len(new) == len(old) + len(" (logdoctor: --mem-fraction-static 0.92, after kv_cache_oom)")


def test_adding_a_flag_continues_the_backslash_style_and_names_the_unit(tmp_path):
    unit = tmp_path / "sglang-qwen.service"
    unit.write_bytes(UNIT.read_bytes())
    os.chmod(unit, 0o640)
    p = fix(unit, "--log", CAPTURE_LOG, "--write", "--new-unit")
    assert p.returncode == 1, p.stderr
    target = tmp_path / "sglang-qwen-nograph.service"
    assert p.stdout.strip() == f"wrote {target}: add --cuda-graph-backend-decode disabled"
    assert unit.read_bytes() == UNIT.read_bytes()  # the original is untouched
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(x.name for x in tmp_path.iterdir()) == ["sglang-qwen-nograph.service", "sglang-qwen.service"]
    minus, plus = changed_lines(UNIT.read_text(), target.read_text())
    assert minus == ["Description=SGLang Qwen3-Next-80B-A3B (DFLASH)", "    --port 30000"]
    assert plus[1:] == ["    --port 30000 \\", "    --cuda-graph-backend-decode disabled"]


def test_diff_of_the_renamed_copy():
    p = fix(UNIT, "--log", KV_LOG, "--new-unit")
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[:2] == ["--- a/sglang-qwen.service", "+++ b/sglang-qwen-mem092.service"]
    assert sum(1 for l in lines if l.startswith(("-", "+")) and not l.startswith(("---", "+++"))) == 4


@pytest.mark.parametrize("log,why", [(HW_LOG, "hardware_fault: no flag change"), (UNKNOWN_LOG, "cause is unknown")])
def test_refuses_when_nothing_is_flag_shaped(tmp_path, log, why):
    p = fix(UNIT, "--log", log, "--write")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and why in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""


def test_plain_command_line_and_docker_run(tmp_path):
    sh = tmp_path / "launch.sh"
    sh.write_text(
        "#!/bin/sh\n# start the server\nexec python3 -m sglang.launch_server --model-path /m \\\n"
        "  --tp 2 --mem-fraction-static=0.88 --port 30000\necho never\n"
    )
    p = fix(sh, "--log", KV_LOG, "--out", "-")
    assert p.returncode == 1
    assert p.stdout == sh.read_text().replace("--mem-fraction-static=0.88", "--mem-fraction-static=0.92")
    dk = tmp_path / "run.txt"
    dk.write_text(
        'docker run --rm --gpus all -e HF_TOKEN="a b" -p 30000:30000 lmsysorg/sglang:v0.5 '
        "python3 -m sglang.launch_server --model-path /m --tp 2\n"
    )
    assert find_command(dk.read_text()).kind == "docker"
    p = fix(dk, "--log", CAPTURE_LOG, "--out", "-")
    assert p.stdout == dk.read_text().replace("--tp 2\n", "--tp 2 --cuda-graph-backend-decode disabled\n")


def test_remove_and_replace_spellings():
    text = (
        "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server \\\n"
        "  --enable-torch-compile \\\n  --cuda-graph-max-bs 16 \\\n  --port 30000\n"
        "ExecStartPost=/bin/true\n"
    )
    remove = FixStep("torch_compile", "--enable-torch-compile", True, False, "", "remove --enable-torch-compile")
    out, summary = apply_to_text(text, remove, "sglang")
    assert summary == "remove --enable-torch-compile"
    assert out == text.replace("  --enable-torch-compile \\\n", "")
    # the old spelling of the lever is replaced by the new one, in place
    bs = FixStep("graph_max_bs", "--cuda-graph-max-bs-decode", 16, 8, "", "--cuda-graph-max-bs-decode 8")
    out, _ = apply_to_text(text, bs, "sglang")
    assert out == text.replace("--cuda-graph-max-bs 16", "--cuda-graph-max-bs-decode 8")
    # removing the last argument also drops the continuation that led to it
    last = "[Service]\nExecStart=/bin/sglang \\\n  --port 1 \\\n  --enable-torch-compile\nRestart=no\n"
    out, _ = apply_to_text(last, remove, "sglang")
    assert out == "[Service]\nExecStart=/bin/sglang \\\n  --port 1\nRestart=no\n"
    with pytest.raises(NothingToApply):
        apply_to_text("[Service]\nExecStart=/bin/sglang --port 1\n", remove, "sglang")


def test_new_names():
    g = FixStep("graphs_off", "--disable-cuda-graph", False, True, "", "--disable-cuda-graph")
    assert new_name("/etc/systemd/system/sglang-qwen-small.service", g) == "sglang-qwen-small-nograph.service"
    assert new_name("sglang-qwen-nograph.service", g) == "sglang-qwen-nograph-2.service"  # never UNIT_FILE itself
    m = FixStep("mem_fraction", "--mem-fraction-static", 0.88, 0.92, "", "--mem-fraction-static 0.92")
    assert new_name("launch.sh", m) == "launch-mem092.sh"
    assert scan('a \'b c\' "d\\"e"', 0, 13, unit=False)[1].value == "b c"


def test_the_editor_checks_every_value_again():
    """A FixStep built by hand (the Python API) passes the same lever check before it reaches the text."""
    from logdoctor.engines.levers import BadValue

    text = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --mem-fraction-static 0.88\n"
    for to, shown in ((0.92, "0.92 --trust-remote-code"), ("0.9; rm -rf /", "--mem-fraction-static 0.9; rm -rf /")):
        step = FixStep("mem_fraction", "--mem-fraction-static", 0.88, to, "", shown)
        with pytest.raises(BadValue):
            apply_to_text(text, step, "sglang")
    ok = FixStep("mem_fraction", "--mem-fraction-static", 0.88, 0.92, "", "--mem-fraction-static 0.92")
    assert apply_to_text(text, ok, "sglang")[0] == text.replace("0.88", "0.92")
