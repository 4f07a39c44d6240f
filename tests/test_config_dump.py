"""Config dumps and command lines: the damaged shapes real logs and unit files arrive in."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logdoctor.engines.config_dump import (
    CommandLine,
    ConfigDump,
    parse_command_line,
    parse_literal,
    parse_namespace,
    parse_py_dict,
    parse_server_args,
    parse_vllm_engine_config,
)

CLASSIC = (
    "[2025-05-22 10:00:01] server_args=ServerArgs(model_path='/m', tp_size=2, "
    "json_model_override_args='{\"a\": 1}', cuda_graph_bs=[1, 2, 4], speculative_config=None, "
    "lora_paths={'a': '/x'}, mem_fraction_static=0.88, rms_eps=1e-05, cap=inf, dtype=torch.bfloat16, "
    "load_format=<LoadFormat.AUTO: 'auto'>, obj=SomeClass(a=1, b='x, y'), one=(1,), api_key='it\\'s \"q\", ok', "
    "chunked_prefill_size=-1, disable_cuda_graph=False, fn=<function f at 0x7f>)"
)
CLASSIC_VALUES = {
    "model_path": "/m",
    "tp_size": 2,
    "json_model_override_args": '{"a": 1}',
    "cuda_graph_bs": [1, 2, 4],
    "speculative_config": None,
    "lora_paths": {"a": "/x"},
    "mem_fraction_static": 0.88,
    "rms_eps": 1e-05,
    "cap": math.inf,
    "dtype": "torch.bfloat16",
    "load_format": "<LoadFormat.AUTO: 'auto'>",
    "obj": "SomeClass(a=1, b='x, y')",
    "one": (1,),
    "api_key": 'it\'s "q", ok',
    "chunked_prefill_size": -1,
    "disable_cuda_graph": False,
    "fn": "<function f at 0x7f>",
}


def _cut_after(text: str, marker: str) -> str:
    return text[: text.index(marker) + len(marker)]


# --------------------------------------------------------------------------------------------------------------------
# SGLang server_args


def test_classic_repr_all_value_kinds():
    d = parse_server_args(CLASSIC)
    assert d == ConfigDump(CLASSIC_VALUES, truncated=False, form="serverargs-repr")
    assert type(d.values["tp_size"]) is int and type(d.values["one"]) is tuple


@pytest.mark.parametrize(
    "cut, keys",
    [
        ("tp_size=", ["model_path"]),  # mid key=value, no value yet
        ("json_model_override_args='{\"a", ["model_path", "tp_size"]),  # mid-string (quote inside)
        ("cuda_graph_bs=[1, 2,", ["model_path", "tp_size", "json_model_override_args"]),  # mid-list
        ("lora_paths={'a': '/", list(CLASSIC_VALUES)[:5]),  # mid nested dict
        ("mem_fraction_static=0.8", list(CLASSIC_VALUES)[:6]),  # mid-number: 0.8 is not 0.88
        ("api_key='it\\'s \"q\", o", list(CLASSIC_VALUES)[:13]),  # comma inside a cut string
        ("obj=SomeClass(a=1, b='x", list(CLASSIC_VALUES)[:11]),  # mid raw object
        ("fn=<function f at 0x7f>", list(CLASSIC_VALUES)[:16]),  # value whole, closing ) lost
    ],
)
def test_truncated_classic_keeps_complete_pairs(cut, keys):
    d = parse_server_args(_cut_after(CLASSIC, cut))
    assert d.truncated
    assert list(d.values) == keys
    assert all(d.values[k] == CLASSIC_VALUES[k] for k in keys)


def test_truncated_right_after_comma():
    d = parse_server_args(_cut_after(CLASSIC, "tp_size=2,"))
    assert d == ConfigDump({"model_path": "/m", "tp_size": 2}, True, "serverargs-repr")


def test_dict_form_0_5_23_nested():
    line = (
        "[2026-01-02 03:04:05 TP0] server_args={'model_path': '/models/GLM-4.5-Air-FP8', 'context_length': 65536, "
        "'mem_fraction_static': 0.7, 'max_running_requests': None, 'json_model_override_args': '{}', "
        "'cuda_graph_backend_decode': 'full', 'lora': {'paths': [1, {'b': None}], 'ok': True}, 'tp_size': 2}"
    )
    d = parse_server_args(line)
    assert d.form == "dict" and not d.truncated
    assert d.values["lora"] == {"paths": [1, {"b": None}], "ok": True}
    assert d.values["max_running_requests"] is None and d.values["tp_size"] == 2
    cut = parse_server_args(_cut_after(line, "'lora': {'paths': [1, {'b"))
    assert cut.truncated and list(cut.values)[-1] == "cuda_graph_backend_decode"


def test_elided_fields_are_skipped():
    d = parse_server_args("server_args=ServerArgs(model_path='/m', tp_size=2, ...)")
    assert d == ConfigDump({"model_path": "/m", "tp_size": 2}, False, "serverargs-repr")


def test_no_dump_found():
    assert parse_server_args("Load weight begin. avail mem=70.1 GB") == ConfigDump({}, True, "serverargs-repr")
    assert parse_py_dict("") == ConfigDump({}, True, "dict")
    assert parse_namespace("nothing") == ConfigDump({}, True, "namespace")


# --------------------------------------------------------------------------------------------------------------------
# vLLM


def test_vllm_non_default_args_with_secrets_and_nested():
    line = (
        "(APIServer pid=1) INFO 05-22 08:00:00 [utils.py:253] non-default args: {'model': 'Qwen/Qwen3-8B', "
        "'tensor_parallel_size': 2, 'speculative_config': {'method': 'eagle3', 'model': 'x', "
        "'num_speculative_tokens': 3}, 'api_key': '***', 'served_model_name': ['q3']}"
    )
    d = parse_py_dict(line)
    assert d == ConfigDump(
        {
            "model": "Qwen/Qwen3-8B",
            "tensor_parallel_size": 2,
            "speculative_config": {"method": "eagle3", "model": "x", "num_speculative_tokens": 3},
            "api_key": "***",
            "served_model_name": ["q3"],
        },
        False,
        "dict",
    )
    cut = parse_py_dict(_cut_after(line, "'model': 'x', 'num_spec"))
    assert cut.truncated and list(cut.values) == ["model", "tensor_parallel_size"]


def test_namespace():
    d = parse_namespace(
        "INFO api_server.py:1 args: Namespace(host='0.0.0.0', port=8000, tokenizer=None, "
        "config_format=<ConfigFormat.AUTO: 'auto'>, tensor_parallel_size=2, "
        "gpu_memory_utilization=0.9)"
    )
    assert d.form == "namespace" and not d.truncated
    assert d.values["config_format"] == "<ConfigFormat.AUTO: 'auto'>"
    assert d.values["gpu_memory_utilization"] == 0.9 and d.values["tokenizer"] is None


ENGINE_LINE = (
    "(EngineCore_DP0 pid=4583) INFO 05-22 08:31:43 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: "
    "model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', skip_tokenizer_init=False, "
    "tokenizer_mode=auto, dtype=torch.bfloat16, max_seq_len=32768, served_model_name=Qwen/Qwen3-8B-v2, "
    "decoding_config=DecodingConfig(backend='auto', disable_fallback=False), "
    'compilation_config={"level":3,"cudagraph_capture_sizes":[512,504],"use_inductor":true,"x":null}'
)


def test_vllm_engine_config_kv_list():
    d = parse_vllm_engine_config(ENGINE_LINE)
    assert d.form == "kv-list" and not d.truncated
    assert d.values["tokenizer_mode"] == "auto" and d.values["dtype"] == "torch.bfloat16"
    assert d.values["served_model_name"] == "Qwen/Qwen3-8B-v2" and d.values["max_seq_len"] == 32768
    assert d.values["decoding_config"] == "DecodingConfig(backend='auto', disable_fallback=False)"
    assert d.values["compilation_config"] == {
        "level": 3,
        "cudagraph_capture_sizes": [512, 504],
        "use_inductor": True,
        "x": None,
    }


def test_vllm_engine_config_python_dict_and_elision():
    d = parse_vllm_engine_config("with config: model='m', compilation_config={'level': None, 'mode': 3}")
    assert d.values == {"model": "m", "compilation_config": {"level": None, "mode": 3}}
    d = parse_vllm_engine_config(
        "Dumping input data for V1 LLM engine (v0.33.0) with config: model='Qwen/Qwen3-14B', "
        "..., kv_cache_dtype=fp8, ..."
    )
    assert d == ConfigDump({"model": "Qwen/Qwen3-14B", "kv_cache_dtype": "fp8"}, False, "kv-list")


def test_vllm_engine_config_cut():
    d = parse_vllm_engine_config(_cut_after(ENGINE_LINE, 'compilation_config={"level":3,"cuda'))
    assert d.truncated and "compilation_config" not in d.values and d.values["tokenizer_mode"] == "auto"
    d = parse_vllm_engine_config(_cut_after(ENGINE_LINE, "skip_tokenizer_init=False, tokenizer_mo"))
    assert d.truncated and list(d.values)[-1] == "skip_tokenizer_init"


# --------------------------------------------------------------------------------------------------------------------
# properties

_RAW = ["torch.bfloat16", "<Enum.X: 1>", "SomeClass(a=1, b='x, y')", "<function f at 0x7f>", "device(type='cuda')"]


class _RawObj:
    """An object whose repr is not a literal; the parser keeps that text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.floats(allow_nan=False), st.text(max_size=12)
)
_values = st.recursive(
    st.one_of(_scalars, st.sampled_from(_RAW).map(_RawObj)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(-5, 5)), inner, max_size=3),
    ),
    max_leaves=8,
)
_fields = st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True), _values, min_size=1, max_size=8)


def _expected(v: object) -> object:
    if isinstance(v, _RawObj):
        return v.text
    if isinstance(v, list):
        return [_expected(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_expected(x) for x in v)
    if isinstance(v, dict):
        return {k: _expected(x) for k, x in v.items()}
    return v


_FORMS = {
    "serverargs-repr": (
        lambda f: "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in f.items()) + ")",
        parse_server_args,
    ),
    "dict": (lambda f: "server_args=" + repr(f), parse_server_args),
    "namespace": (lambda f: "Namespace(" + ", ".join(f"{k}={v!r}" for k, v in f.items()) + ")", parse_namespace),
    "kv-list": (lambda f: "with config: " + ", ".join(f"{k}={v!r}" for k, v in f.items()), parse_vllm_engine_config),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_fields, form=st.sampled_from(sorted(_FORMS)), data=st.data())
def test_any_prefix_parses_to_a_consistent_subset(fields, form, data):
    render, parse = _FORMS[form]
    text = render(fields)
    full = parse(text)
    assert full.values == _expected(fields)
    assert not full.truncated
    cut = data.draw(st.integers(0, len(text)), label="cut")
    part = parse(text[:cut])
    keys = list(part.values)
    assert keys == list(full.values)[: len(keys)]  # an in-order prefix of the keys
    for k in keys[:-1]:
        assert part.values[k] == full.values[k]
    if form != "kv-list":  # bracketed forms: even the last pair is only kept when provably whole
        assert all(part.values[k] == full.values[k] for k in keys)
        assert part.truncated == (cut < len(text))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_garbage_never_raises(text):
    for fn in (parse_server_args, parse_py_dict, parse_namespace, parse_vllm_engine_config):
        assert isinstance(fn(text), ConfigDump)
        assert isinstance(fn("server_args=ServerArgs(" + text), ConfigDump)
    assert isinstance(parse_command_line(text), CommandLine)


def test_deep_nesting_does_not_crash():
    assert parse_server_args("server_args={'a': " + "[" * 3000).truncated


def test_parse_literal():
    assert parse_literal("{'a': [1, (2,)], 'b': None}") == {"a": [1, (2,)], "b": None}
    with pytest.raises(ValueError):
        parse_literal("{'a': ")


# --------------------------------------------------------------------------------------------------------------------
# command lines


def test_sglang_module_eq_and_space_forms_and_switches():
    c = parse_command_line(
        "python -m sglang.launch_server --model-path X --tp 2 --mem-fraction-static=0.88 "
        "--disable-cuda-graph --speculative-algorithm DFLASH --enable-torch-compile"
    )
    assert (c.program, c.module, c.engine) == ("python", "sglang.launch_server", "sglang")
    assert c.args == {
        "model_path": "X",
        "tp_size": 2,
        "mem_fraction_static": 0.88,
        "disable_cuda_graph": True,
        "speculative_algorithm": "DFLASH",
        "enable_torch_compile": True,
    }


def test_vllm_serve_aliases_repeats_and_positionals():
    c = parse_command_line(
        "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 -tp 4 --enforce-eager "
        "--max-model-len 8192 --max-model-len=4096 --no-enable-prefix-caching -O0"
    )
    assert c.engine == "vllm" and c.program == "vllm" and c.positionals == ["serve", "Qwen/Qwen3-8B"]
    assert c.args == {
        "tensor_parallel_size": 4,
        "enforce_eager": True,
        "max_model_len": 4096,
        "enable_prefix_caching": False,
        "optimization_level": 0,
    }


def test_vllm_switch_before_positional_and_json_config():
    c = parse_command_line(
        "python3 -m vllm.entrypoints.openai.api_server --enforce-eager --model m "
        '--speculative-config \'{"method": "eagle3", "num_speculative_tokens": 3}\' '
        "--enable-chunked-prefill false -cc.cudagraph_mode=NONE"
    )
    assert c.module == "vllm.entrypoints.openai.api_server" and c.engine == "vllm"
    assert c.args["speculative_config"] == {"method": "eagle3", "num_speculative_tokens": 3}
    assert c.args["enforce_eager"] is True and c.args["enable_chunked_prefill"] is False
    assert c.args["compilation_config"] == {"cudagraph_mode": "NONE"}
    c = parse_command_line("vllm serve --enforce-eager MODEL")
    assert c.args == {"enforce_eager": True} and c.positionals == ["serve", "MODEL"]


def test_negative_numbers_and_nargs_lists():
    c = parse_command_line(
        "python -m sglang.launch_server --chunked-prefill-size -1 --cuda-graph-bs 1 2 4 8 --disable-radix-cache"
    )
    assert c.args == {"chunked_prefill_size": -1, "cuda_graph_bs": [1, 2, 4, 8], "disable_radix_cache": True}


UNIT = """[Unit]
Description=SGLang
[Service]
Environment="CUDA_VISIBLE_DEVICES=0,1" "NCCL_DEBUG=INFO"
Environment=HF_HOME=/data/hf
ExecStart=/opt/sglang/.venv/bin/python -m sglang.launch_server \\
    --model-path /models/Qwen3 \\
    --tp 2 \\
    --json-model-override-args '{"rope_scaling": {"type": "yarn", "factor": 4.0}}' \\
    --mem-fraction-static 0.85
Restart=on-failure
"""


def test_unit_file_exec_start_with_continuations_and_environment():
    c = parse_command_line(UNIT)
    assert c.program == "/opt/sglang/.venv/bin/python" and c.engine == "sglang"
    assert c.env == {"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO", "HF_HOME": "/data/hf"}
    assert c.args == {
        "model_path": "/models/Qwen3",
        "tp_size": 2,
        "mem_fraction_static": 0.85,
        "json_model_override_args": {"rope_scaling": {"type": "yarn", "factor": 4.0}},
    }
    one_line = next(ln for ln in UNIT.replace("\\\n", " ").splitlines() if ln.startswith("ExecStart="))
    joined = parse_command_line("pasted: " + one_line)
    assert joined.args == c.args and joined.env == {}


def test_docker_run():
    c = parse_command_line(
        "docker run --gpus all -e NCCL_P2P_DISABLE=1 --env=HF_TOKEN=x --shm-size 16g --rm -it "
        "-p 30000:30000 -v /m:/m lmsysorg/sglang:latest python3 -m sglang.launch_server "
        "--model-path /m --tp 2"
    )
    assert c.env == {"NCCL_P2P_DISABLE": "1", "HF_TOKEN": "x"}
    assert c.launcher["shm_size"] == "16g" and c.launcher["gpus"] == "all"
    assert c.launcher["image"] == "lmsysorg/sglang:latest" and c.launcher["volume"] == ["/m:/m"]
    assert (c.program, c.module, c.engine) == ("python3", "sglang.launch_server", "sglang")
    assert c.args == {"model_path": "/m", "tp_size": 2}


def test_docker_image_entrypoint():
    c = parse_command_line(
        "docker run --runtime nvidia --gpus all --ipc=host vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-8B -tp 2"
    )
    assert c.program is None and c.engine == "vllm" and c.launcher["ipc"] == "host"
    assert c.args == {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": 2}


def test_env_prefixes_shell_wrappers_and_pasted_prefixes():
    c = parse_command_line("env CUDA_VISIBLE_DEVICES=0,1 A=b python -u -m sglang.launch_server --port 30001")
    assert c.env == {"CUDA_VISIBLE_DEVICES": "0,1", "A": "b"} and c.args == {"port": 30001}
    c = parse_command_line("CUDA_VISIBLE_DEVICES=0 HF_HOME=/x python -m sglang.launch_server --model /m")
    assert c.env == {"CUDA_VISIBLE_DEVICES": "0", "HF_HOME": "/x"} and c.args == {"model_path": "/m"}
    c = parse_command_line(
        "bash -c 'cd /opt && exec python -m vllm.entrypoints.openai.api_server --model m' 2>&1 | tee /tmp/log"
    )
    assert c.module == "vllm.entrypoints.openai.api_server" and c.args == {"model": "m"}
    c = parse_command_line(
        "May 22 10:00:00 gpu-node-4 python3[19034]: python -m sglang.launch_server "
        "--model-path m --port=30000 --host=\"0.0.0.0\" --api-key='<redacted>'"
    )
    assert c.program == "python" and c.args == {
        "model_path": "m",
        "port": 30000,
        "host": "0.0.0.0",
        "api_key": "<redacted>",
    }
    c = parse_command_line("+ exec python -m sglang.launch_server --model-path m")
    assert c.module == "sglang.launch_server"
    c = parse_command_line(
        "export CUDA_VISIBLE_DEVICES=1; cd /opt/sglang && /opt/venv/bin/python -m "
        "vllm.entrypoints.openai.api_server --model m > /var/log/x 2>&1 &"
    )
    assert (c.engine, c.env, c.args) == ("vllm", {"CUDA_VISIBLE_DEVICES": "1"}, {"model": "m"})
    c = parse_command_line("sudo -E env A=1 nohup python3 -m sglang.launch_server --tp 2")
    assert (c.program, c.env, c.args) == ("python3", {"A": "1"}, {"tp_size": 2})


def test_command_line_fragments_never_raise():
    assert parse_command_line("") == CommandLine(None, None, {}, {}, [], None, {})
    c = parse_command_line("python -m sglang.launch_server --model-path 'unterminated")
    assert c.args == {"model_path": "unterminated"}
    c = parse_command_line("--model-path X --tp 2")  # engine from the flags themselves
    assert c.engine == "sglang" and c.args == {"model_path": "X", "tp_size": 2}
    assert parse_command_line("python -m sglang.launch_server --tp 2", engine="vllm").args == {
        "tensor_parallel_size": 2
    }
