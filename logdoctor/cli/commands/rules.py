"""`logdoctor rules list | show ID | lint [DIR] | test [DIR]`."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from logdoctor.matching.loader import bundled_rules_dir, lint_rule_file, load_rules


@click.group()
def rules() -> None:
    """List, show, lint and test the rule base (the bundled rules, plus folders given with --rules or
    $LOGDOCTOR_RULES_PATH).

    \b
    Examples:
      logdoctor rules list | grep kv_cache_oom
      logdoctor rules show sglang.kv-pool.not-enough-memory
      logdoctor rules lint my-rules/ && logdoctor rules test my-rules/ --cases my-cases/

    The rule format: `logdoctor docs rules`."""


@rules.command("list")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path())
def list_cmd(rule_dirs):
    """One line per rule: id, cause, engines, title."""
    for r in sorted(load_rules(tuple(rule_dirs)), key=lambda r: (r.cause, r.id)):
        click.echo(f"{r.id:<48} {r.cause:<22} {','.join(r.engines):<14} {r.title}")


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path())
def show_cmd(rule_id, rule_dirs):
    """Print one rule's file (RULE_ID as `rules list` shows it; exit 2 when there is none).

    \b
    Example: logdoctor rules show any.forward.cuda-oom"""
    for r in load_rules(tuple(rule_dirs)):
        if r.id == rule_id:
            click.echo(f"# {r.path}")
            click.echo(Path(r.path).read_text(), nl=False)
            return
    from logdoctor.core.errors import UsageError  # exit 2 (usage), not click's 1, which is explain's "known cause"

    raise UsageError(f"no rule with id {rule_id!r} (see `logdoctor rules list`)")


def _files(d: Path) -> list[Path]:
    return sorted(d.rglob("*.yaml")) + sorted(d.rglob("*.yml"))


@rules.command("lint")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False))
def lint_cmd(directory):
    """Schema errors, duplicate ids, unknown levers, refused YAML (anchors, aliases, size), templates other than
    {name}, regexes that do not compile or risk catastrophic backtracking: every problem of every file, each with
    file:line. Exit 2 on any problem; old-shape keys (priority:, fallback:) and a missing tier are warnings (exit 0)."""
    d = Path(directory) if directory else bundled_rules_dir()
    problems: list[str] = []
    warnings: list[str] = []
    ids: dict[str, Path] = {}
    n = 0
    for path in _files(d):
        n += 1
        r = lint_rule_file(path, problems)
        if r is None:
            continue
        warnings += [f"{path}: warning: {w}" for w in r.warnings]
        if r.id in ids:
            problems.append(f"{path}: duplicate rule id {r.id!r} (also in {ids[r.id]})")
        ids[r.id] = path
        if path.parent.name != r.cause:
            problems.append(f"{path}: rule of cause {r.cause!r} must live under rules/{r.cause}/")
    problems = list(dict.fromkeys(problems))  # the schema and the loader may name one fault in the same words
    for p in warnings + problems:
        click.echo(p, err=True)
    click.echo(f"{n} rule files, {len(problems)} problems" + (f", {len(warnings)} warnings" if warnings else ""))
    sys.exit(2 if problems else 0)


def _margin(d) -> str:
    """How far the winner is ahead of the best rule of another cause (points), for `rules test -v`."""
    rules_only = [c for c in d.candidates if c["rule"] != "classifier"]
    win = next((c for c in rules_only if c["rule"] == d.rule), None)
    rival = next((c for c in rules_only if c["cause"] != d.cause), None)
    if win is None:
        return f"confidence {d.confidence}"
    if rival is None:
        return f"score {win['score']:g}, no rule of another cause fired"
    return f"score {win['score']:g}, {win['score'] - rival['score']:g} ahead of {rival['rule']}"


def find_fixture(case_id: str, roots: list[Path]) -> Path | None:
    for root in roots:
        for cand in root.rglob(case_id):
            if (cand / "journal.log").exists():
                return cand
    return None


def fixture_roots() -> list[Path]:
    return [bundled_rules_dir().parent / "fixtures" / "journals"]


@rules.command("test")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--cases",
    "case_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="a folder of labelled cases (CASE/journal.log + CASE/label.yaml), searched before the bundled "
    "ones (repeatable)",
)
@click.option("-v", "--verbose", is_flag=True, help="a line per example that passed, with its margin")
def test_cmd(directory, case_dirs, verbose):
    """Every rule must win on each of its examples and must not fire on any healthy fixture.

    DIRECTORY is a folder of your own rules (tested on top of the bundled ones); without it the bundled rules are
    tested. An example names a case folder: it is looked up under --cases first, then in the fixtures this install
    carries. Healthy cases (failed: false) under either must not make a tested rule fire.

    \b
    Examples:
      logdoctor rules test
      logdoctor rules test myrules/ --cases mycases/

    Exit codes: 0 every example passed · 1 some failed (listed on stderr, FAIL lines) · 2 usage error or a rule
    that does not load."""
    extra = (directory,) if directory else ()
    all_rules = load_rules(extra, strict=True)
    tested = [r for r in all_rules if not directory or Path(r.path).resolve().is_relative_to(Path(directory).resolve())]
    roots = [Path(c) for c in case_dirs] + [r for r in fixture_roots() if r.is_dir()]
    failures, passed = _example_failures(tested, all_rules, roots, verbose)
    healthy = _healthy_cases(roots)
    failures += _healthy_failures(tested, healthy)
    for f in failures:
        click.echo(f"FAIL {f}", err=True)
    click.echo(f"{passed} examples passed, {len(failures)} failed; {len(healthy)} healthy fixtures checked")
    sys.exit(1 if failures else 0)


def _example_failures(tested: list, all_rules: list, roots: list[Path], verbose: bool) -> tuple[list[str], int]:
    """(failures, examples passed): each tested rule must win on each of its examples, showing the pinned evidence
    line; a rule without examples fails. Each case is diagnosed once, with every rule loaded."""
    from logdoctor.verdict.api import diagnose

    failures: list[str] = []
    passed = 0
    cache: dict[Path, object] = {}
    for r in sorted(tested, key=lambda r: r.id):
        if not r.examples:
            failures.append(f"{r.id}: no examples")
            continue
        for ex in r.examples:
            fx = find_fixture(ex, roots)
            if fx is None:
                failures.append(
                    f"{r.id}: example {ex!r} not found under {', '.join(map(str, roots)) or '(no cases)'}"
                    " (give the folder that holds it with --cases DIR)"
                )
                continue
            if fx not in cache:
                cache[fx] = diagnose(fx / "journal.log", loaded_rules=all_rules)
            d = cache[fx]
            failure = _example_failure(r, ex, d)
            if failure:
                failures.append(failure)
                continue
            passed += 1
            if verbose:
                click.echo(f"ok   {r.id} on {ex}: {_margin(d)}")
    return failures, passed


def _example_failure(r, ex: str, d) -> str | None:
    """Why rule r did not pass on example ex (another rule won, or the pinned evidence line is missing), else None."""
    pinned = r.evidence_lines.get(ex)
    if d.rule != r.id:
        return f"{r.id}: on {ex} the winner is {d.rule} ({d.cause})"
    if pinned is not None and pinned not in {e.line for e in d.evidence}:
        return (
            f"{r.id}: on {ex} the evidence does not show line {pinned} "
            f"(it shows {', '.join(str(e.line) for e in d.evidence) or 'nothing'})"
        )
    return None


def _healthy_cases(roots: list[Path]) -> list[Path]:
    """The case folders under roots whose label says healthy (failed: false, or no cause)."""
    healthy = []
    for root in roots:
        for lab in root.rglob("label.yaml"):
            data = yaml.safe_load(lab.read_text()) or {}
            if data.get("failed") is False or data.get("cause") in (None, "null"):
                healthy.append(lab.parent)
    return healthy


def _healthy_failures(tested: list, healthy: list[Path]) -> list[str]:
    """A failure for each tested rule that is a candidate on a healthy attempt of a healthy case (a healthy window
    may hold earlier failed attempts; only the healthy ones must stay quiet)."""
    from logdoctor.input.read import read_bytes
    from logdoctor.matching.conditions import Context
    from logdoctor.matching.rank import candidates
    from logdoctor.timeline.build import build

    failures = []
    for h in sorted(healthy):
        res = read_bytes((h / "journal.log").read_bytes(), str(h))
        tl = build(res.records)
        for a in tl.attempts:
            if a.failed:
                continue
            for c in candidates(tested, Context.build(tl, a)):
                failures.append(
                    f"{c.rule.id}: fires on healthy fixture {h.name} (line "
                    f"{c.hit.evidence[0][0] if c.hit.evidence else '?'})"
                )
    return failures


@rules.command("docs")
@click.option("--out", type=click.Path(dir_okay=False), help="write here instead of stdout")
@click.option(
    "--all",
    "write_all",
    is_flag=True,
    help="rewrite every generated file in the checkout: the catalogue, docs/rules.md's leaf reference and "
    "the rule and diagnosis JSON Schemas (logdoctor/schemas, docs copy)",
)
def docs_cmd(out, write_all):
    """Write the rule catalogue (markdown) generated from rule metadata."""
    from logdoctor.core.atomic import write_text

    if write_all:
        from logdoctor.matching.docgen import generated_files

        for path, make in generated_files(bundled_rules_dir().parent).items():
            write_text(path, make())
            click.echo(f"wrote {path}")
        return
    from logdoctor.matching.docgen import catalogue_markdown

    text = catalogue_markdown(load_rules(()))
    if out:
        write_text(out, text)
    else:
        click.echo(text, nl=False)
