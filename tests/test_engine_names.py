"""No engine is named outside `logdoctor/engines/` (issue 20: the `Engine` record is complete, as ruff's codes.rs
is): a string literal in any other module that names sglang, vllm, tgi, text-generation, lmdeploy, tensorrt or
trtllm is engine knowledge in the wrong place. Docstrings and comments may name engines; literals may not.

ALLOWED lists the modules that still do, each with why; it may only shrink: an entry whose file no longer names an
engine fails too, so whoever moves the last literal out also deletes the line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from logdoctor.engines import ENGINES, config_dump_pattern

PKG = Path(__file__).resolve().parent.parent / "logdoctor"
NAMES = re.compile(r"sglang|vllm|(?<![a-z])tgi(?![a-z])|text[-_]generation|lmdeploy|tensorrt|trtllm", re.I)

# module (relative to logdoctor/) -> why it still names an engine; shrink this list as the literals move to engines/
ALLOWED: dict[str, str] = {
    "preflight/budget.py": "preflight's per-engine memory budget: flag names and overheads per engine",
    "preflight/overheads.py": "preflight's per-engine overhead table",
    "preflight/inputs.py": "preflight's engine choice and flag names",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def named_engines(path: Path) -> list[tuple[int, str]]:
    """(line, literal) for each string or bytes literal in the module that names an engine."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docs and isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if NAMES.search(text):
                hits.append((node.lineno, text[:80]))
    return hits


def _modules() -> dict[str, Path]:
    return {
        p.relative_to(PKG).as_posix(): p for p in sorted(PKG.rglob("*.py")) if p.relative_to(PKG).parts[0] != "engines"
    }


def test_no_engine_name_outside_engines():
    found = {rel: hits for rel, p in _modules().items() if (hits := named_engines(p))}
    new = {rel: hits[:3] for rel, hits in found.items() if rel not in ALLOWED}
    assert not new, f"engine names as literals outside logdoctor/engines/ (put them on the Engine record): {new}"
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"these modules name no engine any more: delete their ALLOWED entries: {stale}"


def test_the_check_sees_a_literal_and_skips_a_docstring(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text('"""Reads vLLM logs."""\nX = 1  # sglang\nY = b"non-default"\nZ = f"{X} TensorRT"\n')
    assert [t for _, t in named_engines(mod)] == [" TensorRT"]


@pytest.mark.parametrize("name", list(ENGINES))
def test_every_engine_declares_where_its_code_and_processes_are(name):
    """The fields the stages outside engines/ read instead of naming an engine."""
    e = ENGINES[name]
    assert e.package_dirs and all("/" not in d.strip("/") or d.count("/") < 3 for d in e.package_dirs)
    assert e.process_names and e.unit_words
    for rx in e.process_names + e.front_end_processes + e.worker_processes + e.config_dump:
        re.compile(rx)
    for word in e.config_dump_words:  # each literal word is in one of its dump patterns
        assert any(word.rstrip("=: ") in rx for rx in e.config_dump), (name, word)


def test_the_attempt_boundary_is_the_registrys():
    """attempts.split cuts where an engine's config dump starts; until attempts.py reads the registry, the two
    patterns must stay equal (the triage boundary check reads attempts._CONFIG)."""
    from logdoctor.timeline.attempts import _CONFIG

    assert _CONFIG.pattern == config_dump_pattern()


def test_the_tables_outside_engines_read_the_record():
    """What decisive, timeline, the atlas and the levers' notes read from the record is in force there."""
    from logdoctor.core.vocab import PHASES
    from logdoctor.engines.atlas.phases import PHASE_TABLE, phase_of
    from logdoctor.engines.levers import LEVERS
    from logdoctor.timeline import build as timeline
    from logdoctor.timeline import decisive

    for e in ENGINES.values():
        for d in e.package_dirs:
            assert decisive.ENGINE_FILE.search(f"/usr/lib/python3/site-packages/{d}/x.py"), (e.name, d)
        for d in e.compile_dirs:
            assert timeline._COMPILE_FILES.search(f"/site-packages/{d}/backends.py"), (e.name, d)
        for phase, words in e.source_phases:
            assert phase in PHASES and all(w in dict(PHASE_TABLE)[phase] for w in words), (e.name, phase)
            assert all(phase_of(w + "x.py", "f") == phase for w in words), (e.name, words)
        assert set(e.lever_notes) <= set(LEVERS), e.name  # notes are on canonical levers
    assert timeline._WORKER_RANK.match("TP0") and not timeline._WORKER_RANK.match("main")
