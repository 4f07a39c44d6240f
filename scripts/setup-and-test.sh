#!/usr/bin/env bash
# Install everything the tests need (apt packages too; run as root) into .venv, run the style/type checks
# (scripts/lint.sh) and the test suite.
# pytest's exit 5 ("no tests collected") is a failure here, not a success.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
if ! dpkg -s libsystemd-dev systemd-journal-remote pkg-config gcc >/dev/null 2>&1; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends libsystemd-dev pkg-config gcc systemd-journal-remote >/dev/null
fi
# the PostgreSQL server binaries: tests/test_history_stores.py starts a throwaway cluster of its own (initdb in a
# temporary folder as the postgres user, a Unix socket only, stopped at the end); without them those tests skip
if ! dpkg -s postgresql >/dev/null 2>&1; then
  # no system-wide "main" cluster: the tests only need the binaries
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    $SUDO mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null; } \
    || echo "setup: could not install postgresql; the PostgreSQL history tests will be skipped" >&2
fi
# headless chromium renders the triage HTML report in tests/test_triage_html.py; where it cannot be installed that
# one test skips and says why
if ! dpkg -s chromium >/dev/null 2>&1; then
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
    || echo "setup: could not install chromium; the browser test of the triage report will be skipped" >&2
fi
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/pip install -q -e '.[test,dev]'
# bytecode, as a pip-installed package has it (this environment may set PYTHONDONTWRITEBYTECODE): the tests start the
# CLI hundreds of times, and each start would otherwise compile every module again
.venv/bin/python -m compileall -q logdoctor >/dev/null
bash scripts/lint.sh   # ruff check, ruff format --check (formatted modules), mypy
set +e
.venv/bin/python -m pytest -q "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
