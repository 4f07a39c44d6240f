#!/usr/bin/env bash
# Install logdoctor into .venv and explain the bundled example log (the seed story's third attempt).
# The demo uses a temporary attempt history, removed at the end: the bundled fixture hosts never land in your own
# history (~/.local/state/logdoctor/history.db).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q -e .
demo_state="$(mktemp -d)"
trap 'rm -rf "$demo_state"' EXIT
LOGDOCTOR_HISTORY="$demo_state/history.db" .venv/bin/logdoctor explain fixtures/journals/seed-all-attempts/journal.log \
  && rc=0 || rc=$?
# explain exits 1 when it diagnosed a failure with a known cause: that is success for this demo
case "$rc" in 0|1|3) exit 0 ;; *) exit "$rc" ;; esac
