"""Where the installed package lies: data, schemas and docs are found from here, whatever the
depth of the module that asks."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
