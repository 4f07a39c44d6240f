"""Line prefixes of launchers and log collectors beyond the ones first written for: the kubelet's CRI log files and
the stream-tag labels of Open MPI/PRRTE and launchers like it (found by a red-team log none of our fixtures has)."""

from __future__ import annotations

from logdoctor.input.formats import container, wrappers


def test_cri_log_file_lines_lose_timestamp_stream_and_tag():
    for tag in ("F", "P"):
        o = container.parse_timestamped(f"2026-12-02T10:00:03.123456789Z stderr {tag} torch.OutOfMemoryError: CUDA")
        assert o is not None and o.msg == "torch.OutOfMemoryError: CUDA" and o.ts is not None
    # a plain `kubectl logs --timestamps` line keeps its whole message
    o = container.parse_timestamped("2026-12-02T10:00:03Z stdout is a word here")
    assert o is not None and o.msg == "stdout is a word here"


def test_stream_tag_labels_peel_and_give_the_rank():
    for line, rank in (
        ("[1,3]<stderr>: RuntimeError: x", "rank3"),
        ("[1,3][gpu-node-03:4211]<stderr>: RuntimeError: x", "rank3"),
        ("[gpu-node-03:rank2]<stderr>: RuntimeError: x", "rank2"),
        ("[worker-b]<stdout>: RuntimeError: x", None),
    ):
        p = wrappers.peel(line)
        assert p.body == "RuntimeError: x" and p.wrapper == "mpirun" and p.rank == rank, (line, p)


def test_stream_tag_labels_are_not_an_unknown_prefix():
    lines = [f"[gpu-node-03:rank{i % 4}]<stderr>: [2026-12-02 10:00:0{i % 10}] line {i}" for i in range(40)]
    assert wrappers.detect(lines)[1] is None


def test_vllm_worker_tags_of_two_words_are_the_engines_own_prefix():
    """vLLM 0.10's `(VllmWorker TP0 pid=N)` (name, rank word, pid) is the engine's prefix, not an unknown wrapper."""
    lines = [
        f"(VllmWorker TP{i % 2} pid=9030{i % 2}) INFO 12-02 14:20:{i % 60:02d} [gpu_model_runner.py:1] line {i}"
        for i in range(40)
    ]
    assert wrappers.detect(lines)[1] is None
