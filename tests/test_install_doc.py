"""docs/install.md and the README agree with what the build really does (issue 23): the dependencies and extras in
pyproject.toml, the number of bundled rules, no `pip install logdoctor` from an index, and one recommended `-n`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
RECOMMENDED_N = "1000"


def _name(req: str) -> str:
    """'dask[distributed]>=2024.1' -> 'dask[distributed]'; 'hyperscan>=0.7; platform...' -> 'hyperscan'."""
    return re.split(r"[<>=!~;\s]", req, maxsplit=1)[0]


def test_plain_dependencies_are_all_named():
    para = DOC[DOC.index("The plain install") :].split("\n\n")[0]
    for req in PROJECT["dependencies"]:
        assert f"`{_name(req)}`" in para, f"docs/install.md: the plain install does not name {_name(req)}"


def test_every_extra_has_a_row_naming_its_packages():
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `\[([\w-]+)\]` \|.*$", DOC, re.M)}
    extras = PROJECT["optional-dependencies"]
    assert set(rows) == set(extras), f"extras in pyproject.toml {sorted(extras)}, in docs/install.md {sorted(rows)}"
    for extra, reqs in extras.items():
        if extra == "test":
            continue
        for req in reqs:
            name = _name(req)
            inner = re.fullmatch(r"logdoctor\[(.*)\]", name)
            for part in inner.group(1).split(",") if inner else [name]:
                assert part.lower() in rows[extra].lower(), f"docs/install.md row [{extra}] does not name {part}"


def test_the_rule_count_shown_is_the_bundled_one():
    n = len(list((ROOT / "rules").rglob("*.yaml")))
    shown = re.findall(r"(\d+) bundled rules", DOC)
    assert shown and all(int(s) == n for s in shown), f"docs/install.md shows {shown} bundled rules; rules/ has {n}"


def test_no_install_from_an_index_that_does_not_serve_it():
    for path in (ROOT / "README.md", ROOT / "docs" / "install.md"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not re.match(r"\s*pip install '?logdoctor", line), f"{path.name}: {line}"


def test_one_recommended_journal_window_everywhere():
    """Every `journalctl -u ... -n N ... | logdoctor` suggestion, in the docs, the README and the code's hints."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "logdoctor").rglob("*.py"))]
    texts += sorted((ROOT / "rules").rglob("*.yaml"))
    found = {}
    for path in texts:
        for m in re.finditer(r"journalctl[^\n|]*?-n (\d+)[^\n]*\| *logdoctor", path.read_text(encoding="utf-8")):
            found.setdefault(m.group(1), []).append(path.name)
    assert set(found) == {RECOMMENDED_N}, found
