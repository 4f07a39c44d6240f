"""The labelled fixture corpus under fixtures/journals/ (built by tools/fixturegen).

Checks: every case folder has journal.log + label.yaml; labels follow LABEL_SCHEMA.md (plus our extra keys);
ids are unique and equal the folder names; the generator reproduces the committed files byte for byte; and no
journal.log shares a 3-line window verbatim with the held-out dev corpus (../shared/corpus/dev), when present.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from logdoctor.core import vocab

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "fixtures" / "journals"
DEV = REPO.parent / "shared" / "corpus" / "dev"
OWNED_ELSEWHERE = {"gpu-real", "formats"}  # folders other tooling owns; not case folders of this corpus

CAUSES = {*vocab.CAUSES, vocab.UNKNOWN}
PHASES = set(vocab.PHASES_OR_UNKNOWN)
FORMATS = {"journal-short", "journal-short-iso", "journal-json", "raw", "docker"}
ENGINES = {"sglang", "vllm", "tgi", "trtllm", "lmdeploy", "llamacpp", "other"}
REQUIRED = [
    "id",
    "source",
    "engine",
    "engine_version",
    "gpu",
    "format",
    "phase",
    "cause",
    "secondary",
    "fix_flags",
    "fix_other",
    "resolved",
    "label_confidence",
    "notes",
]


def case_dirs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(d for d in CORPUS.iterdir() if d.is_dir() and d.name not in OWNED_ELSEWHERE)


def load(d: Path) -> dict:
    return yaml.safe_load((d / "label.yaml").read_text(encoding="utf-8"))


CASES = case_dirs()


def test_corpus_exists_and_is_large_enough():
    assert len(CASES) >= 130


@pytest.mark.parametrize("d", CASES, ids=lambda d: d.name)
def test_case_folder_has_both_files(d: Path):
    assert (d / "journal.log").is_file()
    assert (d / "label.yaml").is_file()
    assert (d / "journal.log").read_text(encoding="utf-8").strip(), "empty journal.log"


@pytest.mark.parametrize("d", CASES, ids=lambda d: d.name)
def test_label_schema(d: Path):
    lab = load(d)
    missing = [k for k in REQUIRED if k not in lab]
    assert not missing, f"missing fields {missing}"
    assert lab["id"] == d.name
    assert lab["engine"] in ENGINES
    assert lab["format"] in FORMATS
    assert lab["phase"] in PHASES
    assert lab["label_confidence"] in {"high", "medium", "low"}
    assert isinstance(lab["resolved"], bool)
    assert isinstance(lab["fix_flags"], list) and all(
        isinstance(f, str) and f.startswith("-") for f in lab["fix_flags"]
    )
    assert isinstance(lab["fix_other"], str)
    failed = lab.get("failed", True)
    assert isinstance(failed, bool)
    if failed:
        assert lab["cause"] in CAUSES
    else:
        assert lab["cause"] is None and lab["phase"] == "serving"
        assert lab["fix_flags"] == []
    assert lab["secondary"] is None or lab["secondary"] in CAUSES
    mns = lab.get("must_not_suggest", [])
    assert isinstance(mns, list) and all(isinstance(m, str) and m.startswith("--") for m in mns)
    assert not set(lab["fix_flags"]) & set(mns), "a fix is also forbidden"
    for f in lab["fix_flags"]:  # a bare '--flag' in must_not_suggest forbids the lever altogether
        assert f.split()[0] not in mns, f"fix {f!r} uses a forbidden lever"
    att = lab.get("attempts", 1)
    assert isinstance(att, int) and att >= 1
    if lab.get("generator") == "fixturegen":
        assert lab.get("variant_of"), "generated cases name their scenario group"


def test_ids_unique_and_match_folders():
    ids = [load(d)["id"] for d in CASES]
    assert len(ids) == len(set(ids))
    assert ids == [d.name for d in CASES]


def test_every_cause_and_engine_is_covered():
    labs = [load(d) for d in CASES if load(d).get("generator") == "fixturegen"]
    for engine in ("sglang", "vllm"):
        for cause in CAUSES - {"unknown"}:
            n = sum(1 for lab in labs if lab["engine"] == engine and lab["cause"] == cause)
            assert n >= 3, f"{engine} x {cause}: {n} cases"
    assert sum(1 for lab in labs if lab.get("failed") is False) >= 20


def test_generator_reproduces_committed_files(tmp_path: Path):
    out = tmp_path / "journals"
    r = subprocess.run(
        [sys.executable, "-m", "tools.fixturegen", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    generated = sorted(p.name for p in out.iterdir() if p.is_dir())
    committed = sorted(d.name for d in CASES if load(d).get("generator") == "fixturegen")
    assert generated == committed, "regenerate: python -m tools.fixturegen --out fixtures/journals"
    for name in generated:
        for f in ("journal.log", "label.yaml"):
            assert (out / name / f).read_bytes() == (CORPUS / name / f).read_bytes(), f"{name}/{f} differs"


def test_docs_catalogue_is_current(tmp_path: Path):
    docs = REPO / "docs" / "fixtures.md"
    if not docs.exists():
        pytest.skip("docs/fixtures.md absent")
    copy = tmp_path / "fixtures.md"
    copy.write_text(docs.read_text(encoding="utf-8"), encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "tools.fixturegen", "--out", str(tmp_path / "j"), "--docs", str(copy)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert copy.read_text(encoding="utf-8") == docs.read_text(encoding="utf-8"), (
        "regenerate: python -m tools.fixturegen --out fixtures/journals --docs docs/fixtures.md"
    )


# Lines every Python crash prints (the traceback header, frozen runpy frames): sharing them is not copying.
_BOILERPLATE = re.compile(
    r'^\s*(Traceback \(most recent call last\):|File "<frozen [^>]+>", line \d+, in \w+|'
    r"During handling of the above exception, another exception occurred:|"
    r"The above exception was the direct cause of the following exception:)?\s*$"
)


def _windows(text: str, k: int = 3) -> set[tuple[str, ...]]:
    lines = [ln.rstrip() for ln in text.split("\n")]
    return {
        tuple(lines[i : i + k])
        for i in range(len(lines) - k + 1)
        if not all(_BOILERPLATE.match(x) for x in lines[i : i + k])
    }


def test_no_three_line_window_shared_with_dev_corpus():
    if not DEV.is_dir():
        pytest.skip(f"{DEV} absent")
    dev: set[tuple[str, ...]] = set()
    for p in DEV.glob("*/journal.log"):
        dev |= _windows(p.read_text(encoding="utf-8", errors="replace"))
    bad = {}
    for d in CASES:
        shared = _windows((d / "journal.log").read_text(encoding="utf-8")) & dev
        if shared:
            bad[d.name] = sorted(shared)[:2]
    assert not bad, f"3-line windows copied from the dev corpus: {bad}"
