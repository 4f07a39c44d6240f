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


UNIT = "chat-node.service"


def _restart_loop(timer: bool = False) -> list[str]:
    """`journalctl -o short` of an SGLang unit that restarts: a first attempt killed while serving, then two that
    run out of memory sizing the pool. `timer`: a health-check oneshot unit starts and ends every few lines (named
    by systemd more often than the engine's unit)."""
    out: list[str] = []
    n = 0

    def add(who: str, msg: str) -> None:
        nonlocal n
        n += 1
        out.append(f"Aug 21 06:{n // 60:02d}:{n % 60:02d} infer-12 {who}: {msg}")
        if timer and n % 5 == 0:
            for m in ("Starting gpu-probe.service - GPU probe...", "gpu-probe.service: Deactivated successfully."):
                n += 1
                out.append(f"Aug 21 06:{n // 60:02d}:{n % 60:02d} infer-12 systemd[1]: {m}")

    for k, fail in enumerate((False, True, True)):
        pid = f"python3[{7100 + k}]"
        add("systemd[1]", f"Started {UNIT} - Chat node.")
        add(
            pid,
            "[2026-08-21 06:00:01] server_args=ServerArgs(model_path='/w/q14', tp_size=1, port=30500, "
            "mem_fraction_static=0.91)",
        )
        add(pid, "[2026-08-21 06:00:02 TP0] Load weight begin. avail mem=78.20 GB")
        add(
            pid,
            "[2026-08-21 06:00:09 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
            "avail mem=50.40 GB, mem usage=27.80 GB.",
        )
        if fail:
            add(pid, "[2026-08-21 06:00:10 TP0] Scheduler hit an exception: Traceback (most recent call last):")
            add(
                pid,
                '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2871, in '
                "run_scheduler_process",
            )
            add(
                pid, "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"
            )
            add(pid, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.")
            add("systemd[1]", f"{UNIT}: Main process exited, code=exited, status=1/FAILURE")
        else:
            add(pid, "[2026-08-21 06:00:12 TP0] KV Cache is allocated. #tokens: 301221, K size: 8.1 GB, V size: 8.1 GB")
            add(pid, "[2026-08-21 06:00:15] The server is fired up and ready to roll!")
            add("systemd[1]", f"{UNIT}: Main process exited, code=killed, status=9/KILL")
        add("systemd[1]", f"{UNIT}: Failed with result '{'exit-code' if fail else 'signal'}'.")
        add("systemd[1]", f"{UNIT}: Scheduled restart job, restart counter is at {k + 1}.")
        add("systemd[1]", f"Stopped {UNIT} - Chat node.")
    return out


def test_each_started_line_opens_its_attempt_beside_a_chattier_unit(tmp_path: Path):
    """A restart loop in short format, with a oneshot probe unit that systemd names more often than the engine's:
    every attempt starts at its own unit's "Started" line (not one line later, not at the probe's start), and
    triage names the engine's unit."""
    for timer in (False, True):
        lines = _restart_loop(timer)
        p = tmp_path / f"loop-{timer}.log"
        p.write_text("\n".join(lines) + "\n")
        started = [i for i, l in enumerate(lines, 1) if f"Started {UNIT}" in l]
        d = logdoctor.diagnose(p)
        assert [a["started_line"] for a in d.attempts] == started, (timer, d.attempts)
        assert [a["outcome"] for a in d.attempts] == ["failed"] * 3
        assert d.cause == "kv_cache_oom"
    pytest.importorskip("pandas")
    from logdoctor.triage import run

    rows = run([str(p)], jobs=1).frame
    assert set(rows["unit"]) == {UNIT}
    assert list(rows["attempt"]) == [1, 2, 3]


def _quoted(lines: list[str]) -> str:
    """A chat message: the sender's words, then the log quoted ("> ", deeper ">> " for its second half, an empty
    quote line between), then more words."""
    half = len(lines) // 2
    body = [("> " if i < half else ">> ") + l for i, l in enumerate(lines)]
    body.insert(half, ">")
    return "this is what the node printed overnight, any idea?\n\n" + "\n".join(body) + "\n\nthanks!\n"


def test_a_quoted_paste_reads_as_the_log_it_quotes(tmp_path: Path):
    """Every line of the log quoted with "> " or ">> ": the quote marks are peeled before the journal prefix (the
    traceback's own indentation kept), the sender's words are not the log, and the verdict is the unquoted one's."""
    lines = _restart_loop()
    plain, quoted = tmp_path / "plain.log", tmp_path / "quoted.txt"
    plain.write_text("\n".join(lines) + "\n")
    quoted.write_text(_quoted(lines))
    a, b = logdoctor.diagnose(plain), logdoctor.diagnose(quoted)
    assert b.failed and (b.cause, b.phase, b.rule) == (a.cause, a.phase, a.rule)
    assert len(b.attempts) == len(a.attempts) == 3
    assert b.confidence == a.confidence


def test_a_blank_first_line_is_no_attempt(tmp_path: Path):
    lines = _restart_loop()
    p = tmp_path / "blank-first.log"
    p.write_text("\n\n" + "\n".join(lines) + "\n")
    d = logdoctor.diagnose(p)
    assert (
        len(d.attempts) == 3
        and d.attempts[1]["started_line"] == 2 + lines.index(next(l for l in lines[1:] if f"Started {UNIT}" in l)) + 1
    )


def test_a_restart_loop_cut_inside_its_last_traceback_repeats_the_earlier_failure(tmp_path: Path):
    """The window ends inside the last attempt's traceback, before its exception line; an earlier attempt of the
    same configuration died in the same phase with the whole traceback through the same frames: the loop repeats
    that failure (its rule, its evidence, the cut note, a lowered confidence), in explain and triage alike. With a
    changed configuration, or frames elsewhere, nothing carries over."""
    lines = _restart_loop()
    last = max(i for i, l in enumerate(lines) if f"Started {UNIT}" in l)
    tb = next(i for i in range(last, len(lines)) if "Traceback" in lines[i])
    p = tmp_path / "loop-cut.log"
    p.write_text("\n".join(lines[: tb + 3]) + "\n")
    d = logdoctor.diagnose(p)
    assert (d.failed, d.cause, d.phase, d.attempt_index) == (True, "kv_cache_oom", "memory_pool", 2)
    assert d.evidence and d.evidence[0].line < tb + 1  # quoted from the attempt whose traceback is whole
    assert any("not in the window" in n for n in d.notes) and any("from attempt 2" in n for n in d.notes)
    pytest.importorskip("pandas")
    from logdoctor.triage import run

    rows = run([str(p)], jobs=1).frame.sort_values("attempt")
    assert list(rows["cause"])[-1] == "kv_cache_oom"
    changed = [
        l.replace("mem_fraction_static=0.91", "mem_fraction_static=0.8") if i > last else l
        for i, l in enumerate(lines[: tb + 3])
    ]
    q = tmp_path / "loop-cut-changed.log"
    q.write_text("\n".join(changed) + "\n")
    assert logdoctor.diagnose(q).cause == "unknown"


def _older_systemd(lines: list[str]) -> list[str]:
    """The same loop as a systemd before v236 words it: "main process exited", "holdoff time over, scheduling
    restart.", "Unit U entered failed state."."""
    out = []
    for l in lines:
        head, _, msg = l.partition("systemd[1]: ")
        if not msg:
            out.append(l)
        elif "Scheduled restart job" in msg:
            out.append(f"{head}systemd[1]: {UNIT} holdoff time over, scheduling restart.")
        elif "Failed with result" in msg:
            out.append(f"{head}systemd[1]: Unit {UNIT} entered failed state.")
        else:
            out.append(l.replace("Main process exited", "main process exited"))
    return out


def test_an_older_systemd_restart_loop_starts_each_attempt_at_its_started_line(tmp_path: Path):
    lines = _older_systemd(_restart_loop())
    p = tmp_path / "loop-old-systemd.log"
    p.write_text("\n".join(lines) + "\n")
    d = logdoctor.diagnose(p)
    assert [a["started_line"] for a in d.attempts] == [i for i, l in enumerate(lines, 1) if f"Started {UNIT}" in l]
    assert d.cause == "kv_cache_oom"
