"""Docs that travel with the install (issue 23): `logdoctor docs [TOPIC]`, man pages generated from the click
commands (committed in man/, current), `rules test --cases DIR`, and --help texts with examples and exit codes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd=ROOT):
    p = subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def test_docs_lists_topics_and_prints_one():
    rc, out, _ = cli("docs")
    assert rc == 0
    names = {line.split()[0] for line in out.splitlines()}
    assert {p.stem for p in (ROOT / "docs").glob("*.md")} == names
    rc, out, _ = cli("docs", "cli")
    assert rc == 0 and out == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_an_unknown_topic_is_one_line_exit_2():
    rc, out, err = cli("docs", "nosuch")
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "topics: " in err


def test_committed_man_pages_are_current():
    # generated in a fresh interpreter, as tools/make_man.py does: in this process an earlier test may have loaded a
    # command in a simulated missing-extra state, and the click tree would differ from a user's
    import json

    code = "import json; from logdoctor.cli.commands.docs import pages; print(json.dumps(pages()))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    want = json.loads(p.stdout)
    have = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "man").glob("*.1")}
    assert set(have) == set(want), "run python tools/make_man.py"
    stale = [n for n in want if have[n] != want[n]]
    assert not stale, f"run python tools/make_man.py ({stale})"


def test_man_pages_render_with_man(tmp_path):
    if shutil.which("man") is None:
        pytest.skip("no man(1) on this machine")
    rc, _, err = cli("docs", "--man", str(tmp_path))
    assert rc == 0 and "man pages" in err
    for page in ("logdoctor.1", "logdoctor-explain.1", "logdoctor-rules-test.1", "logdoctor-triage.1"):
        assert (tmp_path / page).is_file()
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0"}
    p = subprocess.run(["man", "-l", str(tmp_path / "logdoctor-explain.1")], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    text = " ".join(re.sub(r".\x08", "", p.stdout).split())  # no overstrike (as col -b), no justification
    assert "logdoctor-explain" in text and "--format" in text and "Exit codes" in text
    assert "journalctl -u sglang-qwen" in text  # the \b example block kept verbatim


@pytest.mark.parametrize("cmd", ["watch", "history", "notify", "triage", "docs", "eval"])
def test_help_has_examples_and_exit_codes(cmd):
    rc, out, _ = cli(cmd, "--help")
    assert rc == 0
    assert "Example" in out and "Exit code" in out, out


def test_top_help_points_to_installed_docs_not_checkout_paths():
    rc, out, _ = cli("--help")
    assert rc == 0 and "logdoctor docs" in out and "docs/cli.md" not in out


def _my_rule_and_case(tmp_path: Path) -> tuple[Path, Path]:
    """A user's folder: a copy of a bundled rule (same id, so it overrides) whose example is the user's own case."""
    src = ROOT / "rules" / "kv_cache_oom" / "any.kv-pool.cuda-oom.yaml"
    case = next((ROOT / "fixtures" / "journals").rglob("pool_alloc_oom"))
    rules, cases = tmp_path / "myrules", tmp_path / "mycases"
    rules.mkdir()
    (rules / src.name).write_text(src.read_text().replace("examples: [pool_alloc_oom]", "examples: [my-case]"))
    shutil.copytree(case, cases / "my-case")
    return rules, cases


def test_rules_test_takes_a_folder_of_cases(tmp_path):
    rules, cases = _my_rule_and_case(tmp_path)
    rc, out, err = cli("rules", "test", str(rules), "--cases", str(cases), cwd=tmp_path)
    assert rc == 0, err
    assert out.startswith("1 examples passed, 0 failed")
    rc, out, err = cli("rules", "test", str(rules), cwd=tmp_path)
    assert rc == 1 and "'my-case' not found" in err and "--cases DIR" in err


def test_every_rule_id_in_a_help_example_exists():
    rc, out, _ = cli("rules", "--help")
    ids = re.findall(r"rules show (\S+)", out)
    assert ids
    for rid in ids:
        assert cli("rules", "show", rid)[0] == 0, rid
