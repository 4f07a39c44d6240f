"""`logdoctor preflight` as users run it: the CLI as a subprocess on real unit files, model configs, nvidia-smi XML
and kernel logs (tests/data/preflight/); the budget's arithmetic on known shapes; exit codes 0/1/3/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "preflight"
MODELS = DATA / "models"
SEED = DATA / "seed"
H200 = "143771MiB"
H100 = "81559MiB"


def pf(*args, history: Path | None = None) -> subprocess.CompletedProcess:
    hist = ["--history", str(history)] if history else ["--no-history"]
    argv = [str(a) for a in args]
    if "--" in argv:
        i = argv.index("--")
        argv = argv[:i] + hist + argv[i:]
    else:
        argv += hist
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", "preflight", *argv], capture_output=True, text=True, timeout=120
    )


def js(p: subprocess.CompletedProcess) -> dict:
    return json.loads(p.stdout)


SGLANG = ["python3", "-m", "sglang.launch_server", "--model-path", "/models/m"]


# ------------------------------------------------------------------------------------------------------------------
# the seed story


def test_seed_attempt1_command_budget_is_shown_with_derivations():
    """Attempt 1 of the seed story on its own host: the hybrid model's budget (linear-attention state, speculative
    state, full-attention KV) is printed line by line with how each number was obtained."""
    p = pf(
        SEED / "sglang-qwen.service",
        "--model-config",
        MODELS / "Qwen3-Next-80B-A3B-Instruct",
        "--nvidia-smi-xml",
        SEED / "h200-qwen-03.xml",
        "--no-kernel-log",
    )
    assert p.returncode in (0, 1, 3), p.stderr
    for key in (
        "avail_before_load",
        "weights",
        "pool_memory",
        "linear_state_per_request",
        "speculative_state",
        "state_slots",
        "kv_bytes_per_token",
        "pool_tokens",
        "cuda_graphs",
    ):
        assert f"  {key} " in p.stdout
    assert "12 full-attention layers x 1 KV heads/GPU x (K 256 + V 256) x 2 B" in p.stdout
    assert "does not guarantee fitting the longest prompt under load" in p.stdout


def test_seed_host_with_its_kernel_log_is_no_go_hardware_fault():
    p = pf(
        SEED / "sglang-qwen.service",
        "--model-config",
        MODELS / "Qwen3-Next-80B-A3B-Instruct",
        "--nvidia-smi-xml",
        SEED / "h200-qwen-03.xml",
        "--kernel-log",
        SEED / "kernel.log",
        "--format",
        "json",
    )
    assert p.returncode == 1, p.stderr
    d = js(p)
    assert (d["verdict"], d["cause"]) == ("no-go", "hardware_fault")
    assert any("Xid (PCI:0000:ab:00): 79" in e["text"] for e in d["evidence"])
    assert any("deploy elsewhere" in n for n in d["notes"])
    assert d["fixes"] == []


def test_xid_on_a_gpu_the_command_does_not_use_is_not_held_against_it(tmp_path):
    """The Xid is on bus ab (GPU 1): a TP1 command pinned to GPU 0 (bus 18) on the same host is not blamed."""
    unit = tmp_path / "one.service"
    unit.write_text(
        "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0\nExecStart=python3 -m sglang.launch_server "
        "--model-path /models/m --context-length 32768\n"
    )
    p = pf(
        unit,
        "--model-config",
        MODELS / "Llama-3.1-8B-Instruct",
        "--nvidia-smi-xml",
        SEED / "h200-qwen-03.xml",
        "--kernel-log",
        SEED / "kernel.log",
        "--format",
        "json",
    )
    assert js(p)["cause"] != "hardware_fault", p.stdout


# ------------------------------------------------------------------------------------------------------------------
# SGLang budget


def test_sglang_pool_that_cannot_exist_is_no_go_with_the_tp_that_fits():
    p = pf(
        "--model-config",
        MODELS / "Llama-3.3-70B-Instruct",
        "--gpu-memory",
        H100,
        "--gpus",
        4,
        "--no-kernel-log",
        "--format",
        "json",
        "--",
        *SGLANG,
        "--tp",
        "2",
        "--mem-fraction-static",
        "0.8",
        "--context-length",
        "131072",
    )
    assert p.returncode == 1
    d = js(p)
    assert (d["verdict"], d["cause"], d["phase"]) == ("no-go", "kv_cache_oom", "memory_pool")
    assert d["budget"]["per_gpu"]["pool_memory"] < 0
    assert {"lever": "tp_size", "flag": "--tp-size", "from": 2, "to": 4} == {
        k: d["fixes"][0][k] for k in ("lever", "flag", "from", "to")
    }


def test_sglang_static_fraction_sized_from_the_shortfall():
    """Llama-3.1-8B at 0.6 on an L40S holds fewer tokens than one 131072 request: the fix is the smallest
    fraction that holds it, and that fraction passes the same budget while 0.01 less does not."""
    args = [
        "--model-config",
        MODELS / "Llama-3.1-8B-Instruct",
        "--gpu-memory",
        "46068MiB",
        "--gpus",
        1,
        "--no-kernel-log",
        "--format",
        "json",
        "--",
    ]
    cmd = [*SGLANG, "--context-length", "131072"]
    d = js(pf(*args, *cmd, "--mem-fraction-static", "0.6"))
    assert d["verdict"] == "risky" and d["cause"] == "kv_cache_oom"
    fix = d["fixes"][0]
    assert fix["lever"] == "mem_fraction" and fix["flag"] == "--mem-fraction-static"
    assert fix["from"] == 0.6 and 0.6 < fix["to"] <= 0.95
    ok = js(pf(*args, *cmd, "--mem-fraction-static", str(fix["to"])))
    below = js(pf(*args, *cmd, "--mem-fraction-static", f"{fix['to'] - 0.01:.2f}"))
    assert ok["budget"]["per_gpu"]["pool_tokens"] >= 131072 > below["budget"]["per_gpu"]["pool_tokens"]


def test_sglang_pool_matches_the_recorded_h200_start():
    """fixtures/journals/gpu-real/healthy (recorded on an H200): Llama-3.1-8B at 0.88 -> 876,990 tokens."""
    d = js(
        pf(
            "--model-config",
            MODELS / "Llama-3.1-8B-Instruct",
            "--gpu-memory",
            H200,
            "--gpus",
            1,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            *SGLANG,
            "--mem-fraction-static",
            "0.88",
        )
    )
    per = d["budget"]["per_gpu"]
    assert abs(per["weights"] - 14.96) / 14.96 < 0.02
    assert abs(per["pool_tokens"] - 876990) / 876990 < 0.05
    assert d["verdict"] == "go"


def test_hybrid_model_kv_counts_only_full_attention_layers():
    from logdoctor.preflight import model as mdl

    spec, _ = mdl.load(MODELS / "Qwen3-Next-80B-A3B-Instruct")
    assert (spec.full_attention_layers, spec.linear_layers) == (12, 36)
    # 12 layers x 2 KV heads / TP2 x (256 + 256) x 2 bytes
    assert spec.kv_bytes_per_token(2, 2) == 12 * 1 * 512 * 2
    # conv (16*128*2 + 32*128 = 8192)/2 x 3 x 2 B + SSM 16 x 128 x 128 x 4 B, per linear layer
    assert spec.linear_state_bytes(2) == 36 * (4096 * 3 * 2 + 16 * 128 * 128 * 4)


def test_mla_kv_is_one_latent_per_layer_not_split_by_tp():
    from logdoctor.preflight import model as mdl

    spec, _ = mdl.load(MODELS / "DeepSeek-V3-0324")
    assert spec.kv_bytes_per_token(8, 2) == spec.kv_bytes_per_token(1, 2) == 61 * (512 + 64) * 2


# ------------------------------------------------------------------------------------------------------------------
# vLLM budget


def test_vllm_max_model_len_that_does_not_fit_is_no_go_with_sized_fixes():
    p = pf(
        "--model-config",
        MODELS / "Llama-3.3-70B-Instruct",
        "--gpu-memory",
        "81920MiB",
        "--gpus",
        2,
        "--no-kernel-log",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.3-70B-Instruct",
        "-tp",
        "2",
        "--max-model-len",
        "131072",
    )
    assert p.returncode == 1
    d = js(p)
    assert (d["cause"], d["phase"]) == ("kv_cache_oom", "memory_pool")
    by = {f["lever"]: f for f in d["fixes"]}
    assert by["context_length"]["flag"] == "--max-model-len" and 1024 <= by["context_length"]["to"] < 131072
    assert by["tp_size"]["to"] == 4
    per = d["budget"]["per_gpu"]
    assert per["one_request"] > per["kv_memory"]


def test_vllm_weights_that_do_not_fit_are_weights_oom():
    d = js(
        pf(
            "--model-config",
            MODELS / "Llama-3.3-70B-Instruct",
            "--gpu-memory",
            H100,
            "--gpus",
            4,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            "vllm",
            "serve",
            "x",
        )
    )
    assert (d["verdict"], d["cause"], d["phase"]) == ("no-go", "weights_oom", "weight_load")
    assert d["fixes"][0]["flag"] == "--tensor-parallel-size" and d["fixes"][0]["to"] == 4


def test_vllm_healthy_start_is_go_and_text_shows_derivations():
    p = pf(
        "--model-config",
        MODELS / "Llama-3.1-8B-Instruct",
        "--gpu-memory",
        H100,
        "--gpus",
        1,
        "--no-kernel-log",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "32768",
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("preflight: GO")
    assert "requested - weights - activation peak - non-torch - CUDA graphs" in p.stdout


def test_vllm_hybrid_json_has_linear_state():
    d = js(
        pf(
            "--model-config",
            MODELS / "Qwen3-Next-80B-A3B-Instruct",
            "--gpu-memory",
            H200,
            "--gpus",
            4,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            "vllm",
            "serve",
            "Qwen/Qwen3-Next-80B-A3B-Instruct",
            "-tp",
            "4",
            "--max-model-len",
            "262144",
        )
    )
    assert d["budget"]["per_gpu"]["linear_state_per_request"] > 0
    assert d["verdict"] in ("go", "risky")


# ------------------------------------------------------------------------------------------------------------------
# GPUs and host health


def test_fewer_gpus_than_tp_times_pp_is_config_invalid():
    d = js(
        pf(
            "--model-config",
            MODELS / "Qwen3-8B",
            "--gpu-memory",
            H100,
            "--gpus",
            2,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            *SGLANG,
            "--tp",
            "4",
        )
    )
    assert (d["verdict"], d["cause"]) == ("no-go", "config_invalid")


@pytest.mark.parametrize(
    "xml, tp, words",
    [
        ("h100x2-ecc-uncorrectable.xml", "2", "uncorrectable ECC"),
        ("a100x1-remap-failure.xml", "1", "row remapping has failed"),
    ],
)
def test_gpu_counters_make_a_no_go_hardware_fault(xml, tp, words):
    p = pf(
        "--model-config",
        MODELS / "Qwen3-8B",
        "--nvidia-smi-xml",
        DATA / "smi" / xml,
        "--no-kernel-log",
        "--",
        *SGLANG,
        "--tp",
        tp,
    )
    assert p.returncode == 1
    assert "NO-GO — hardware_fault" in p.stdout and words in p.stdout and "deploy elsewhere" in p.stdout


def test_counters_of_a_gpu_the_command_does_not_use_do_not_count():
    """GPU 1 has the ECC errors; a TP1 command runs on GPU 0."""
    p = pf(
        "--model-config",
        MODELS / "Qwen3-8B",
        "--nvidia-smi-xml",
        DATA / "smi" / "h100x2-ecc-uncorrectable.xml",
        "--no-kernel-log",
        "--",
        *SGLANG,
    )
    assert p.returncode == 0, p.stdout


def test_healthy_xml_reads_sizes_and_buses():
    from logdoctor.preflight.gpus import from_xml

    g = from_xml(str(DATA / "smi" / "h100x2-healthy.xml"))
    assert [x.total_bytes for x in g.gpus] == [81559 << 20] * 2
    assert g.gpus[1].pci_bus == "00000000:3B:00.0" and not g.gpus[1].problems()


def test_memory_other_processes_hold_is_not_counted_from_xml_snapshot():
    """A snapshot's 'used' is not what the service will find at start: only live NVML subtracts it."""
    d = js(
        pf(
            "--model-config",
            MODELS / "Qwen3-8B",
            "--nvidia-smi-xml",
            DATA / "smi" / "h200x1-busy.xml",
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            *SGLANG,
        )
    )
    assert d["budget"]["per_gpu"]["usable_total"] == pytest.approx(140.40 - 0.60, abs=0.01)


def test_history_hardware_fault_on_this_host_is_no_go(tmp_path):
    from logdoctor.history import AttemptRow, History

    db = tmp_path / "h.db"
    with History(db) as h:
        h.record(
            [
                AttemptRow(
                    key="a1",
                    host="gpu-host-9",
                    unit="sglang.service",
                    engine="sglang",
                    cause="hardware_fault",
                    outcome="failed",
                    started="2026-05-22T10:33:52",
                )
            ]
        )
    p = pf(
        "--model-config",
        MODELS / "Qwen3-8B",
        "--gpu-memory",
        H100,
        "--gpus",
        1,
        "--no-kernel-log",
        "--host",
        "gpu-host-9",
        "--format",
        "json",
        "--",
        *SGLANG,
        history=db,
    )
    d = js(p)
    assert (d["verdict"], d["cause"]) == ("no-go", "hardware_fault")
    assert d["evidence"][0]["source"] == "history"


def test_value_tried_on_this_host_is_never_proposed(tmp_path):
    from logdoctor.history import AttemptRow, History

    args = [
        "--model-config",
        MODELS / "Llama-3.3-70B-Instruct",
        "--gpu-memory",
        "81920MiB",
        "--gpus",
        2,
        "--no-kernel-log",
        "--host",
        "h1",
        "--format",
        "json",
        "--",
        "vllm",
        "serve",
        "x",
        "-tp",
        "2",
        "--max-model-len",
        "131072",
    ]
    first = js(pf(*args, history=tmp_path / "empty.db"))
    ctx = next(f["to"] for f in first["fixes"] if f["lever"] == "context_length")
    db = tmp_path / "h.db"
    with History(db) as h:
        h.record(
            [
                AttemptRow(
                    key="b1",
                    host="h1",
                    engine="vllm",
                    cause="kv_cache_oom",
                    config={"context_length": ctx, "tp_size": 4},
                )
            ]
        )
    d = js(pf(*args, history=db))
    levers = {f["lever"]: f["to"] for f in d["fixes"]}
    assert levers.get("context_length") not in (None, ctx) and levers.get("tp_size") != 4


# ------------------------------------------------------------------------------------------------------------------
# the contract: JSON schema, exit codes, bad input, API


def test_json_validates_against_the_schema():
    import jsonschema

    schema = json.loads((Path(__file__).parent.parent / "logdoctor" / "schemas" / "preflight.schema.json").read_text())
    for argv in (
        [
            "--model-config",
            MODELS / "Qwen3-8B",
            "--gpu-memory",
            H100,
            "--gpus",
            1,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            *SGLANG,
        ],
        [
            SEED / "sglang-qwen.service",
            "--model-config",
            MODELS / "Qwen3-Next-80B-A3B-Instruct",
            "--nvidia-smi-xml",
            SEED / "h200-qwen-03.xml",
            "--kernel-log",
            SEED / "kernel.log",
            "--format",
            "json",
        ],
    ):
        d = js(pf(*argv))
        jsonschema.validate(d, schema)
        assert d["schema"] == "logdoctor.preflight/v1"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["/nonexistent.service", "--gpu-memory", H100, "--gpus", 1], "no such file"),
        (["--gpu-memory", "lots", "--gpus", 1, "--", *SGLANG], "--gpu-memory"),
        (["--gpu-memory", H100, "--", *SGLANG], "go together"),
        (["--gpu-memory", H100, "--gpus", 1, "--", "python3", "-m", "tgi.server"], "accounting of sglang and vllm"),
        (["--nvidia-smi-xml", str(DATA / "seed" / "kernel.log"), "--", *SGLANG], "not readable nvidia-smi XML"),
        (["--model-config", "/nonexistent", "--gpu-memory", H100, "--gpus", 1, "--", *SGLANG], "no model config"),
        ([], "no command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, words):
    p = pf(*argv, "--no-kernel-log") if "--" not in argv else pf(*argv)
    assert p.returncode == 2, p.stdout + p.stderr
    assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_python_api(tmp_path):
    import logdoctor

    rep = logdoctor.preflight(
        str(SEED / "sglang-qwen.service"),
        model_config=str(MODELS / "Qwen3-Next-80B-A3B-Instruct"),
        nvidia_smi_xml=str(SEED / "h200-qwen-03.xml"),
        kernel_log=str(SEED / "kernel.log"),
    )
    assert (rep.verdict, rep.cause, rep.exit_code) == ("no-go", "hardware_fault", 1)
    assert rep.to_dict()["schema"] == "logdoctor.preflight/v1"


def test_overheads_table_marks_every_constant():
    from logdoctor.preflight.overheads import TABLE

    assert TABLE and all(r.status in ("measured", "assumed") and r.source for r in TABLE)
    assert len({(r.engine, r.name, r.since) for r in TABLE}) == len(TABLE)


def test_draft_model_adds_its_weights_and_kv():
    """Speculative decoding with a local draft: its weights (split by TP) and its per-token KV join the budget."""
    base = [
        "--model-config",
        MODELS / "Qwen3-32B",
        "--gpu-memory",
        H200,
        "--gpus",
        2,
        "--no-kernel-log",
        "--format",
        "json",
    ]
    cmd = ["--", *SGLANG, "--tp", "2", "--speculative-algorithm", "EAGLE3"]
    plain = js(pf(*base, *cmd))["budget"]["per_gpu"]
    with_draft = js(pf(*base, "--draft-config", MODELS / "Qwen3-4B-Instruct-2507", *cmd))["budget"]["per_gpu"]
    from logdoctor.preflight import model as mdl

    draft, _ = mdl.load(MODELS / "Qwen3-4B-Instruct-2507")
    assert with_draft["weights"] == pytest.approx(plain["weights"] + draft.weight_bytes / 2 / (1 << 30), abs=1e-3)
    assert with_draft["kv_bytes_per_token"] == plain["kv_bytes_per_token"] + draft.kv_bytes_per_token(2, 2)
    assert with_draft["pool_tokens"] < plain["pool_tokens"]


def test_recorded_h200_xml_from_a_real_nvidia_smi():
    """nvidia-smi -q -x of the lent H200 (driver 580.159.04): size, bus, and the counters all read, none alarming."""
    from logdoctor.preflight.gpus import from_xml

    (g,) = from_xml(str(DATA / "smi" / "h200-recorded.xml")).gpus
    assert (g.name, g.total_bytes, g.pci_bus) == ("NVIDIA H200", 143771 << 20, "00000000:00:06.0")
    assert (g.ecc_uncorrectable_volatile, g.ecc_uncorrectable_aggregate) == (0, 0)
    assert (g.remap_pending, g.remap_failure, g.retired_pending) == (False, False, False)
    assert g.problems() == []


def test_sliding_window_model_splits_sglang_pool_into_full_and_window_tokens():
    """gpt-oss-120b: 18 full + 18 sliding-window layers; SGLang's hybrid SWA pool spends the budget on full tokens
    and 0.8 x as many window tokens, so the reported #tokens is pool / (per-layer KV x (18 + 0.8 x 18))."""
    d = js(
        pf(
            "--model-config",
            MODELS / "gpt-oss-120b",
            "--gpu-memory",
            H200,
            "--gpus",
            1,
            "--no-kernel-log",
            "--format",
            "json",
            "--",
            *SGLANG,
            "--mem-fraction-static",
            "0.85",
        )
    )
    per = d["budget"]["per_gpu"]
    per_layer = 8 * (64 + 64) * 2  # 8 KV heads x (K 64 + V 64) x bf16
    want = per["pool_memory"] * (1 << 30) / (per_layer * (18 + 0.8 * 18))
    assert per["pool_tokens"] == pytest.approx(want, rel=1e-4)  # pool_memory is printed to 4 decimals of a GiB
    assert per["swa_pool_tokens"] == int(per["pool_tokens"] * 0.8)


_FAKE_NVML = '''
"""A stand-in for nvidia-ml-py with two H100s; GPU 1 has uncorrectable ECC errors and another process's memory."""
NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC = 1, 0, 1
class NVMLError(Exception):
    pass
class _Mem:
    def __init__(self, total, used):
        self.total, self.used = total, used
class _Pci:
    def __init__(self, bus):
        self.busId = bus
_GPUS = [dict(bus=b"00000000:19:00.0", used=0, ecc=0), dict(bus=b"00000000:3B:00.0", used=20 << 30, ecc=3)]
def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return len(_GPUS)
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetMemoryInfo(h): return _Mem(81559 << 20, _GPUS[h]["used"])
def nvmlDeviceGetName(h): return b"NVIDIA H100 80GB HBM3"
def nvmlDeviceGetPciInfo(h): return _Pci(_GPUS[h]["bus"])
def nvmlDeviceGetTotalEccErrors(h, kind, counter): return _GPUS[h]["ecc"]
def nvmlDeviceGetRetiredPagesPendingStatus(h): raise NVMLError("Not Supported")
def nvmlDeviceGetRemappedRows(h): return (0, 0, 0, 0)
'''


def test_live_nvml_reads_memory_and_counters(tmp_path):
    """The NVML path with a stand-in library: sizes, buses and ECC counters are read; another process's memory on
    a GPU the command uses is taken off the budget; unsupported counters are unknown, not errors."""
    import os

    (tmp_path / "pynvml.py").write_text(_FAKE_NVML)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

    def run(*cmd):
        argv = ["--model-config", MODELS / "Qwen3-8B", "--no-kernel-log", "--no-history", "--format", "json", "--"]
        p = subprocess.run(
            [sys.executable, "-m", "logdoctor", "preflight", *map(str, argv), *SGLANG, *cmd],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        return json.loads(p.stdout), p.returncode

    one, rc1 = run()
    assert rc1 == 0 and one["gpus"][0]["source"] == "NVML" and one["gpus"][0]["pci_bus"] == "00000000:19:00.0"
    assert one["budget"]["per_gpu"]["usable_total"] == pytest.approx(81559 / 1024 - 0.60, abs=0.01)
    two, rc2 = run("--tp", "2")
    assert rc2 == 1 and two["cause"] == "hardware_fault"
    assert any("GPU 1" in e["text"] and "uncorrectable ECC" in e["text"] for e in two["evidence"])
    assert two["budget"]["per_gpu"]["usable_total"] == pytest.approx(81559 / 1024 - 0.60 - 20, abs=0.01)


def test_kernel_xids_count_only_hardware_classes_on_the_gpus_used():
    from logdoctor.preflight.gpus import GPU
    from logdoctor.preflight.health import kernel_signs

    used = [GPU(0, "H200", 1, pci_bus="00000000:AB:00.0")]
    lines = [
        "kernel: NVRM: Xid (0000:ab:00): 48, pid=1, An uncorrectable double bit error (DBE) has been detected",
        "kernel: NVRM: Xid (PCI:0000:ab:00): 13, pid=7, Graphics Exception: ESR 0x1",  # an application's fault
        "kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=9, GPU has fallen off the bus.",  # another GPU
    ]
    signs = kernel_signs(lines, used, "kern.log")
    assert [(s.line, s.source) for s in signs] == [(1, "kern.log")]
    assert len(kernel_signs(lines, [GPU(0, "GPU", 1)], "kern.log")) == 2  # no bus known: every GPU's Xids count


def test_old_vllm_captures_graphs_outside_the_utilization():
    """Before 0.21 vLLM did not profile CUDA graphs: at utilization 0.99 they have nowhere to go (no-go, with a
    utilization that leaves them room); 0.33 subtracts them from the KV budget instead."""
    argv = [
        "--model-config",
        MODELS / "Qwen3-8B",
        "--gpu-memory",
        H100,
        "--gpus",
        1,
        "--no-kernel-log",
        "--format",
        "json",
    ]
    cmd = ["--", "vllm", "serve", "Qwen/Qwen3-8B", "--gpu-memory-utilization", "0.99", "--max-model-len", "32768"]
    old = js(pf(*argv, "--engine-version", "0.10.1", *cmd))
    assert (old["verdict"], old["cause"], old["phase"]) == ("no-go", "graph_capture_fault", "graph_capture")
    assert old["fixes"][0]["flag"] == "--gpu-memory-utilization" and old["fixes"][0]["to"] < 0.99
    new = js(pf(*argv, "--engine-version", "0.33.0", *cmd))
    assert new["cause"] != "graph_capture_fault"
    assert new["budget"]["per_gpu"]["kv_memory"] < old["budget"]["per_gpu"]["kv_memory"]


def test_a_unit_is_checked_with_its_drop_ins_in_force(tmp_path):
    """After `fix --write` the flags in force live in UNIT.d/50-logdoctor.conf: preflight reads the unit as systemd
    and `fix` do (an empty ExecStart= clears the unit's own), not the unit file alone."""
    unit = tmp_path / "sg.service"
    unit.write_text(
        "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /models/m "
        "--mem-fraction-static 0.6\n"
    )
    argv = ["--model-config", MODELS / "Qwen3-8B", "--gpu-memory", H100, "--gpus", 1, "--no-kernel-log"]
    before = js(pf(unit, *argv, "--format", "json"))
    assert before["budget"]["per_gpu"]["mem_fraction_static"] == 0.6
    (tmp_path / "sg.service.d").mkdir()
    (tmp_path / "sg.service.d" / "50-logdoctor.conf").write_text(
        "[Service]\nExecStart=\nExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /models/m "
        "--mem-fraction-static 0.8\n"
    )
    after = js(pf(unit, *argv, "--format", "json"))
    assert after["budget"]["per_gpu"]["mem_fraction_static"] == 0.8


@pytest.mark.parametrize("what", ["kernel", "xml", "config"])
def test_a_fifo_named_as_an_input_is_refused_at_once(tmp_path, what):
    """--kernel-log, --nvidia-smi-xml and --model-config name files: a FIFO there is refused in one line (exit 2),
    never waited on (found trying preflight as an attacker would: --kernel-log FIFO hung)."""
    import os

    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    opts = {
        "kernel": ["--kernel-log", fifo, "--model-config", MODELS / "Qwen3-8B", "--gpu-memory", H100, "--gpus", 1],
        "xml": ["--nvidia-smi-xml", fifo, "--model-config", MODELS / "Qwen3-8B", "--no-kernel-log"],
        "config": ["--model-config", fifo, "--gpu-memory", H100, "--gpus", 1, "--no-kernel-log"],
    }[what]
    p = pf(*opts, "--", *SGLANG)
    assert p.returncode == 2 and "FIFO" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
