"""Files generated from the registries (vocab, leaf registry, engine registry, rule metadata) are current."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor.matching.docgen import generated_files

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("path", list(generated_files(REPO)), ids=lambda p: p.name)
def test_generated_file_is_current(path):
    assert path.read_text(encoding="utf-8") == generated_files(REPO)[path](), (
        f"{path.relative_to(REPO)} is stale: run `logdoctor rules docs --all`"
    )


def test_schema_describes_every_leaf():
    from logdoctor.matching.conditions import LEAVES
    from logdoctor.matching.docgen import rule_schema

    props = rule_schema()["$defs"]["condition"]["properties"]
    for name, lf in LEAVES.items():
        assert props[name]["description"] == lf.doc
