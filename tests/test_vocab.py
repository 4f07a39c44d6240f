"""The vocabularies are defined once (logdoctor/core/vocab.py); the schemas, docs and CLI that repeat them must agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

from logdoctor.core import vocab

REPO = Path(__file__).resolve().parents[1]
RULE_SCHEMA = json.loads((REPO / "logdoctor" / "schemas" / "rule.schema.json").read_text())
DIAG_SCHEMA = json.loads((REPO / "logdoctor" / "schemas" / "diagnosis.schema.json").read_text())
TAXONOMY = REPO.parent / "shared" / "corpus" / "TAXONOMY.md"


def test_every_literal_has_a_description():
    from typing import get_args

    assert set(get_args(vocab.Cause)) == set(vocab.CAUSE_TITLES)
    assert set(vocab.PHASES_OR_UNKNOWN) == set(vocab.PHASE_WORDS)
    assert set(get_args(vocab.FixOp)) == set(vocab.FIX_OPS)
    assert set(get_args(vocab.EventKind)) == set(vocab.EVENT_KINDS)
    assert set(get_args(vocab.Edge)) == set(vocab.EDGES)
    assert set(get_args(vocab.Transport)) == set(vocab.TRANSPORTS)
    assert set(get_args(vocab.PhaseSource)) == set(vocab.PHASE_SOURCES)
    assert set(get_args(vocab.Outcome)) == set(vocab.OUTCOMES)
    assert set(get_args(vocab.XidClass)) == set(vocab.XID_CLASSES)


def test_rule_schema_enums_are_the_vocabulary():
    props = RULE_SCHEMA["properties"]
    assert props["cause"]["enum"] == list(vocab.CAUSES)
    assert RULE_SCHEMA["$defs"]["phase"]["enum"] == list(vocab.PHASES_OR_UNKNOWN)
    assert props["fixes"]["items"]["properties"]["op"]["enum"] == list(vocab.OPS)
    xid = RULE_SCHEMA["$defs"]["condition"]["properties"]["xid"]["oneOf"][0]["enum"]
    assert xid == list(vocab.XID_CLASSES)


def test_diagnosis_schema_enums_are_the_vocabulary():
    props = DIAG_SCHEMA["properties"]
    assert props["phase"]["enum"] == list(vocab.PHASES_OR_UNKNOWN)
    assert props["cause"]["oneOf"][1]["enum"] == [*vocab.CAUSES, vocab.UNKNOWN]


def test_docs_copy_of_the_diagnosis_schema_is_current():
    assert (REPO / "docs" / "diagnosis.schema.json").read_text() == (
        REPO / "logdoctor" / "schemas" / "diagnosis.schema.json"
    ).read_text()


def test_taxonomy_lists_exactly_the_causes():
    if not TAXONOMY.exists():  # the shared corpus sits beside the checkout in this workspace only
        import pytest

        pytest.skip("shared/corpus/TAXONOMY.md not present")
    text = TAXONOMY.read_text()
    rows = re.findall(r"^\| (\w+) \|", text, re.M)
    assert [r for r in rows if r not in ("cause", vocab.UNKNOWN)] == list(vocab.CAUSES)
    phases = re.search(r"Startup phases.*", text).group(0)
    assert re.findall(r"`(\w+)`", phases) == list(vocab.PHASES_OR_UNKNOWN)


def test_rule_folders_are_causes():
    assert {p.name for p in (REPO / "rules").iterdir() if p.is_dir()} == set(vocab.CAUSES)


def test_xid_classes_do_not_overlap():
    assert not vocab.XID_HARDWARE & vocab.XID_APP
    assert vocab.xid_class(79) == "hardware" and vocab.xid_class(13) == "app" and vocab.xid_class(1) == "other"


def test_exit_codes_follow_the_outcomes():
    from logdoctor.verdict.diagnosis import Diagnosis

    base = dict(engine="vllm", engine_version=None, phase="serving", confidence=0.5, rule=None)
    assert Diagnosis(failed=False, cause=None, **base).exit_code == 0
    assert Diagnosis(failed=True, cause="host_oom", **base).exit_code == 1
    assert Diagnosis(failed=True, cause="unknown", **base).exit_code == 3


def test_engine_names_come_from_the_registry():
    from logdoctor.cli.app import ENGINES as CLI_CHOICES
    from logdoctor.cli.commands.fix import ENGINES as FIX_CHOICES
    from logdoctor.cli.commands.watch import ENGINES as WATCH_CHOICES
    from logdoctor.engines import ENGINE_NAMES, ENGINES
    from logdoctor.engines.detect import ENGINES as DETECTED

    assert CLI_CHOICES == FIX_CHOICES == WATCH_CHOICES == ("auto", *ENGINE_NAMES) and DETECTED == ENGINE_NAMES
    assert DIAG_SCHEMA["properties"]["engine"]["enum"] == [*ENGINE_NAMES, "unknown"]
    assert RULE_SCHEMA["properties"]["engines"]["items"]["enum"] == ["any", *ENGINE_NAMES]
    for name, e in ENGINES.items():
        assert e.name == name and e.signatures and e.markers, name


def test_a_new_engine_is_one_module():
    """Registering an Engine is all detection and the timeline need: its signatures vote and its markers place
    the phases (run in a fresh interpreter: the registry is read at import time)."""
    import subprocess
    import sys

    code = """
import logdoctor.engines as reg
from logdoctor.engines.engine import Engine
from logdoctor.engines.markers import Marker
toy = Engine(name="toyllm", title="Toy", signatures=("toyllm.serve",),
             markers=(Marker("toy_load", r"^toy loading weights", "weight_load", "begin", keyword="toy"),))
reg.ENGINES = reg.MappingProxyType({**reg.ENGINES, "toyllm": toy})
from logdoctor.input.read import read_lines
from logdoctor.timeline.build import build
tl = build(read_lines(["toyllm.serve --model m", "toy loading weights", "RuntimeError: boom"]).records)
print(tl.engine, tl.attempts[-1].phase)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["toyllm", "weight_load"]
