"""Labelled cases on disk (shared/corpus/LABEL_SCHEMA.md): a folder holding `journal.log` + `label.yaml`.

Lives below both `classify/train.py` (which learns from the cases) and `evaluation.py` (which scores them), so
neither imports the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass
class Case:
    id: str
    path: Path
    label: dict[str, Any]

    @property
    def failed(self) -> bool:
        f = self.label.get("failed")
        if f is None:
            return self.label.get("cause") not in (None, "null")
        return bool(f)


def load_cases(dirs: Iterable[str | Path]) -> list[Case]:
    cases = []
    for d in dirs:
        d = Path(d)
        labels = [d / "label.yaml"] if (d / "label.yaml").exists() else sorted(d.rglob("label.yaml"))
        for lab in labels:
            if not (lab.parent / "journal.log").exists():
                continue
            data = yaml.safe_load(lab.read_text()) or {}
            cases.append(Case(str(data.get("id") or lab.parent.name), lab.parent, data))
    return cases
