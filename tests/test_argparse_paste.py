"""A launch the argument parser rejected, pasted with no timestamps or prefixes (docker logs of a container whose
entrypoint died at once): argparse's usage block and its 'prog: error: ...' line are a program's output (not prose),
the error line is the final error (no 'not in the window' note, no confidence cut), and the launch is in the window
(the usage line is printed while parsing), so no 'log starts after launch' note either (red team, issue 20)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FLAGS = ["--model-path MODEL_PATH", "--tp-size TP_SIZE", "--mem-fraction-static MEM_FRACTION_STATIC"]


@pytest.mark.parametrize("prog", ["launch_server.py", "api_server.py"])
def test_a_rejected_command_line_is_a_whole_failure(tmp_path, prog):
    rows = ["==========", "== CUDA ==", "==========", "", "CUDA Version 12.4.1", ""]
    rows.append(f"usage: {prog} [-h] " + " ".join(f"[{f}]" for f in FLAGS))
    rows += [" " * (len(prog) + 8) + f"[--opt-{i} OPT_{i}]" for i in range(30)]
    rows.append(f"{prog}: error: argument --tp-size: invalid int value: 'two'")
    p = tmp_path / "docker.log"
    p.write_text("\n".join(rows) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "logdoctor", "explain", "--no-history", "--format", "json", str(p)],
        capture_output=True,
        text=True,
        check=False,
    )
    d = json.loads(out.stdout)
    assert d["failed"] and d["cause"] == "config_invalid" and d["phase"] == "launch", d
    assert d["window"]["cut"] is None and d["window"]["start_seen"], d["window"]
    assert not any("not in the window" in n or "starts after launch" in n for n in d["notes"]), d["notes"]
    assert d["evidence"][0]["line"] == len(rows)
