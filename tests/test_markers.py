"""The `slow` marker selects what tests/conftest.py says (issue 20 part 4): `pytest -m "not slow"` is the quick run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _collect(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--strict-markers", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_not_slow_leaves_out_the_named_tests_and_keeps_the_rest():
    """A named test (SLOW), a whole-file mark (pytestmark) and a module fixture (SLOW_FIXTURES) are each left out."""
    p = _collect("-m", "not slow", "tests/test_reliability.py", "tests/test_snapshot.py", "tests/test_classifier.py")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    kept = {line.split("::")[1] for line in p.stdout.splitlines() if "::" in line}
    assert "test_row_10m_short_lines" not in kept  # named in SLOW
    assert "test_fixture_verdicts_match_the_snapshot" not in kept  # pytestmark in its file
    assert "test_exported_model_equals_sklearn" not in kept  # uses the fitted classifier (SLOW_FIXTURES)
    assert "test_row_binary_junk" in kept  # a fast one stays
    assert "SLOW names" not in p.stdout + p.stderr


@pytest.mark.slow
def test_every_name_in_slow_is_a_collected_test():
    p = _collect("-W", "error::UserWarning")
    assert p.returncode == 0 and "SLOW names" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-2000:]
