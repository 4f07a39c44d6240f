"""`logdoctor train [CASE_DIR ...] [--out PATH]`: rebuild the cause classifier from labelled cases
(LABEL_SCHEMA.md) and write it as plain JSON. Reproducible: the same cases give the same bytes."""

from __future__ import annotations

from pathlib import Path

import click

DEFAULT_CASES = "fixtures/journals"


def _default_out() -> Path:
    from logdoctor.classify.runtime import DEFAULT_PATH

    return DEFAULT_PATH


@click.command("train")
@click.argument("case_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="model file to write (default: the shipped logdoctor/data/classifier.json)",
)
def train_cmd(case_dirs, out):
    """Train the classifier (hashed features + logistic regression, temperature-calibrated, abstention threshold
    chosen on grouped held-out folds) on labelled cases (default: fixtures/journals). Needs scikit-learn:
    pip install 'logdoctor[train]'.

    \b
    Examples:
      logdoctor train
      logdoctor train fixtures/journals my-cases/ --out /tmp/classifier.json"""
    from logdoctor.core.extras import require

    require("train", "logdoctor train")
    from logdoctor.classify import train as tr
    from logdoctor.core.errors import UsageError

    dirs = list(case_dirs) or [DEFAULT_CASES]
    if not case_dirs and not Path(DEFAULT_CASES).is_dir():
        raise UsageError(f"no case folders given and {DEFAULT_CASES} does not exist here")
    path = Path(out) if out else _default_out()
    examples = tr.load_examples(dirs)
    try:
        fitted = tr.fit(examples)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    text = tr.dumps(fitted.data)
    from logdoctor.core.atomic import write_text

    write_text(path, text)
    d = fitted.data
    t = d["training"]
    o = t["oof"]
    click.echo(f"trained on {t['cases']} cases ({t['groups']} groups, {len(d['classes'])} causes); C={t['C']}")
    click.echo(
        f"held-out folds: accuracy {o['accuracy']:.3f}; at threshold {d['threshold']} "
        f"answered {o['answered']}, right {o['right_answered']}, wrong {o['wrong_answered']}; "
        f"temperature {d['temperature']}"
    )
    click.echo(
        f"wrote {path} ({len(text.encode()) / 1024:.0f} KiB, {len(d['buckets'])} weighted buckets, "
        f"data sha256 {t['data_sha256'][:12]})"
    )
