"""What a newcomer meets first (issue 11): pipes, options that do nothing, help with examples, evidence that is
quoted not invented, and the explicit Path/str API. Runs the CLI as a subprocess, as users do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import logdoctor
from logdoctor.core.errors import InputError

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
FX = ROOT / "fixtures" / "journals"
SGLANG = FX / "sglang-kv_cache_oom-qwen3-32b-l40s-attempts" / "journal.log"


def run(*args, stdin=None):
    p = subprocess.run(
        [sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, input=stdin, cwd=ROOT
    )
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize(
    "cmd",
    [["rules", "list"], ["rules", "show", "any.forward.cuda-oom"], ["explain", str(SGLANG)], ["timeline", str(SGLANG)]],
)
def test_a_closed_pipe_is_a_normal_end(cmd):
    sh = f"{sys.executable} -m logdoctor {' '.join(cmd)} | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, cwd=ROOT)
    assert "BrokenPipe" not in p.stderr and "internal error" not in p.stderr, p.stderr
    assert p.stdout.strip() in ("0", "1"), p.stdout  # explain keeps its verdict code; never 4


def test_unknown_rule_is_a_usage_error():
    rc, _, err = run("rules", "show", "no.such.rule")
    assert rc == 2 and err.strip().count("\n") == 0 and "no.such.rule" in err


def test_since_and_boot_on_a_text_file_warn():
    rc, _, err = run("explain", "--since", "yesterday", str(SGLANG))
    assert rc == 1 and "--since only filters a journal" in err
    rc, _, err = run("explain", "--boot", "-1", str(SGLANG))  # accepted like journalctl, warned about on a file
    assert rc == 1 and "--boot only filters a journal" in err and "No such option" not in err


def test_engine_that_contradicts_the_log_warns():
    rc, _, err = run("explain", "--engine", "vllm", str(SGLANG))
    assert "--engine vllm given, but the log looks like sglang" in err
    rc, _, err = run("explain", "--engine", "sglang", str(SGLANG))
    assert "looks like" not in err


def test_help_says_what_source_may_be_with_examples():
    _, top, _ = run("--help")
    assert "crashed while serving" in top
    for cmd in ("explain", "timeline"):
        _, out, _ = run(cmd, "--help")
        assert "SOURCE is" in out and "stdin" in out and out.count("logdoctor " + cmd) >= 2, out
    _, out, _ = run("rules", "--help")
    assert "Examples:" in out


def test_evidence_is_quoted_from_the_log_or_cut_visibly():
    for case in sorted(FX.glob("*/journal.log")):
        d = logdoctor.diagnose(case).to_dict()  # in-process: the same pipeline explain runs
        lines = case.read_text(errors="replace").splitlines()
        for ev in d["evidence"]:
            text = ev["text"].removesuffix("…")
            src = lines[ev["line"] - 1] if 0 < ev["line"] <= len(lines) else ""
            assert text in src or text.strip() in src, (case.parent.name, ev, src[:200])
        assert not any("failed alone" in ev["text"] for ev in d["evidence"])


def test_long_evidence_is_cut_with_an_ellipsis_in_text_output():
    long_line = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. " + "x" * 400
    log = SGLANG.read_text().replace(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", long_line, 1
    )
    rc, out, _ = run("explain", "-", stdin=log)
    ev = [l for l in out.splitlines() if "Not enough memory" in l]
    assert ev and all(l.endswith("…") and len(l) < 200 for l in ev if "x" * 50 in l)


def test_api_path_is_a_file_and_str_is_text():
    d = logdoctor.diagnose(SGLANG)  # a Path
    assert d.cause == "kv_cache_oom"
    assert logdoctor.diagnose(SGLANG.read_text()).cause == "kv_cache_oom"
    with pytest.raises(InputError, match="empty input"):
        logdoctor.diagnose("")
    assert logdoctor.diagnose(os.fspath(SGLANG)).failed is False  # a str is text, even when it names a file


def test_progress_only_on_a_tty(tmp_path):
    import io

    from logdoctor.core import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    data = b"x" * (3 * progress.CHUNK + 5)
    p = progress.Progress("big.log", stream=Tty())
    p.start -= 10  # as if reading had taken 10 s
    p.update(len(data), final=True)
    assert "read 12.6 MB" in p.stream.getvalue() and "MB/s" in p.stream.getvalue()
    p.done()
    quiet = progress.Progress("big.log", stream=io.StringIO())
    quiet.start -= 10
    quiet.update(len(data), final=True)
    assert quiet.stream.getvalue() == ""
    assert progress.read_all(io.BytesIO(data), "x") == data  # pytest's stderr is no TTY: a plain read
