"""Read a rule file's YAML as bounded data: rule folders come from other teams and are run like code.

PyYAML's SafeLoader builds no objects but still expands aliases, so a 700-byte file of nested `*a` references
("billion laughs") is a tree of 10^8 nodes that every later walk visits. A rule never needs an anchor, so the
event stream (C parser, no tree built) is checked first: no anchor, no alias, at most MAX_NODES nodes, nesting at
most MAX_DEPTH deep. Only then is the text loaded.
"""

from __future__ import annotations

from pathlib import Path

from logdoctor.core.errors import RuleError

MAX_NODES = 5000  # the largest bundled rule has 132 nodes
MAX_DEPTH = 32  # ... and nests 11 deep


def _loader():
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_events(text: str, path: Path | str) -> None:
    """Raise RuleError (file:line) on an anchor, an alias, too many nodes or too deep a nesting."""
    import yaml

    nodes = depth = 0
    for ev in yaml.parse(text, Loader=_loader()):
        mark = ev.start_mark
        line = mark.line + 1 if mark is not None else 1
        anchor = getattr(ev, "anchor", None)
        if isinstance(ev, yaml.AliasEvent) or anchor:
            what = "alias *" if isinstance(ev, yaml.AliasEvent) else "anchor &"
            raise RuleError(
                f"{path}:{line}: YAML {what}{anchor} refused "
                "(rule files may not use anchors or aliases: write the condition out)"
            )
        if isinstance(ev, (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            nodes += 1
            if nodes > MAX_NODES:
                raise RuleError(f"{path}:{line}: rule file has over {MAX_NODES} YAML nodes")
        if isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise RuleError(f"{path}:{line}: YAML nested over {MAX_DEPTH} levels deep")
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1


def load(text: str, path: Path | str) -> object:
    """The YAML document as plain data, after check_events; YAML syntax errors become RuleError with the line."""
    import yaml

    try:
        check_events(text, path)
        # the (C)SafeLoader: rule files are data only
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RuleError(f"{path}{where}: invalid YAML ({problem})") from None
    except RecursionError:
        raise RuleError(f"{path}: YAML nested too deep to read") from None
