#!/usr/bin/env bash
# Style and type checks (CI runs this from scripts/setup-and-test.sh): ruff lint over the code, ruff format only
# over the modules written in the formatter's style (the older modules keep their hand layout, so parallel branches
# merge without a whole-tree reformat; add a module to FORMATTED once it is formatted), mypy over the package
# (lenient, strict on the registry modules; pyproject.toml [tool.mypy]).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
FORMATTED=(
  logdoctor/core/vocab.py logdoctor/classify/corpus.py logdoctor/timeline/phases.py logdoctor/verdict/confidence.py
  logdoctor/engines/__init__.py logdoctor/engines/engine.py logdoctor/engines/spelling.py
  logdoctor/engines/tgi.py logdoctor/engines/trtllm.py logdoctor/engines/lmdeploy.py
  logdoctor/matching/decide.py logdoctor/matching/verdict.py logdoctor/matching/docgen.py
  tests/test_vocab.py tests/test_leaves.py tests/test_generated.py tests/test_layering.py tests/test_remedy.py
  tests/test_precedence.py
  logdoctor/preflight/__init__.py logdoctor/preflight/budget.py logdoctor/preflight/gpus.py
  logdoctor/preflight/health.py logdoctor/preflight/inputs.py logdoctor/preflight/model.py
  logdoctor/preflight/overheads.py logdoctor/preflight/render.py logdoctor/preflight/verdict.py
  logdoctor/cli/commands/preflight.py tests/test_preflight.py tests/test_preflight_validate.py
  logdoctor/matching/catalogues/__init__.py logdoctor/matching/catalogues/entries.py logdoctor/matching/catalogues/load.py
  logdoctor/matching/catalogues/resolve.py tools/catalogues/__init__.py tools/catalogues/annotations.py
  tools/catalogues/build.py tests/test_catalogues.py
  logdoctor/core/atomic.py tests/test_outputs.py tests/test_fix_trust.py
  logdoctor/engines/atlas/__init__.py logdoctor/engines/atlas/model.py logdoctor/engines/atlas/store.py logdoctor/engines/atlas/index.py
  logdoctor/engines/atlas/phases.py logdoctor/engines/atlas/causes.py logdoctor/engines/atlas/tier.py logdoctor/cli/commands/atlas.py
  tools/atlas/build.py tools/atlas/coverage.py tests/test_atlas.py
  logdoctor/history/__init__.py logdoctor/history/store.py logdoctor/history/sqlite.py logdoctor/history/postgres.py
  logdoctor/history/spool.py logdoctor/history/factory.py logdoctor/cli/commands/history.py tests/pgserver.py tests/test_history_stores.py
  tests/test_history_trust.py tests/test_live_journal.py
  logdoctor/cli/commands/docs.py logdoctor/triage/cluster.py tools/make_man.py
  tests/test_docs_cmd.py tests/test_install_doc.py tests/test_calibration_bins.py tests/test_text_fit.py
  tests/test_triage_polish.py
  logdoctor/matching/yamlsafe.py logdoctor/matching/regexsafe.py logdoctor/matching/template.py
  tests/test_trust_rules.py
  logdoctor/input/sources/archive.py logdoctor/input/sources/tarstream.py logdoctor/input/sources/guard.py logdoctor/render/visible.py
  tests/test_trust_inputs.py tests/test_fuzz_archives.py
  tests/test_one_pipeline.py tests/test_engine_names.py tests/test_markers.py
  logdoctor/scan/__init__.py logdoctor/scan/reader.py logdoctor/scan/sources.py tests/test_scan_explain.py
)
"$PY" -m ruff check logdoctor tests bench scripts fuzz tools/atlas --extend-exclude tests/data/atlas_src
"$PY" -m ruff format --check "${FORMATTED[@]}"
"$PY" -m mypy
