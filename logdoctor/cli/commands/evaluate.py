"""`logdoctor eval CASE_DIR ...`: accuracy on labelled cases, with the rules-only / classifier-only / combined
ablation."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click


@click.command("eval")
@click.argument("case_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--mode",
    type=click.Choice(["combined", "rules", "classifier", "ablation"]),
    default="combined",
    show_default=True,
    help="which decision path to score; ablation runs all three",
)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path())
@click.option(
    "--cv",
    "cv",
    type=click.IntRange(min=2),
    default=None,
    help="grouped K-fold (by variant_of): train the classifier on K-1 folds, score the rest",
)
@click.option(
    "--calibration",
    is_flag=True,
    help="reliability of confidence >= 0.8 on shapes no rule was written for: grouped folds (--cv K, "
    "default 5) over the cases that share no variant_of with any rule's examples",
)
def eval_cmd(case_dirs, fmt, mode, rule_dirs, cv, calibration):
    """Cause/phase accuracy, first-fix agreement, forbidden suggestions, confusion matrix, per-engine figures.

    With --cv K the classifier is not the shipped one: every case is scored by a classifier trained without its
    group (cross-validated figures for the corpus the classifier is trained on).

    CASE_DIR is a folder of labelled cases (one sub-folder per case with journal.log and label.yaml). The tables
    need pandas (pip install 'logdoctor[triage]'), --cv needs scikit-learn ('logdoctor[train]'); --format json
    needs neither.

    \b
    Examples:
      logdoctor eval fixtures/journals
      logdoctor eval fixtures/journals --mode ablation
      logdoctor eval fixtures/journals --format json > eval.json
      logdoctor eval fixtures/journals --calibration

    Exit codes: 0 evaluated · 2 usage error (no cases, a missing extra) · 4 internal error."""
    from logdoctor.core.extras import require

    if cv:
        require("train", "eval --cv")
    if fmt != "json":
        require("triage", "eval's tables (or use --format json)")
    if calibration:
        _calibration(case_dirs, rule_dirs, cv or 5, fmt)
        return
    modes = ["rules", "classifier", "combined"] if mode == "ablation" else [mode]
    report = _evaluate(case_dirs, rule_dirs, cv, modes)
    if fmt == "json":
        click.echo(
            json.dumps(
                {m: {"summary": s, "cases": [asdict(r) for r in res]} for m, (res, s) in report.items()},
                indent=2,
                default=str,
            )
        )
        return
    _echo_tables(report, modes[-1], cv)


def _evaluate(case_dirs, rule_dirs, cv: int | None, modes: list[str]) -> dict:
    """{mode: (case results, summary)}: cross-validated with --cv K, else with the shipped classifier."""
    from logdoctor.classify import evaluation as ev

    report = {}
    if cv:
        by_mode = ev.run_cv(case_dirs, cv, rule_dirs=rule_dirs, modes=modes)
        for m in modes:
            report[m] = (by_mode[m], ev.summary(by_mode[m]))
        return report
    for m in modes:
        results = ev.run(case_dirs, rule_dirs=rule_dirs, mode=m)
        report[m] = (results, ev.summary(results))
    return report


def _echo_tables(report: dict, last: str, cv: int | None) -> None:
    """The text report: each mode's summary, then for the last mode the per-engine table, the confusion matrix and
    the cases still wrong."""
    import pandas as pd

    from logdoctor.classify import evaluation as ev

    for m, (_, s) in report.items():
        click.echo(f"== {m}: {s['cases']} cases" + (f" ({cv}-fold grouped cross-validation)" if cv else ""))
        for k, v in s.items():
            if k != "cases":
                click.echo(f"   {k:<22} {v}")
    results, s = report[last]
    confusion, per_engine = ev.tables(results)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        click.echo("\nper engine:\n" + per_engine.to_string())
        click.echo("\nconfusion (rows: label, columns: diagnosis):\n" + confusion.to_string())
    wrong = [r for r in results if not r.cause_ok or not r.phase_ok or r.forbidden]
    if wrong:
        click.echo("\nstill wrong:")
        for r in wrong:
            click.echo(f"   {r.id:<40} " + "; ".join(_what_is_wrong(r)))


def _what_is_wrong(r) -> list[str]:
    """What a case got wrong: the cause, the phase (each against its label), forbidden suggestions."""
    bits = []
    if not r.cause_ok:
        bits.append(f"cause {r.cause} (label {r.label_cause})")
    if not r.phase_ok:
        bits.append(f"phase {r.phase} (label {r.label_phase})")
    if r.forbidden:
        bits.append("forbidden " + ", ".join(r.forbidden))
    return bits


def _calibration(case_dirs, rule_dirs, k: int, fmt: str) -> None:
    from logdoctor.classify import calibration as cal
    from logdoctor.classify import evaluation as ev
    from logdoctor.matching.loader import load_rules

    results = ev.run_cv(case_dirs, k, rule_dirs=rule_dirs, modes=["combined"])["combined"]
    cases = ev.load_cases(case_dirs)
    groups = cal.example_groups(cases, load_rules(tuple(rule_dirs)))
    unseen = {c.id for c in cases if str(c.label.get("variant_of") or c.id) not in groups}
    rep: dict[str, Any] = {"folds": k, "all": cal.reliability(results), "unseen": cal.reliability(results, unseen)}
    if fmt == "json":
        click.echo(json.dumps(rep, indent=2))
        return
    for name in ("all", "unseen"):
        r = rep[name]
        label = "all cases" if name == "all" else "cases sharing no variant_of with any rule example"
        click.echo(f"== {label}: {r['cases']} ({k}-fold grouped, classifier trained without the case's group)")
        click.echo(
            f"   {r['named_cause']} verdicts name a cause; confidence >= 0.8: {r['conf>=0.8']} verdicts, "
            f"share right {r['right_at_conf>=0.8']}"
        )
        for b, v in r["bins"].items():
            share = "-" if v["share"] is None else f"{v['share']:.2f}"
            mean = "" if v["mean_confidence"] is None else f" (mean confidence {v['mean_confidence']:.2f})"
            click.echo(f"   confidence {b}: {v['cases']:>4} verdicts, {v['right']:>4} right, share {share}{mean}")
        hv, uv = r["healthy_verdicts"], r["unknown_verdicts"]
        click.echo(
            f"   not binned: {hv['cases']} healthy verdicts ({hv['right']} right), {uv['cases']} cause unknown "
            f"({uv['label_unknown']} labelled unknown)"
        )
        if r["wrong_at_conf"]:
            click.echo("   wrong at >= 0.8: " + ", ".join(r["wrong_at_conf"]))
