"""Optional dependency groups (pyproject extras): a command that needs one says which, in one line, exit 2.

The runtime (explain, timeline, rules, watch, fix) needs none of them; `train` needs [train] (scikit-learn),
`eval` needs [triage] (pandas, for its tables) unless --format json, `eval --cv` needs [train] too, and the
system journal reader needs [journal] (systemd-python; journalctl is the fallback)."""

from __future__ import annotations

import importlib.util

from logdoctor.core.errors import MissingExtra

EXTRAS = {
    "train": ("sklearn", "numpy"),
    "triage": ("pandas", "matplotlib"),
    "dask": ("dask",),
    "journal": ("systemd",),
    "postgres": ("psycopg",),
}


def missing(extra: str) -> list[str]:
    """The modules of `extra` that are not importable (found without importing them: no start-up cost)."""
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def require(extra: str, what: str) -> None:
    gone = missing(extra)
    if gone:
        raise MissingExtra(f"{what} needs {', '.join(gone)}: pip install 'logdoctor[{extra}]'")
