from journal_export import journal_file  # noqa: F401  (real .journal files from export entries; tests/journal_export.py)

import os as _os
import tempfile as _tempfile

import pytest as _pytest

# No test may write the real user's state dir: every `explain` run (in-process or as a subprocess, which inherits
# this environment) records into a throwaway history unless a test points LOGDOCTOR_HISTORY somewhere itself.
_STATE = _tempfile.mkdtemp(prefix="logdoctor-test-state-")
_os.environ["XDG_STATE_HOME"] = _STATE
_os.environ.pop("LOGDOCTOR_HISTORY", None)


@_pytest.fixture
def history_db(tmp_path, monkeypatch):
    """A fresh history database path, also exported as LOGDOCTOR_HISTORY for subprocesses."""
    path = tmp_path / "history.db"
    monkeypatch.setenv("LOGDOCTOR_HISTORY", str(path))
    return path
