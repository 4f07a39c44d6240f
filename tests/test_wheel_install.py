"""What `pip install logdoctor` gives a user: build the sdist, build the wheel from it, install that wheel into
fresh venvs (plain, and with the [train,triage] extras) and run the CLI from a folder outside the checkout.

The editable checkout hides packaging mistakes (it reads rules/ directly), so this is the test that proves the
rule base, schemas and model travel as package data. Slow-ish (two venvs); pip's own cache keeps reruns quick."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # tests/conftest.py: what counts as slow

ROOT = Path(__file__).resolve().parent.parent
N_RULES = len(list((ROOT / "rules").rglob("*.yaml")))
CASE = ROOT / "fixtures" / "journals" / "sglang-kv_cache_oom-qwen3-32b-l40s-attempts"


def _run(cmd, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LOGDOCTOR_RULES_PATH")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # build from a copy of the tracked tree, so a stray build/ or egg-info in the checkout cannot leak in
    src = out / "src"
    files = _run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT).stdout.split()
    for f in files:
        if (ROOT / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    p = _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(src)])
    assert p.returncode == 0, p.stderr[-2000:]
    sdist = next(out.glob("logdoctor-*.tar.gz"))
    p = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(sdist)])
    assert p.returncode == 0, p.stderr[-2000:]
    return next(out.glob("logdoctor-*.whl"))


def _venv(base: Path, name: str, spec: str) -> Path:
    v = base / name
    p = _run([sys.executable, "-m", "venv", str(v)])
    assert p.returncode == 0, p.stderr
    p = _run([str(v / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", spec])
    assert p.returncode == 0, p.stderr[-2000:]
    return v


def test_wheel_carries_rules_schemas_and_model(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert len([n for n in names if n.startswith("logdoctor/data/rules/") and n.endswith(".yaml")]) == N_RULES
    for need in (
        "logdoctor/data/classifier.json",
        "logdoctor/data/atlas.json.gz",
        "logdoctor/schemas/rule.schema.json",
        "logdoctor/schemas/diagnosis.schema.json",
    ):
        assert need in names


def test_plain_install_runs_outside_the_checkout(wheel, tmp_path):
    v = _venv(tmp_path, "plain", str(wheel))
    exe = str(v / "bin" / "logdoctor")
    work = tmp_path / "elsewhere"
    work.mkdir()
    shutil.copy(CASE / "journal.log", work / "journal.log")
    ver = _run([exe, "--version"], cwd=work)
    assert ver.returncode == 0 and f"{N_RULES} bundled rules" in ver.stdout, ver.stdout + ver.stderr
    assert "site-packages" in ver.stdout and "sha256:" in ver.stdout
    lst = _run([exe, "rules", "list"], cwd=work)
    assert lst.returncode == 0 and len(lst.stdout.strip().splitlines()) >= N_RULES, lst.stderr
    ex = _run([exe, "explain", "--format", "json", "journal.log"], cwd=work)
    assert ex.returncode == 1, ex.stderr
    assert '"cause": "kv_cache_oom"' in ex.stdout and '"rule": "' in ex.stdout
    # the lean install has no scientific stack, and the commands that need one name the extra
    heavy = _run(
        [
            str(v / "bin" / "python"),
            "-c",
            "import importlib.util as u; print([m for m in ('numpy', 'pandas', 'sklearn', 'scipy') if u.find_spec(m)])",
        ]
    )
    assert heavy.stdout.strip() == "[]"
    tr = _run([exe, "train", str(work)], cwd=work)
    assert tr.returncode == 2 and "logdoctor[train]" in tr.stderr and len(tr.stderr.strip().splitlines()) == 1
    ev = _run([exe, "eval", str(CASE.parent)], cwd=work)
    assert ev.returncode == 2 and "logdoctor[triage]" in ev.stderr
    # a broken installation (no bundled rule base) is exit 4 with one line, never a classifier-only verdict
    site = next((v / "lib").glob("python3*/site-packages/logdoctor/data/rules"))
    site.rename(site.with_name("rules.away"))
    broken = _run([exe, "explain", "journal.log"], cwd=work)
    assert broken.returncode == 4 and len(broken.stderr.strip().splitlines()) == 1, broken.stderr
    assert "no bundled rule base" in broken.stderr and broken.stdout == ""


def test_full_install_has_the_extras(wheel, tmp_path):
    v = _venv(tmp_path, "full", f"logdoctor[train,triage] @ {wheel.as_uri()}")
    work = tmp_path / "elsewhere"
    work.mkdir()
    one = work / "cases"
    shutil.copytree(CASE, one / CASE.name)
    ev = _run([str(v / "bin" / "logdoctor"), "eval", str(one)], cwd=work)
    assert ev.returncode == 0, ev.stderr
    assert "confusion" in ev.stdout and "kv_cache_oom" in ev.stdout


def test_docs_man_pages_and_rules_test_travel_with_the_wheel(wheel, tmp_path):
    """Issue 23: an installed copy has its docs, man pages, and the cases `rules test` needs (it passed 0 of 208)."""
    names = zipfile.ZipFile(wheel).namelist()
    assert {f"logdoctor/data/docs/{p.name}" for p in (ROOT / "docs").glob("*.md")} <= set(names)
    assert any(n.endswith(".data/data/share/man/man1/logdoctor-explain.1") for n in names)
    v = _venv(tmp_path, "plain", str(wheel))
    exe = str(v / "bin" / "logdoctor")
    work = tmp_path / "elsewhere"
    work.mkdir()
    doc = _run([exe, "docs", "cli"], cwd=work)
    assert doc.returncode == 0 and doc.stdout == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert (v / "share" / "man" / "man1" / "logdoctor.1").is_file()
    if shutil.which("man"):
        env = {**os.environ, "PATH": f"{v / 'bin'}:{os.environ.get('PATH', '')}", "MANWIDTH": "80"}
        env.pop("MANPATH", None)
        page = subprocess.run(["man", "logdoctor-explain"], capture_output=True, text=True, env=env, cwd=work)
        assert page.returncode == 0 and "SOURCE" in page.stdout, page.stderr
    rt = _run([exe, "rules", "test"], cwd=work)
    assert rt.returncode == 0, rt.stderr[-2000:]
    m = re.match(r"(\d+) examples passed, 0 failed; (\d+) healthy fixtures checked", rt.stdout)
    assert m, rt.stdout
    passed, healthy = int(m.group(1)), int(m.group(2))
    assert passed >= N_RULES and healthy > 0
