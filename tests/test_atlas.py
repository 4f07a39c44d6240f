"""The atlas (docs/atlas.md): the miner is reproducible and keeps IDs across releases, the shipped file agrees with
the build script, lookups resolve lines to the engine's source with phase and cause, recoverable paths are never
decisive, and the atlas tier sits between rules and classifier with the source cited (CLI, real files)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from logdoctor.engines.atlas import lookup
from logdoctor.engines.atlas.causes import cause_of
from logdoctor.engines.atlas.phases import phase_of
from logdoctor.engines.atlas.store import SCHEMA, load

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "tests" / "data" / "atlas_src"
SAMPLE = ROOT / "tests" / "data" / "atlas_sample.json.gz"
SHIPPED = ROOT / "logdoctor" / "data" / "atlas.json.gz"
BUILD = ROOT / "tools" / "atlas" / "build.py"


def _cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    e = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "logdoctor", *args],
        capture_output=True,
        text=True,
        env=e,
        input=stdin,
        cwd=ROOT,
        timeout=120,
    )


def _doc(path: Path) -> dict:
    with gzip.open(path, "rb") as f:
        return json.loads(f.read())


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("atlas") / "atlas.json.gz"
    subprocess.run(
        [sys.executable, str(BUILD), "--sources", str(SRC), "--out", str(out), "--jobs", "1"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    return out


def test_rebuild_of_the_vendored_sample_is_byte_identical(rebuilt):
    assert rebuilt.read_bytes() == SAMPLE.read_bytes(), (
        "rebuild tests/data/atlas_sample.json.gz with tools/atlas/build.py"
    )


def test_ids_survive_rewording_and_moves(rebuilt):
    doc = _doc(rebuilt)
    by_text = {}
    for eid, *_, variants in doc["entries"]:
        for t, m, _q, _line, mask in variants:
            by_text.setdefault(" ".join(p for p in t if p), set()).add((eid, doc["modules"][m], mask))
    # "must be divisible by" gained a full stop in 0.5.2 (.format instead of an f-string): one ID, two wordings
    ids = {eid for k, v in by_text.items() if k.startswith("tp_size") for eid, _, _ in v}
    assert len(ids) == 1
    # the assert lost its "yet": a rewording in the same function keeps the ID
    ids = {eid for k, v in by_text.items() if k.startswith("Pipeline parallelism") for eid, _, _ in v}
    assert len(ids) == 1
    # the FA3 check moved to model_runner.py: same ID, two modules, one version each
    fa3 = next(v for k, v in by_text.items() if k.startswith("FlashAttention v3"))
    assert len({eid for eid, _, _ in fa3}) == 1 and len({m for _, m, _ in fa3}) == 2
    assert sorted(mask for _, _, mask in fa3) == [1, 2]


def test_recoverable_paths_are_marked(rebuilt):
    doc = _doc(rebuilt)
    rec = {" ".join(p for p in e[6][0][0] if p): e[5] for e in doc["entries"]}
    assert rec["Failed to look up the model on the hub:"] == "handled"  # logged in an except that goes on
    assert rec["Loading the FA3 kernels failed, retrying (attempt )"] == "warning"
    assert rec["Failed to load the FA3 kernels, please reinstall sgl-kernel"] == ""  # raised from a handler: fatal
    assert rec["tp_size must be divisible by ep_size ."] == ""


def test_shipped_atlas_agrees_with_the_build_script():
    """Every release the script names is in the shipped file with its wheel's sha256, the extractor that built it
    is the current one, and the message counts add up: a changed script or extractor without a rebuild fails."""
    sys.path.insert(0, str(BUILD.parent))
    try:
        import build as atlas_build
    finally:
        sys.path.pop(0)
    doc = _doc(SHIPPED)
    assert doc["schema"] == SCHEMA
    assert doc["extractor"] == atlas_build.extractor_hash()
    got = [(s["engine"], s["version"]) for s in doc["sources"]]
    want = [(e, v) for e in sorted(atlas_build.VERSIONS) for v in atlas_build.VERSIONS[e]]
    assert got == want
    for s in doc["sources"]:
        assert re.fullmatch(r"[0-9a-f]{64}", s["sha256"]) and s["source"].endswith(".whl") and s["messages"] > 100
    for engine, versions in doc["versions"].items():
        assert list(versions) == list(atlas_build.VERSIONS[engine])
    full = (1 << max(len(v) for v in atlas_build.VERSIONS.values())) - 1
    ids = [e[0] for e in doc["entries"]]
    assert len(ids) == len(set(ids))
    assert all(0 < v[4] <= full for e in doc["entries"] for v in e[6])
    assert SHIPPED.stat().st_size < 8 * 1024 * 1024


def test_lookup_names_source_versions_phase_and_cause():
    at = load(SAMPLE)
    h = lookup("ValueError: tp_size 4 must be divisible by ep_size 3.", "sglang", at)
    assert h is not None and h.entry.exc == "ValueError" and h.cause == "config_invalid" and h.phase == "launch"
    assert h.citation() == "raised in sglang/srt/server_args.py:11 (ServerArgs.check), sglang 0.5.1–0.5.2"
    h = lookup("FlashAttention v3 backend is not supported on Tesla T4 (sm_75)", None, at)
    assert h is not None and h.cause == "kernel_arch_mismatch" and h.versions == ("0.5.1", "0.5.2")
    assert lookup("Load weight begin. avail mem=70.2 GB", None, at) is None


def test_lookup_prefers_the_variant_of_the_logs_version():
    at = load(SAMPLE)
    old = lookup("FlashAttention v3 backend is not supported on Tesla T4 (sm_75)", None, at, version="0.5.1")
    new = lookup("FlashAttention v3 backend is not supported on Tesla T4 (sm_75)", None, at, version="0.5.2")
    assert old.variant.module.endswith("fa3_backend.py") and new.variant.module.endswith("model_runner.py")


@pytest.mark.parametrize(
    "text,exc,phase,cause",
    [
        ("Cascade attention is not supported on Volta GPUs", "ValueError", "kernel_init", "kernel_arch_mismatch"),
        ("fatal error: Python.h: No such file or directory", None, "unknown", "kernel_arch_mismatch"),
        ("EAGLE does not support pipeline parallelism", "AssertionError", "launch", "config_invalid"),
        ("hidden size 4096 must be divisible by tp size 3", "AssertionError", "launch", "config_invalid"),
        ("Not enough space for mamba cache", "RuntimeError", "memory_pool", "kv_cache_oom"),
        ("Not enough space for mamba cache", "RuntimeError", "launch", "unknown"),  # only where the pool is sized
        ("The scheduler stopped receiving requests", "RuntimeError", "serving", "unknown"),  # never guessed
    ],
)
def test_lexicon(text, exc, phase, cause):
    assert cause_of(text, exc, phase)[0] == cause


@pytest.mark.parametrize(
    "module,func,phase",
    [
        ("sglang/srt/model_executor/cuda_graph_runner.py", "CudaGraphRunner.capture", "graph_capture"),
        ("vllm/model_executor/model_loader/default_loader.py", "DefaultModelLoader.load_weights", "weight_load"),
        ("sglang/srt/mem_cache/memory_pool.py", "MHATokenToKVPool.__init__", "memory_pool"),
        ("vllm/engine/arg_utils.py", "EngineArgs.create_engine_config", "launch"),
        ("sglang/srt/managers/scheduler.py", "Scheduler.event_loop_normal", "unknown"),
    ],
)
def test_phase_table(module, func, phase):
    assert phase_of(module, func) == phase


def test_lookup_is_linear_on_long_lines():
    """An anchor repeated all along a line whose other literals are missing: each candidate is checked once, so
    doubling the line about doubles the work (a quadratic check would quadruple it)."""
    import time

    at = load(SAMPLE)

    def cost(n: int) -> float:
        line = "must be divisible by ep_size " * n
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            assert lookup(line, None, at) is None
            best = min(best, time.perf_counter() - t0)
        return best

    small, large = cost(20000), cost(40000)
    assert large < 3.0 * max(small, 1e-4)


# ---- the CLI ----


def test_atlas_lookup_cli():
    r = _cli("atlas", "lookup", "--atlas", str(SAMPLE), "ValueError: tp_size 4 must be divisible by ep_size 3.")
    assert r.returncode == 0, r.stderr
    assert "sglang/srt/server_args.py:11 (ServerArgs.check), sglang 0.5.1–0.5.2" in r.stdout
    assert "cause: config_invalid" in r.stdout
    r = _cli(
        "atlas",
        "lookup",
        "--atlas",
        str(SAMPLE),
        "--format",
        "json",
        "-",
        stdin="Failed to look up the model on the hub: 401 Unauthorized\n",
    )
    d = json.loads(r.stdout)
    assert r.returncode == 0 and d["hits"][0]["recoverable_path"] == "handled" and d["hits"][0]["level"] == "error"
    r = _cli("atlas", "lookup", "--atlas", str(SAMPLE), "nothing an engine says")
    assert r.returncode == 1 and "no atlas entry" in r.stdout


def test_atlas_cli_bad_file_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "atlas.json.gz"
    bad.write_bytes(b"not gzip")
    r = _cli("atlas", "stats", "--atlas", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unreadable" in r.stderr
    r = _cli("atlas", "stats", "--atlas", str(tmp_path / "missing.json.gz"))
    assert r.returncode == 2 and "missing" in r.stderr
    odd = tmp_path / "odd.json.gz"
    odd.write_bytes(
        gzip.compress(
            json.dumps({"schema": SCHEMA, "modules": [], "entries": [["x"]], "versions": {}, "sources": []}).encode()
        )
    )
    r = _cli("atlas", "lookup", "--atlas", str(odd), "Decode out of memory. Try to lower your batch size.")
    assert r.returncode == 2 and "malformed entry" in r.stderr and r.stderr.count("\n") == 1
    # explain reaching the tier with that file: the tier is skipped, the verdict stands without it
    r = _cli(
        "explain",
        str(ROOT / "tests" / "data" / "atlas_logs" / "sglang-mxfp8-blackwell.log"),
        env={"LOGDOCTOR_ATLAS": str(odd)},
    )
    assert r.returncode in (1, 3) and "Traceback" not in r.stderr


def test_atlas_stats_cli():
    r = _cli("atlas", "stats", "--atlas", str(SAMPLE), "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode == 0
    assert [(x["version"], x["messages"]) for x in d["releases"]] == [("0.5.1", 8), ("0.5.2", 8)]
    r = _cli("atlas", "stats")
    assert r.returncode == 0 and "vllm" in r.stdout and "sglang" in r.stdout


# ---- the tier in the decision ----

LOG = """\
[2025-06-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2.5-7B-Instruct', tp_size=1)
[2025-06-01 10:00:05 TP0] Load weight begin. avail mem=14.50 GB
[2025-06-01 10:00:06 TP0] Scheduler hit an exception: Traceback (most recent call last):
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2400, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "/usr/local/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 5, in __init__
    raise ValueError(msg)
ValueError: FlashAttention v3 backend is not supported on Tesla V100-SXM2-32GB (sm_70)

[2025-06-01 10:00:06] Received sigquit from a child process. It usually means the child failed.
"""


def test_explain_cites_the_engine_source(tmp_path):
    log = tmp_path / "journal.log"
    log.write_text(LOG)
    env = {"LOGDOCTOR_ATLAS": str(SAMPLE)}
    r = _cli("explain", str(log), "--format", "json", env=env)
    d = json.loads(r.stdout)
    assert r.returncode == 1 and d["cause"] == "kernel_arch_mismatch" and d["rule"].startswith("atlas:")
    assert d["source"]["module"] == "sglang/srt/model_executor/model_runner.py" and d["source"]["log_line"] == 8
    assert d["source"]["versions"] == ["0.5.1", "0.5.2"] and d["confidence"] <= 0.7 and d["fixes"] == []
    r = _cli("explain", str(log), env=env)
    assert "raised in sglang/srt/model_executor/model_runner.py:5 (FlashAttentionBackend.__init__)" in " ".join(
        r.stdout.split()
    )


def test_a_recoverable_message_is_not_the_decisive_error(tmp_path):
    """The hub lookup logged at ERROR inside a handler that goes on resolves to its entry, but the tier skips it."""
    from logdoctor.engines.atlas.tier import decisive_hit

    class D:
        inner = [(3, "Failed to look up the model on the hub: 401 Unauthorized")]
        wrapper: list = []
        errors: list = []

    class A:
        decisive = D()

    os.environ["LOGDOCTOR_ATLAS"] = str(SAMPLE)
    try:
        assert lookup(D.inner[0][1], None, load(SAMPLE)) is not None
        assert decisive_hit(A(), "sglang") is None
    finally:
        del os.environ["LOGDOCTOR_ATLAS"]


def test_a_rule_verdict_never_loads_the_atlas():
    code = (
        "import sys; from pathlib import Path; import logdoctor; "
        "d = logdoctor.diagnose(Path('fixtures/journals/sglang-kv_cache_oom-gptoss-h100-json/journal.log')); "
        "assert d.rule and not d.rule.startswith('atlas'), d.rule; "
        "assert 'logdoctor.engines.atlas.store' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr


def test_sample_hash_is_recorded():
    doc = _doc(SAMPLE)
    files = sorted(p for p in (SRC / "sglang" / "0.5.1").rglob("*.py"))
    digest = hashlib.sha256(
        b"".join(p.relative_to(SRC / "sglang" / "0.5.1").as_posix().encode() + b"\0" + p.read_bytes() for p in files)
    ).hexdigest()
    assert doc["sources"][0]["sha256"] == digest


# ---- verdicts that only the atlas gives (real engine messages no rule covers; shipped atlas) ----


@pytest.mark.parametrize(
    "name,cause,module,function",
    [
        (
            "sglang-mxfp8-blackwell.log",
            "kernel_arch_mismatch",
            "sglang/srt/layers/quantization/fp8_utils.py",
            "triton_mxfp8_blockscaled_linear",
        ),
        # an assert that a model cannot run with PP: a rejected configuration, not an engine defect; the message is
        # copied in two model files, the traceback's frame picks the one that raised it
        (
            "sglang-pp-unsupported-model.log",
            "config_invalid",
            "sglang/srt/models/sdar_moe.py",
            "SDARMoeForCausalLM.__init__",
        ),
        (
            "vllm-mla-sliding-window.log",
            "config_invalid",
            "vllm/attention/backends/flashmla.py",
            "FlashMLAImpl.__init__",
        ),
    ],
)
def test_atlas_verdicts_cite_the_engine_source(name, cause, module, function):
    r = _cli("explain", str(ROOT / "tests" / "data" / "atlas_logs" / name), "--format", "json")
    d = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    assert (d["cause"], d["rule"][:6]) == (cause, "atlas:")
    assert (d["source"]["module"], d["source"]["function"]) == (module, function)
    assert d["source"]["versions"] and d["confidence"] == 0.7 and d["fixes"] == []


def test_a_log_line_holding_only_the_first_line_of_a_message_resolves():
    """Engines raise multi-line messages; the log's line has the first one (the rest are separate lines), and a
    release not read may reword the tail: the literals found in order up to the cut count when they are most of
    the template or long enough to be specific."""
    from logdoctor.engines.atlas.index import score

    assert (
        score("Decode out of memory. Try to lower your batch size.", ("Decode out of memory.", "Try to allocate")) == 21
    )
    assert score("abc Decode out of mem", ("Decode out of memory.",)) == 17  # a cut inside a literal counts its prefix
    assert score("nothing here", ("Decode out of memory.",)) == 0
    h = lookup("RuntimeError: Decode out of memory. Try to lower your batch size.", "sglang")
    assert h is not None and h.entry.engine == "sglang" and "Decode out of memory" in h.variant.text()
    assert lookup("RuntimeError: Decode out of", "sglang") is None  # too little of it


def test_a_rule_that_fires_outranks_the_atlas():
    """PRECEDENCE: the FlashAttnMLA assert is also an atlas entry (kernel_arch_mismatch), but a reviewed rule fires
    on it and carries a fix: the rule decides, no source is cited, the atlas is not consulted."""
    r = _cli(
        "explain", str(ROOT / "tests" / "data" / "atlas_logs" / "vllm-flashattn-mla-device.log"), "--format", "json"
    )
    d = json.loads(r.stdout)
    assert d["cause"] == "kernel_arch_mismatch" and not d["rule"].startswith("atlas:") and "source" not in d
    assert (
        lookup("AssertionError: FlashAttnMLA is not supported on this device", "vllm").cause == "kernel_arch_mismatch"
    )


def test_a_capability_stated_as_a_comparison_is_an_architecture_requirement():
    """Engines state a kernel's GPU requirement as `SM>=N` as often as `sm_90` or "compute capability >= N" (the
    atlas holds both shapes); either names the GPU generation, so the cause is kernel_arch_mismatch."""
    from logdoctor.engines.atlas.causes import cause_of

    for line in (
        "AssertionError: the MLA decode kernel requires SM>=90",
        "RuntimeError: this kernel requires SM >= 100, got 90",
        "ValueError: FP8 GEMM requires compute capability >= 8.9",
    ):
        assert cause_of(line, line.split(":")[0], "kernel_init")[0] == "kernel_arch_mismatch", line
    assert cause_of("ValueError: smoothing requires 3 samples", "ValueError", "launch")[0] != "kernel_arch_mismatch"
