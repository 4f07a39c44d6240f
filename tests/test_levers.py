"""Levers: the table, version-aware flag spelling, reading configs back, and the planner's step arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logdoctor.engines.config_dump import parse_command_line, parse_py_dict, parse_server_args
from logdoctor.engines.levers import (
    LEVERS,
    OPS,
    default_for,
    flag_for,
    lever_for_field,
    levers_from_config,
    render,
    step,
    version_tuple,
)

DESIGN_PAIRS = [  # design.md "Levers" and engines.md section D
    ("mem_fraction", "--mem-fraction-static", "--gpu-memory-utilization"),
    ("context_length", "--context-length", "--max-model-len"),
    ("max_running", "--max-running-requests", "--max-num-seqs"),
    ("prefill_chunk", "--chunked-prefill-size", "--max-num-batched-tokens"),
    ("graph_max_bs", "--cuda-graph-max-bs", "--cuda-graph-sizes"),  # vLLM 0.10: see test_vllm_spellings_by_version
    ("graphs_off", "--disable-cuda-graph", "--enforce-eager"),
    ("tp_size", "--tp-size", "--tensor-parallel-size"),
    ("pp_size", "--pp-size", "--pipeline-parallel-size"),
    ("dp_size", "--dp-size", "--data-parallel-size"),
    ("attention_backend", "--attention-backend", None),  # vLLM 0.10: the env variable only
    ("custom_all_reduce_off", "--disable-custom-all-reduce", "--disable-custom-all-reduce"),
    ("torch_compile", "--enable-torch-compile", "-O0"),  # vLLM compiles by default: the switch turns it off
    ("kv_cache_dtype", "--kv-cache-dtype", "--kv-cache-dtype"),
    ("port", "--port", "--port"),
    ("mamba_ratio", "--mamba-full-memory-ratio", None),
    ("max_mamba_cache", "--max-mamba-cache-size", None),
    ("max_prefill_tokens", "--max-prefill-tokens", None),
    ("max_total_tokens", "--max-total-tokens", None),
    ("nccl_port", "--nccl-port", None),
    ("dist_init_addr", "--dist-init-addr", None),
    ("piecewise_graph_off", "--disable-piecewise-cuda-graph", None),
    ("max_seq_len_to_capture", None, "--max-seq-len-to-capture"),
    ("shm", None, None),
]


@pytest.mark.parametrize("lever, sglang, vllm", DESIGN_PAIRS)
def test_flag_spelling_classic(lever, sglang, vllm):
    assert flag_for(lever, "sglang", "0.5.10") == sglang
    assert flag_for(lever, "vllm", "0.10.0") == vllm


@pytest.mark.parametrize(
    ("lever", "version", "flag"),
    [
        ("graph_max_bs", "0.6.6.post1", None),  # capture sizes stop at --max-num-seqs
        ("graph_max_bs", "0.9.2", "--cuda-graph-sizes"),
        ("graph_max_bs", "0.11.0", "--cuda-graph-sizes"),
        ("graph_max_bs", "0.11.1", "--max-cudagraph-capture-size"),
        ("graph_max_bs", "0.33.0", "--max-cudagraph-capture-size"),
        ("graph_max_bs", None, "--max-cudagraph-capture-size"),  # no version: a current build's
        ("attention_backend", "0.6.6", None),
        ("attention_backend", "0.12.0", None),
        ("attention_backend", "0.13.0", "--attention-backend"),
        ("attention_backend", None, "--attention-backend"),
    ],
)
def test_vllm_spellings_by_version(lever, version, flag):
    """Read off each release's vllm/engine/arg_utils.py (0.6.6.post1, 0.11.0, 0.11.1, 0.12.0, 0.13.0): a fix never
    names a flag the running version does not have (a unit file written with one would not start)."""
    from logdoctor.engines.levers import missing_flag_note

    assert flag_for(lever, "vllm", version) == flag
    note = missing_flag_note(lever, "vllm", version)
    assert (note is None) == (flag is not None or version is None)


def test_table_is_consistent():
    kinds = {"fraction", "float", "int", "bool", "str", "enum"}
    for name, lv in LEVERS.items():
        assert lv.name == name and lv.kind in kinds
        assert lv.sides
        lo, hi = lv.bounds
        assert lo is None or hi is None or lo < hi
        for eng in lv.sides:
            side = lv.side(eng)
            for sp in side.flags if side else ():
                assert sp.flag.startswith("-")
                assert not (sp.switch and sp.values)
    assert LEVERS["mem_fraction"].bounds == (0.05, 0.95)
    with pytest.raises(TypeError):
        LEVERS["x"] = LEVERS["port"]  # type: ignore[index]


def test_sglang_graph_flags_by_version_and_config():
    new_cfg = {"cuda_graph_backend_decode": "full", "cuda_graph_max_bs_decode": None}
    # graphs_off: the classic flag is still accepted in 0.5.17+, so only the config's field switches spelling
    assert flag_for("graphs_off", "sglang", "0.5.23") == "--disable-cuda-graph"
    assert flag_for("graphs_off", "sglang", "0.5.16", new_cfg) == "--disable-cuda-graph"
    assert flag_for("graphs_off", "sglang", "0.5.17", new_cfg) == "--cuda-graph-backend-decode disabled"
    assert flag_for("graphs_off", "sglang", None, new_cfg) == "--cuda-graph-backend-decode disabled"  # field => 0.5.17+
    assert render("graphs_off", "sglang", True, version="0.5.23", config=new_cfg) == [
        "--cuda-graph-backend-decode",
        "disabled",
    ]
    assert render("graphs_off", "sglang", True, version="0.5.10") == ["--disable-cuda-graph"]
    # graph_max_bs / piecewise: renamed outright
    assert flag_for("graph_max_bs", "sglang", "0.5.17") == "--cuda-graph-max-bs-decode"
    assert flag_for("graph_max_bs", "sglang", "0.5.10.post1") == "--cuda-graph-max-bs"
    assert flag_for("graph_max_bs", "sglang", None) == "--cuda-graph-max-bs"
    assert flag_for("graph_max_bs", "sglang", None, new_cfg) == "--cuda-graph-max-bs-decode"
    assert flag_for("piecewise_graph_off", "sglang", "0.5.20") == "--cuda-graph-backend-prefill disabled"
    assert render("piecewise_graph_off", "sglang", False, version="0.5.20") == ["--cuda-graph-backend-prefill", "full"]
    assert render("piecewise_graph_off", "sglang", True, version="0.5.20") == [
        "--cuda-graph-backend-prefill",
        "disabled",
    ]
    assert render("piecewise_graph_off", "sglang", True, version="0.5.10") == ["--disable-piecewise-cuda-graph"]
    assert flag_for("prefill_graph_max", "sglang", "0.5.22") == "--cuda-graph-max-bs-prefill"


def test_render_values_switches_and_gaps():
    assert render("mem_fraction", "sglang", 0.85) == ["--mem-fraction-static", "0.85"]
    assert render("mem_fraction", "vllm", 0.92) == ["--gpu-memory-utilization", "0.92"]
    assert render("context_length", "vllm", 65536) == ["--max-model-len", "65536"]
    assert render("graphs_off", "vllm", True) == ["--enforce-eager"]
    assert render("graphs_off", "vllm", False) == []  # switch off = drop the flag
    assert render("torch_compile", "vllm", False) == ["-O0"]
    assert render("torch_compile", "vllm", True) is None  # vLLM compiles by default: no flag for "on"
    assert render("torch_compile", "sglang", True) == ["--enable-torch-compile"]
    assert render("prefix_cache_off", "vllm", True) == ["--no-enable-prefix-caching"]
    assert render("piecewise_graph_off", "vllm", True) is None
    assert render("dist_init_addr", "vllm", "10.0.0.1:5000") is None
    assert render("shm", "sglang", "16g") is None
    assert render("speculative_algorithm", "vllm", "eagle3", version="0.33.0") == ["--spec-method", "eagle3"]
    assert render("speculative_algorithm", "vllm", "eagle3", version="0.11.0") is None
    assert flag_for("max_seq_len_to_capture", "vllm", "0.33.0") is None
    assert flag_for("mem_fraction", "tgi") is None
    with pytest.raises(ValueError):
        flag_for("no_such_lever", "sglang")


def test_defaults_by_engine_and_version():
    assert default_for("mem_fraction", "vllm", "0.33.0") == 0.92
    assert default_for("mem_fraction", "vllm", "v0.34.1") == 0.92
    assert default_for("mem_fraction", "vllm", "0.11.0") == 0.9
    assert default_for("mem_fraction", "vllm") == 0.92  # unknown version: the latest known
    assert default_for("mem_fraction", "sglang", "0.5.23") is None  # resolved at start-up
    assert default_for("port", "sglang") == 30000 and default_for("port", "vllm") == 8000
    assert default_for("mamba_ratio", "sglang") == 0.9 and default_for("mamba_ratio", "vllm") is None
    assert default_for("graphs_off", "vllm") is False and default_for("tp_size", "sglang") == 1
    assert default_for("torch_compile", "vllm", "0.6.3") is False and default_for("torch_compile", "vllm") is True
    assert default_for("prefill_graph_max", "sglang", "0.5.10") is None
    assert default_for("prefill_graph_max", "sglang", "0.5.17") == 2048


def test_version_tuple():
    assert version_tuple("0.5.10.post1") == (0, 5, 10, 0)
    assert version_tuple("v0.33") == version_tuple("0.33.0")
    assert version_tuple("0.6.3.dev12+g1234") == (0, 6, 3, 0)
    assert version_tuple(None) is None and version_tuple("unknown") is None
    assert version_tuple(">=0.5.23") == (0, 5, 23, 0) and version_tuple("==0.11.0") == (0, 11, 0, 0)
    assert version_tuple("0.5.16.post3") < version_tuple("<0.5.17") < version_tuple("0.5.17")
    assert flag_for("graph_max_bs", "sglang", "<0.5.17") == "--cuda-graph-max-bs"
    assert flag_for("graph_max_bs", "sglang", ">=0.5.23") == "--cuda-graph-max-bs-decode"


def test_lever_for_field():
    assert lever_for_field("vllm", "gpu_memory_utilization") == "mem_fraction"
    assert lever_for_field("vllm", "--gpu-memory-utilization") == "mem_fraction"
    assert lever_for_field("vllm", "max_seq_len") == "context_length"  # engine-config line spelling
    assert lever_for_field("vllm", "compilation_config.mode") == "torch_compile"
    assert lever_for_field("vllm", "-O") == "torch_compile"
    assert lever_for_field("vllm", "enforce_eager") == "graphs_off"
    assert lever_for_field("sglang", "tensor_parallel_size") == "tp_size"  # SGLang's CLI alias
    assert lever_for_field("sglang", "cuda_graph_max_bs_decode") == "graph_max_bs"
    assert lever_for_field("sglang", "cuda_graph_backend_decode") == "graphs_off"
    assert lever_for_field("sglang", "gpu_memory_utilization") is None
    assert lever_for_field("sglang", "model_path") is None


def test_levers_from_sglang_dict_dump():
    d = parse_server_args(
        "server_args={'model_path': '/m', 'context_length': None, 'mem_fraction_static': 0.7, 'tp_size': 2, "
        "'cuda_graph_max_bs_decode': None, 'cuda_graph_backend_decode': 'disabled', 'disable_cuda_graph': False, "
        "'cuda_graph_backend_prefill': 'full', 'mamba_full_memory_ratio': 0.9, 'port': 30000}"
    )
    lv = levers_from_config("sglang", "0.5.23", d.values)
    assert lv == {
        "mem_fraction": 0.7,
        "context_length": None,
        "tp_size": 2,
        "graph_max_bs": None,
        "graphs_off": True,
        "piecewise_graph_off": False,
        "mamba_ratio": 0.9,
        "port": 30000,
    }


def test_levers_from_vllm_non_default_fills_defaults_only_when_asked():
    d = parse_py_dict(
        "non-default args: {'model': 'm', 'tensor_parallel_size': 2, 'max_model_len': 32768, "
        "'enforce_eager': True, 'speculative_config': {'method': 'eagle3'}, "
        "'enable_prefix_caching': False}"
    )
    bare = levers_from_config("vllm", "0.33.0", d.values)
    assert bare == {
        "context_length": 32768,
        "graphs_off": True,
        "tp_size": 2,
        "prefix_cache_off": True,
        "speculative_algorithm": "eagle3",
    }
    full = levers_from_config("vllm", "0.33.0", d.values, fill_defaults=True)
    assert full["mem_fraction"] == 0.92 and full["port"] == 8000 and full["graphs_off"] is True
    assert "max_running" not in full  # GPU-dependent default: unknown, not guessed
    assert levers_from_config("vllm", "0.10.0", d.values, fill_defaults=True)["mem_fraction"] == 0.9


def test_levers_from_vllm_engine_config_fields():
    raw = {
        "max_seq_len": 4096,
        "enforce_eager": False,
        "tensor_parallel_size": 4,
        "compilation_config": {"level": None, "mode": 3, "cudagraph_mode": "NONE", "max_cudagraph_capture_size": 512},
        "speculative_config": "SpeculativeConfig(method='ngram', num_spec_tokens=3)",
    }
    lv = levers_from_config("vllm", "0.33.0", raw)
    assert lv["context_length"] == 4096 and lv["graph_max_bs"] == 512 and lv["torch_compile"] is True
    assert lv["graphs_off"] is True  # cudagraph_mode NONE is graphs off even without --enforce-eager
    assert lv["speculative_algorithm"] == "ngram"
    assert levers_from_config("vllm", None, {"optimization_level": 0})["torch_compile"] is False


def test_levers_from_command_line():
    c = parse_command_line(
        "python -m sglang.launch_server --model-path m --tp 2 --mem-fraction-static 0.88 "
        "--disable-cuda-graph --context-length 131072"
    )
    lv = levers_from_config(c.engine, None, c.args)
    assert lv == {"mem_fraction": 0.88, "context_length": 131072, "graphs_off": True, "tp_size": 2}
    lv = levers_from_config("sglang", None, {"mem-fraction-static": "0.8", "tp_size": "4"})
    assert lv == {"mem_fraction": 0.8, "tp_size": 4}
    assert levers_from_config("tgi", None, {"port": 1}) == {}


# --------------------------------------------------------------------------------------------------------------------
# step


@pytest.mark.parametrize(
    "lever, current, op, kw, expected",
    [
        ("mem_fraction", 0.88, "raise", {}, 0.92),
        ("mem_fraction", 0.93, "raise", {}, 0.95),  # capped at the lever's bound
        ("mem_fraction", 0.95, "raise", {}, None),  # nowhere to go
        ("mem_fraction", 0.97, "raise", {}, None),  # above the cap: a "raise" never lowers
        ("mem_fraction", 0.88, "raise", {"avoid": [0.92]}, 0.95),
        ("mem_fraction", 0.88, "raise", {"bound": 0.9}, 0.9),
        ("mem_fraction", 0.9, "lower", {}, 0.85),
        ("mem_fraction", 0.9, "lower", {"avoid": [0.85, 0.8]}, 0.75),
        ("mem_fraction", 0.07, "lower", {}, 0.05),
        ("mem_fraction", 0.05, "lower", {}, None),
        ("mem_fraction", None, "raise", {}, None),  # auto: no base to step from
        ("context_length", 131072, "halve", {}, 65536),
        ("context_length", 100000, "halve", {}, 49152),  # large values: multiples of 1024
        ("context_length", 3000, "halve", {}, 1500),
        ("context_length", 32768, "halve", {"bound": 32768}, None),
        ("context_length", 131072, "halve", {"avoid": [65536]}, 32768),
        ("context_length", 8192, "double", {}, 16384),
        ("max_running", 3, "halve", {}, 1),
        ("max_running", 1, "halve", {}, None),  # floor at 1
        ("max_running", 256, "lower", {}, 128),
        ("graph_max_bs", 160, "halve", {}, 80),
        ("graph_max_bs", 16, "lower", {}, 8),  # pow2 levers step by powers of two
        ("graph_max_bs", 24, "lower", {}, 16),
        ("tp_size", 2, "raise", {}, 4),
        ("tp_size", 3, "raise", {}, 4),
        ("tp_size", 8, "raise", {"bound": 8}, None),
        ("tp_size", 4, "lower", {}, 2),
        ("prefill_chunk", 8192, "halve", {}, 4096),
        ("prefill_chunk", -1, "halve", {}, None),  # -1 = chunking disabled
        ("port", 30000, "raise", {"avoid": [30001]}, 30002),
        ("port", 65535, "raise", {}, None),
        ("mamba_ratio", 0.9, "raise", {}, 1.35),
        ("mamba_ratio", 0.9, "lower", {}, 0.6),
        ("graphs_off", False, "enable", {}, True),
        ("graphs_off", True, "enable", {}, None),  # already in force
        ("graphs_off", None, "disable", {}, False),
        ("custom_all_reduce_off", False, "enable", {"avoid": [True]}, None),
        ("attention_backend", "flashinfer", "set", {"value": "triton"}, "triton"),
        ("attention_backend", "flashinfer", "set", {"value": "FLASHINFER"}, None),
        ("attention_backend", "fa3", "set", {"value": "triton", "avoid": ["Triton"]}, None),
        ("attention_backend", "fa3", "raise", {}, None),
        ("mem_fraction", 0.9, "set", {"value": 0.99}, None),  # outside the bounds
        ("mem_fraction", 0.9, "set", {"value": "0.8"}, 0.8),
    ],
)
def test_step(lever, current, op, kw, expected):
    got = step(lever, current, op, **kw)
    assert got == expected
    assert type(got) is type(expected)


def test_step_rejects_unknown_names():
    with pytest.raises(ValueError):
        step("mem_fraction", 0.9, "sideways")
    with pytest.raises(ValueError):
        step("nope", 1, "raise")
    with pytest.raises(ValueError):
        step("mem_fraction", 0.9, "enable")


@settings(max_examples=300, deadline=None)
@given(
    lever=st.sampled_from([n for n, lv in LEVERS.items() if lv.kind in ("int", "fraction", "float")]),
    current=st.one_of(st.integers(-4, 300000), st.floats(-1, 2, allow_nan=False)),
    op=st.sampled_from(["raise", "lower", "halve", "double"]),
    avoid=st.lists(st.integers(1, 300000), max_size=4),
)
def test_step_never_repeats_and_respects_bounds_and_direction(lever, current, op, avoid):
    got = step(lever, current, op, avoid=avoid)
    if got is None:
        return
    lv = LEVERS[lever]
    lo, hi = lv.bounds
    assert got != current and got not in avoid
    assert (lo is None or got >= lo) and (hi is None or got <= hi)
    assert (got > current) if op in ("raise", "double") else (got < current)
    assert isinstance(got, int) if lv.kind == "int" else isinstance(got, float)


def test_ops_are_the_vocabulary_ops():
    from logdoctor.core import vocab

    assert OPS is vocab.OPS and set(OPS) == set(vocab.FIX_OPS)


def test_spellings_come_from_the_engine_modules():
    from logdoctor.engines import ENGINES as REG

    for e in REG.values():
        for lever, side in e.lever_sides.items():
            assert LEVERS[lever].side(e.name) is side
    assert set(LEVERS["graphs_off"].sides) == {"sglang", "vllm"}
    assert "vllm" not in LEVERS["watchdog_timeout"].sides
