"""The rule base: lint clean, every rule wins on its examples and stays quiet on healthy fixtures, the catalogue
is current, and the linter catches what it promises to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.core.errors import RuleError
from logdoctor.matching.loader import load_rule_file, load_rules
from logdoctor.matching.schema import backtracking_risk

ROOT = Path(__file__).resolve().parent.parent


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "logdoctor", *args], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def test_rules_lint_is_clean():
    rc, out, err = cli("rules", "lint")
    assert rc == 0, err


def test_rules_test_passes():
    rc, out, err = cli("rules", "test")
    assert rc == 0, err[-3000:]


def test_catalogue_is_current():
    from logdoctor.matching.docgen import catalogue_markdown

    assert (ROOT / "docs" / "rules-catalogue.md").read_text() == catalogue_markdown(load_rules(())), (
        "run: logdoctor rules docs --out docs/rules-catalogue.md"
    )


def test_every_taxonomy_cause_has_rules_for_sglang_and_vllm():
    rules = load_rules(())
    from logdoctor.core.vocab import CAUSES

    for cause in CAUSES:
        for engine in ("sglang", "vllm"):
            assert any(r.cause == cause and r.applies_to(engine) for r in rules), (cause, engine)


@pytest.mark.parametrize(
    "pattern,bad",
    [
        (r"(a+)+$", True),
        (r"(\w+\s?)+x", True),
        (r"(.*)*", True),
        # "_" is both the separator and a body character: "a_a_a_…" splits exponentially (issue 11's vLLM tag hang)
        (r"(?:[ _][\w=.\-]+)*", True),
        (r"(?: [\w=.\-]+)*", False),
        (r"Not enough memory\. Please try", False),
        (r"(?:\d+,)*\d+", False),
    ],
)
def test_backtracking_detector(pattern, bad):
    assert (backtracking_risk(pattern) is not None) == bad


def test_lint_rejects_unknown_lever_duplicate_ids_and_schema_errors(tmp_path):
    d = tmp_path / "kv_cache_oom"
    d.mkdir()
    (d / "a.yaml").write_text(
        "id: x.a\ncause: kv_cache_oom\ntitle: t t\nmatch: {message: foo}\n"
        "fixes:\n  - {lever: mem_fractoin, op: raise}\n"
    )
    with pytest.raises(RuleError, match=r"a.yaml:6: unknown lever 'mem_fractoin'"):
        load_rule_file(d / "a.yaml")
    (d / "a.yaml").write_text("id: x.a\ncause: kv_cache_oom\ntitle: t t\nmatch: {message: '(a+)+b'}\nexamples: []\n")
    (d / "b.yaml").write_text("id: x.a\ncause: kv_cache_oom\ntitle: t t\nmatch: {message: foo}\nexamples: []\n")
    (d / "c.yaml").write_text("id: x.c\ncause: kv_cache_oom\ntitle: t t\nmatch: {message: foo}\ntier: high\n")
    rc, out, err = cli("rules", "lint", str(tmp_path))
    assert rc == 2
    assert "duplicate rule id 'x.a'" in err
    assert "catastrophic backtracking" in err
    assert "c.yaml:5: schema: tier" in err


def test_user_rule_folder_overrides_by_id(tmp_path, monkeypatch):
    d = tmp_path / "kv_cache_oom"
    d.mkdir()
    src = (ROOT / "rules" / "kv_cache_oom" / "sglang.kv-pool.not-enough-memory.yaml").read_text()
    (d / "override.yaml").write_text(src.replace("tier: specific", "tier: generic"))
    by_id = {r.id: r for r in load_rules((str(d),))}
    assert by_id["sglang.kv-pool.not-enough-memory"].tier == "generic"
    monkeypatch.setenv("LOGDOCTOR_RULES_PATH", str(d))
    by_id = {r.id: r for r in load_rules(())}
    assert by_id["sglang.kv-pool.not-enough-memory"].tier == "generic"
