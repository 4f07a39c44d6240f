#!/usr/bin/env bash
# Style and type checks (CI runs this from scripts/setup-and-test.sh): ruff lint over the code, ruff format only
# over the modules written in the formatter's style (the older modules keep their hand layout, so parallel branches
# merge without a whole-tree reformat; add a module to FORMATTED once it is formatted), mypy over the package
# (lenient, strict on the registry modules; pyproject.toml [tool.mypy]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FORMATTED=(
  logdoctor/vocab.py logdoctor/corpus.py
  logdoctor/engines/__init__.py logdoctor/engines/engine.py logdoctor/engines/spelling.py
  logdoctor/engines/tgi.py logdoctor/engines/trtllm.py logdoctor/engines/lmdeploy.py
  logdoctor/matching/decide.py logdoctor/matching/docgen.py
  tests/test_vocab.py tests/test_leaves.py tests/test_generated.py tests/test_layering.py tests/test_remedy.py
  tests/test_precedence.py
  logdoctor/sources/archive.py logdoctor/sources/tarstream.py logdoctor/sources/guard.py logdoctor/formats/visible.py
  tests/test_trust_inputs.py tests/test_fuzz_archives.py
)
"$PY" -m ruff check logdoctor tests bench scripts fuzz
"$PY" -m ruff format --check "${FORMATTED[@]}"
"$PY" -m mypy
