"""Build hook: the rule base in rules/ (the one place people edit) becomes package data logdoctor/data/rules in
every wheel, built from the checkout or from an sdist, with no manual copy step; so do the docs (docs/*.md ->
logdoctor/data/docs, read by `logdoctor docs`) and the labelled fixtures the rules name as examples
(fixtures/journals -> logdoctor/data/fixtures/journals, read by `logdoctor rules test`). The man pages in man/
(generated from the click commands by tools/make_man.py, checked by tests/test_docs_cmd.py) go to share/man/man1.
Everything else is declared in pyproject.toml. An editable install (`pip install -e .`) reads the checkout."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithRules(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        src = ROOT / "rules"
        rules = sorted(src.rglob("*.yaml")) if src.is_dir() else []
        if not rules:
            raise SystemExit(f"logdoctor build: no rule files under {src}; the wheel would have no rule base")
        dst = Path(self.build_lib) / "logdoctor" / "data" / "rules"
        if dst.exists():
            shutil.rmtree(dst)
        for path in rules:
            out = dst / path.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
        (dst / "MANIFEST").write_text("".join(f"{p.relative_to(src).as_posix()}\n" for p in rules))
        self.announce(f"logdoctor: bundled {len(rules)} rules into {dst}", level=2)
        pkg = Path(self.build_lib) / "logdoctor" / "data"
        _copy(sorted((ROOT / "docs").glob("*.md")), ROOT / "docs", pkg / "docs")
        fx = ROOT / "fixtures" / "journals"
        cases = [p for p in sorted(fx.rglob("*")) if p.name in ("journal.log", "label.yaml") and p.is_file()]
        _copy(cases, fx, pkg / "fixtures" / "journals")


def _copy(files: list[Path], src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    for path in files:
        out = dst / path.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)


setup(
    cmdclass={"build_py": BuildPyWithRules},
    data_files=[("share/man/man1", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "man").glob("*.1")))],
)
