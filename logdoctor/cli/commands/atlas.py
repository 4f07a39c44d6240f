"""`logdoctor atlas lookup TEXT` and `logdoctor atlas stats`: the atlas of the engines' own messages
(docs/atlas.md). lookup exits 0 when the text resolves to an entry, 1 when it does not, 2 on a bad atlas file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from logdoctor.engines import ENGINES

ATLAS_ENGINES = [e.name for e in ENGINES.values() if e.in_atlas]  # the engines the atlas covers (Engine.in_atlas)


def _load(path: str | None):
    from logdoctor.engines.atlas import load

    return load(Path(path) if path else None)


@click.group()
def atlas() -> None:
    """The atlas of SGLang and vLLM messages, mined from their released sources."""


@atlas.command("lookup")
@click.argument("text", nargs=-1, required=True)
@click.option("--engine", type=click.Choice(ATLAS_ENGINES), help="only this engine's entries")
@click.option("--all", "show_all", is_flag=True, help="every entry the text holds, best first")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--atlas", "atlas_path", type=click.Path(dir_okay=False), help="another atlas file")
def lookup_cmd(text, engine, show_all, fmt, atlas_path) -> None:
    """Which engine message TEXT is ('-' reads it from stdin): entry, where it is raised, which releases carry it,
    its phase and cause."""
    from logdoctor.engines.atlas import lookup_all

    line = sys.stdin.read() if text == ("-",) else " ".join(text)
    line = next((x for x in line.splitlines() if x.strip()), "")
    at = _load(atlas_path)
    hits = lookup_all(line, engine, at)
    shown = hits if show_all else hits[:1]
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "schema": "logdoctor.engines.atlas-lookup/v1",
                    "text": line,
                    "hits": [_hit_dict(h, at) for h in shown],
                },
                indent=2,
            )
        )
    elif not shown:
        click.echo("no atlas entry holds this text")
    else:
        for h in shown:
            click.echo(_hit_text(h))
    sys.exit(0 if hits else 1)


def _hit_dict(h, at) -> dict:
    e = h.entry
    return {
        **h.source(),
        "kind": e.kind,
        "template": h.variant.text(),
        "phase": h.phase,
        "cause": h.cause,
        "recoverable_path": e.recoverable or None,
        "matched_chars": h.matched,
        "history": [
            {
                "template": v.text(),
                "module": v.module,
                "function": v.qualname,
                "line": v.line,
                "versions": list(at.versions_of(e.engine, v.mask)),
            }
            for v in e.variants
        ],
    }


def _hit_text(h) -> str:
    e = h.entry
    what = e.exc or (e.level or "").upper()
    rec = f"  recoverable path: {e.recoverable}\n" if e.recoverable else ""
    return (
        f"{e.id}  {what}  {h.variant.text()}\n  {h.citation()}\n  phase: {h.phase}   cause: {h.cause}\n{rec}"
        f"  wordings across releases: {len(e.variants)}"
    )


@atlas.command("stats")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--atlas", "atlas_path", type=click.Path(dir_okay=False), help="another atlas file")
def stats_cmd(fmt, atlas_path) -> None:
    """Message count per engine and release read, with the source's sha256."""
    at = _load(atlas_path)
    rows = []
    for s in at.sources:
        vs = at.versions.get(s["engine"], ())
        vi = vs.index(s["version"]) if s["version"] in vs else -1
        alive = sum(1 for e in at.entries if e.engine == s["engine"] and any(v.mask >> vi & 1 for v in e.variants))
        rows.append({**s, "entries": alive})
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "schema": "logdoctor.engines.atlas-stats/v1",
                    "entries": len(at.entries),
                    "indexed_templates": len(at.index),
                    "extractor": at.extractor,
                    "releases": rows,
                },
                indent=2,
            )
        )
        return
    click.echo(f"atlas {at.path}: {len(at.entries)} entries (stable IDs), {len(at.index)} indexed templates")
    click.echo(f"{'engine':8} {'version':14} {'files':>6} {'messages':>9} {'entries':>8}  sha256")
    for r in rows:
        click.echo(
            f"{r['engine']:8} {r['version']:14} {r['files']:>6} {r['messages']:>9} {r['entries']:>8}  "
            f"{r['sha256'][:16]}…"
        )
