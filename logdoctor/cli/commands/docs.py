"""`logdoctor docs [TOPIC]`: the documentation that travels with the install, and man pages from the click tree.

A wheel carries docs/*.md as package data (setup.py copies them to logdoctor/data/docs); a checkout reads docs/
itself. `--man DIR` writes one roff page per command (logdoctor.1, logdoctor-explain.1, logdoctor-rules-test.1,
...) from the same click objects that print --help, so the man pages never drift from the options; the wheel ships
the pages committed in man/ (tools/make_man.py regenerates them, tests/test_docs_cmd.py checks they are current).

Exit codes: 0 printed / written · 2 no such topic, or a folder that cannot be written."""

from __future__ import annotations

import re
from pathlib import Path

import click

from logdoctor.core.paths import PACKAGE

PKG = PACKAGE


def docs_dir() -> Path:
    """docs/ of a checkout (an editable install), else the copy the build put into the package."""
    checkout = PKG.parent / "docs"
    if checkout.is_dir() and (PKG.parent / "pyproject.toml").is_file():
        return checkout
    return PKG / "data" / "docs"


def topics() -> dict[str, Path]:
    return {p.stem: p for p in sorted(docs_dir().glob("*.md"))}


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
    return ""


@click.command("docs")
@click.argument("topic", required=False)
@click.option("--man", "man_dir", type=click.Path(file_okay=False), help="write the man pages (roff) into DIR")
def docs_cmd(topic: str | None, man_dir: str | None) -> None:
    """Print the documentation shipped with this install; without TOPIC, list the topics.

    TOPIC is a file name from the list without .md (cli, reading-a-verdict, json, triage, hook, ...).

    \b
    Examples:
      logdoctor docs                      # the topics, one line each
      logdoctor docs cli | less           # commands, SOURCE, exit codes
      logdoctor docs --man ~/.local/share/man/man1 && man logdoctor-explain

    Exit codes: 0 printed or written · 2 no such topic, or DIR cannot be written."""
    from logdoctor.core.errors import UsageError

    if man_dir:
        written = write_man(Path(man_dir))
        click.echo(f"logdoctor: wrote {len(written)} man pages to {man_dir}", err=True)
        return
    found = topics()
    if not found:
        raise UsageError(f"no documentation at {docs_dir()}: this installation was built without docs")
    if topic is None:
        width = max(len(t) for t in found)
        for name, path in found.items():
            click.echo(f"{name:<{width}}  {_title(path)}")
        return
    key = topic.removesuffix(".md").removeprefix("docs/")
    if key not in found:
        raise UsageError(f"no topic {topic!r}; topics: {', '.join(found)}")
    click.echo(found[key].read_text(encoding="utf-8"), nl=False)


# ---- man pages -------------------------------------------------------------------------------------------------


def _esc(text: str) -> str:
    """Roff-safe text: backslashes, hyphens (\\-, so flags copy as ASCII), and a leading . or ' on a line."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + ln) if ln[:1] in (".", "'") else ln for ln in text.splitlines())


def _paragraphs(help_text: str) -> list[str]:
    """click's help: paragraphs split by blank lines; a paragraph after a \\b line is kept verbatim (.nf)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", help_text.strip()):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            out += [".PP", ".nf", _esc("\n".join(ln.rstrip() for ln in lines[1:])), ".fi"]
        else:
            out += [".PP", _esc(" ".join(ln.strip() for ln in lines))]
    return out


def _page(cmd: click.Command, path: list[str], subcommands: list[tuple[str, click.Command]]) -> str:
    name = "-".join(path)
    ctx = click.Context(cmd, info_name=" ".join(path))
    short = cmd.get_short_help_str(limit=300)
    lines = [
        f'.TH {_esc(name.upper())} 1 "" "logdoctor" "logdoctor manual"',
        ".SH NAME",
        f"{_esc(name)} \\- {_esc(short)}",
        ".SH SYNOPSIS",
        f".B {_esc(' '.join(path))}",
        _esc(" ".join(cmd.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
        *_paragraphs(cmd.help or ""),
    ]
    opts = [p for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    if opts:
        lines.append(".SH OPTIONS")
        for p in opts:
            rec = p.get_help_record(ctx)
            if rec is None:
                continue
            lines += [".TP", f"\\fB{_esc(rec[0])}\\fR", _esc(rec[1] or "")]
    if subcommands:
        lines.append(".SH COMMANDS")
        for sub, c in subcommands:
            lines += [".TP", f"\\fB{_esc(sub)}\\fR", _esc(c.get_short_help_str(limit=100))]
    see = ["logdoctor(1)"] if len(path) > 1 else [f"logdoctor\\-{s}(1)" for s, _ in subcommands]
    lines += [
        ".SH SEE ALSO",
        ", ".join(see) + ". The full documentation: \\fBlogdoctor docs\\fR (topics), \\fBlogdoctor docs cli\\fR.",
    ]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """File name -> roff text for the top-level command and every subcommand (nested groups included)."""
    from logdoctor.cli.app import main

    out: dict[str, str] = {}

    def walk(cmd: click.Command, path: list[str]) -> None:
        subs: list[tuple[str, click.Command]] = []
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=path[-1])
            for n in cmd.list_commands(ctx):
                c = cmd.get_command(ctx, n)
                if c is not None and not c.hidden:
                    subs.append((n, c))
        out["-".join(path) + ".1"] = _page(cmd, path, subs)
        for n, c in subs:
            walk(c, [*path, n])

    walk(main, ["logdoctor"])
    return out


def write_man(directory: Path) -> list[Path]:
    from logdoctor.core.atomic import write_text
    from logdoctor.core.errors import UsageError

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {directory}: {exc.strerror}") from None
    written = []
    for name, text in pages().items():
        write_text(str(directory / name), text)
        written.append(directory / name)
    return written
