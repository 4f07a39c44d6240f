"""Commands in a verdict's actions and notes name the service's unit when the window names it, so they paste as
they are (red team: 'systemctl edit UNIT' was printed although the journal named the unit); a name outside
systemd's unit characters is never substituted into a command."""

from __future__ import annotations

from pathlib import Path

import pytest

from logdoctor import diagnose
from logdoctor.verdict.api import _named

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "journals"


def test_the_start_timeout_action_names_the_unit():
    d = diagnose(FIX / "sglang-startup_timeout-download" / "journal.log")
    assert d.cause == "startup_timeout"
    assert any(a.startswith("systemctl edit sglang-qwen3.service") for a in d.actions), d.actions
    assert not any("UNIT" in a for a in d.actions)


@pytest.mark.parametrize(
    ("unit", "want"),
    [
        ("llm@0.service", "systemctl show llm@0.service -p MemoryMax"),
        (None, "systemctl show UNIT -p MemoryMax"),
        ("x.service; rm -rf ~", "systemctl show UNIT -p MemoryMax"),
        ("$(reboot).service", "systemctl show UNIT -p MemoryMax"),
    ],
)
def test_only_a_unit_name_of_systemds_characters_is_substituted(unit, want):
    assert _named("systemctl show UNIT -p MemoryMax", unit) == want


def test_a_word_that_only_contains_unit_is_left_alone():
    assert _named("UNITS and MY_UNIT stay; UNIT goes", "a.service") == "UNITS and MY_UNIT stay; a.service goes"
