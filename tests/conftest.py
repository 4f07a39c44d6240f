import os as _os
import tempfile as _tempfile

import pytest as _pytest
from journal_export import journal_file  # noqa: F401  (real .journal files from export entries; tests/journal_export.py)

# No test may write the real user's state dir: every `explain` run (in-process or as a subprocess, which inherits
# this environment) records into a throwaway history unless a test points LOGDOCTOR_HISTORY somewhere itself.
_STATE = _tempfile.mkdtemp(prefix="logdoctor-test-state-")
_os.environ["XDG_STATE_HOME"] = _STATE
_os.environ.pop("LOGDOCTOR_HISTORY", None)


@_pytest.fixture(autouse=True)
def _own_state_dir(tmp_path_factory, monkeypatch):
    """Each test gets its own state dir: attempts recorded by one test's `explain` runs never feed another test's
    cross-attempt reasoning (the seed fixtures share a host and a unit)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.delenv("LOGDOCTOR_HISTORY", raising=False)


@_pytest.fixture
def history_db(tmp_path, monkeypatch):
    """A fresh history database path, also exported as LOGDOCTOR_HISTORY for subprocesses."""
    path = tmp_path / "history.db"
    monkeypatch.setenv("LOGDOCTOR_HISTORY", str(path))
    return path
