"""The literal fast path (engines/config_fast.py) must read every dump exactly as the pyparsing grammar does, or
leave it to the grammar: same keys, same values, same types, on every dump line in the fixtures and the dev
corpus, plus crafted edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.engines import config_dump, config_fast

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/dev")


def _typed(v):
    if isinstance(v, dict):
        return ("dict", tuple((_typed(k), _typed(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_typed(x) for x in v))
    return (type(v).__name__, v)


def _dump_lines():
    out = []
    for base in (ROOT / "fixtures", CORPUS):
        for p in sorted(base.rglob("*")) if base.is_dir() else ():
            if p.is_file() and p.suffix in (".log", ".txt", ""):
                for line in p.read_text(errors="replace").splitlines():
                    if "server_args=" in line or "non-default args:" in line:
                        out.append(line)
    return out


EDGE = [
    "server_args={'a': 1, 'b': -2.5e3, 'c': None, 'd': [1, 'x', (2,)], 'e': {'k': True}, 'f': ()}",
    "server_args={'a': 1_000}",
    "server_args={'a': 0x10}",
    "server_args={'a': 'x' 'y'}",
    "server_args={'a': {1, 2}}",
    "server_args={'a': true, 'b': null}",
    "server_args={'a': 'x\\\\n'}",
    "server_args={'a': 1} trailing",
    "server_args={'a': 1, 'b': 2",
    "server_args=ServerArgs(model_path='m', tp_size=2, dtype=torch.bfloat16)",
    "server_args=ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.8, x=[1, 2], y=None)",
    "non-default args: {'model': 'm', 'tensor_parallel_size': 2, 'max_model_len': 4096}",
    "non-default args: {'model': 'm', 'api_key': '***', 'x': +3, 'y': .5, 'z': 5.}",
    "server_args={'a': -inf}",
    "server_args={'a': b'x'}",
    "server_args={**x}",
    "server_args={'a': ...}",
]


@pytest.mark.parametrize("line", EDGE + _dump_lines())
def test_fast_path_agrees_with_the_grammar(line):
    fn = "parse_server_args" if "server_args=" in line else "parse_py_dict"
    slow = getattr(config_dump, fn)(line)
    fast = getattr(config_fast, fn)(line)
    assert (fast.truncated, fast.form) == (slow.truncated, slow.form)
    assert _typed(fast.values) == _typed(slow.values)


def test_fast_path_is_taken_for_plain_dumps():
    assert config_fast.fast_dict("{'a': 1, 'b': [1, 2]}") == {"a": 1, "b": [1, 2]}
    assert config_fast.fast_repr("ServerArgs(a=1, b='x')") == {"a": 1, "b": "x"}
    assert config_fast.fast_dict("{'a': torch.bfloat16}") is None


def test_remembered_dumps_are_handed_out_as_copies():
    """config.extract_config remembers each dump's parse (the same dump returns for every restart and host); what it
    hands out must still be the caller's own: changing one attempt's config cannot leak into the next one's."""
    from logdoctor.input.read import read_lines
    from logdoctor.timeline.config import extract_config

    lines = [
        "[2026-05-22 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2, "
        "cuda_graph_bs=[1, 2, 4], json_model_override_args={'a': [1]}, kv_cache_dtype=torch.float8_e4m3fn)",
        "INFO 05-22 10:00:00 [core.py:61] Initializing a V1 LLM engine (v0.9.1) with config: model='/m', "
        "dtype=torch.bfloat16, max_seq_len=4096, tensor_parallel_size=2, enforce_eager=False",
    ]
    for line, engine in zip(lines, ("sglang", "vllm")):
        recs = read_lines([line]).records
        first = extract_config(recs, engine, None)
        want = {k: (list(v) if isinstance(v, list) else v) for k, v in first.raw.items()}
        assert want
        for v in first.raw.values():
            if isinstance(v, list):
                v.append("changed")
        first.raw["tp_size"] = 99
        first.raw.clear()
        again = extract_config(recs, engine, None)
        assert again.raw == want and again.raw is not first.raw
