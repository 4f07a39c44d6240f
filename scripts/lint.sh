#!/usr/bin/env bash
# Style and type checks (CI runs this from scripts/setup-and-test.sh): ruff lint and ruff format over the whole tree
# (pyproject.toml [tool.ruff] excludes vendored engine sample code, generated fixtures and the atlas extractor, whose
# bytes are the shipped atlas's extractor hash), mypy over the package (lenient, strict on the registry modules;
# pyproject.toml [tool.mypy]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" -m ruff check .
"$PY" -m ruff format --check .
"$PY" -m mypy
