"""Shapes a red team found in logs written without our fixtures (stop 25/26), each turned into a mechanism test on
lines generated here: the window-cut note, the attempt a systemd "Started" line belongs to, the unit a short journal
names, a notes file that is not a log, a quoted chat paste, a restart loop cut mid-traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

import logdoctor

VLLM = "/opt/venv/lib/python3.12/site-packages/vllm"


def _engine_core_oom(cut_after: int | None = None) -> str:
    """A vLLM V1 start that runs out of memory creating the weights: the engine core logs the traceback whole, then
    multiprocessing prints it again; the paste ends inside that second print (`cut_after`: end sooner)."""
    e = "(EngineCore_DP0 pid=4407) "
    lines = [
        "INFO 07-02 11:04:51 [__init__.py:241] Automatically detected platform cuda.",
        "(APIServer pid=4391) INFO 07-02 11:04:55 [api_server.py:1896] vLLM API server version 0.10.1",
        "(APIServer pid=4391) INFO 07-02 11:04:55 [utils.py:326] non-default args: {'model': '/data/m/l70', "
        "'tensor_parallel_size': 1, 'gpu_memory_utilization': 0.9}",
        e + "INFO 07-02 11:05:06 [gpu_model_runner.py:1911] Starting to load model /data/m/l70...",
        e + "ERROR 07-02 11:05:40 [core.py:700] EngineCore failed to start.",
        e + "ERROR 07-02 11:05:40 [core.py:700] Traceback (most recent call last):",
        e + f'ERROR 07-02 11:05:40 [core.py:700]   File "{VLLM}/v1/engine/core.py", line 691, in run_engine_core',
        e + "ERROR 07-02 11:05:40 [core.py:700]     engine_core = EngineCoreProc(*args, **kwargs)",
        e + f'ERROR 07-02 11:05:40 [core.py:700]   File "{VLLM}/model_executor/layers/linear.py", line 320, '
        "in __init__",
        e + "ERROR 07-02 11:05:40 [core.py:700]     weight = torch.empty(rows, cols, dtype=params_dtype)",
        e + "ERROR 07-02 11:05:40 [core.py:700] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "448.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 203.00 MiB is free.",
        e + "Process EngineCore_DP0:",
        e + "Traceback (most recent call last):",
        e + '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        e + "    self.run()",
        e + f'  File "{VLLM}/v1/engine/core.py", line 691, in run_engine_core',
    ]
    return "\n".join(lines[:cut_after]) + "\n"


def test_cut_note_only_when_the_window_ends_before_the_error(tmp_path: Path):
    """The paste ends inside multiprocessing's second print of a traceback whose exception line is in the window:
    no "final error is not in the window" note, no confidence lowered for a cut. Cut inside the first print (before
    its exception line), the note stays."""
    whole = tmp_path / "whole.log"
    whole.write_text(_engine_core_oom())
    d = logdoctor.diagnose(whole)
    assert d.failed and d.cause == "weights_oom"
    assert not any("not in the window" in n for n in d.notes), d.notes
    assert not d.to_dict()["window"]["cut"]
    cut = tmp_path / "cut.log"
    cut.write_text(_engine_core_oom(cut_after=10))
    c = logdoctor.diagnose(cut)
    assert any("final error is not in the window" in n for n in c.notes), c.notes
    assert c.to_dict()["window"]["cut"] and c.confidence < d.confidence


def _notes() -> str:
    """A person's notes on a failed start, in prose, quoting the engine's words inside sentences."""
    return (
        "RESULT: the cause was kv_cache_oom, in memory_pool.\n"
        "The scheduler raised 'RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.'\n"
        "just after the weights loaded (Load weight end, mem usage=40.2 GB) and it did so on each restart; see also\n"
        "'CUDA out of memory' further up, and the unit ended with status=1/FAILURE.\n"
        "Plan: lower --mem-fraction-static to 0.85 and retry.\n"
    )


def test_a_notes_file_is_no_engine_failure(tmp_path: Path):
    """A file of prose (no line with a time, level, prefix or journal field, none starting as a program's output
    does) is no engine failure, whatever it quotes: explain reads no failure, triage skips it as not a log, while
    the same words written as the engine writes them still fail."""
    pd = pytest.importorskip("pandas")  # noqa: F841  (triage's frame)
    from logdoctor.triage import run

    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "NOTES.txt").write_text(_notes())
    d = logdoctor.diagnose(folder / "NOTES.txt")
    assert not d.failed and d.cause is None
    res = run([str(folder)], jobs=1)
    inputs = {Path(i["source"]).name: i for i in res.inputs}
    assert inputs["NOTES.txt"]["status"] == "skipped", inputs
    assert res.frame.empty or (res.frame["outcome"] != "failed").all()
    raw = tmp_path / "raw.log"  # a bare traceback paste: no fields either, but a program's output
    raw.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2871, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    )
    assert logdoctor.diagnose(raw).failed
