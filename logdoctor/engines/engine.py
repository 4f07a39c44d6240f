"""What an engine module declares: one `Engine` record, exported as `ENGINE` by engines/<name>.py and registered
in engines/__init__.py. Detection, phase markers, death markers, version dating, the launch command, the
command-line grammar hooks and the flag spellings per lever all live in that one file; the stages (detect,
timeline, config, config_dump, levers, the CLI and the schemas) read the registry instead of naming engines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from logdoctor.engines.markers import Marker
from logdoctor.engines.spelling import Side
from logdoctor.records import Record


@dataclass(frozen=True)
class Engine:
    """One inference engine, registered once.

    `signatures`: substrings that identify its output without its line prefix (detection votes).
    `version_pattern`: a regex with group `v` run on lines containing one of `version_keywords` (None: none).
    `banner_names`: how the name appears in a generic `name==1.2` / `name version 1.2` banner.
    `infer_version`: dates the build from its wording when it prints no version (records -> ">=0.5.17").
    `launch_pattern`: a regex that finds its launch command in a line (config: command-line parsing).
    `command_words`: regexes that mark its launch command in a unit file or docker line (`logdoctor fix`).
    `command_line`: config_dump parses its command line with the grammar below (aliases, nargs, hint flags).
    `resolved_config`: a line -> the values the engine resolved at start-up (fill only what nothing else set).
    `config_complete`: its config dump lists every field, so an absent lever has its default.
    `proc_is_rank`: its process tags stand for ranks where no rank prefix says which rank wrote a line.
    `unknown_fallback`: its markers are tried when the engine cannot be told.
    `lever_sides`: canonical lever -> how this engine spells it (levers.py reads them)."""

    name: str
    title: str
    signatures: tuple[str, ...]
    markers: tuple[Marker, ...]
    deaths: tuple[Marker, ...] = ()
    version_pattern: re.Pattern[str] | None = None
    version_keywords: tuple[str, ...] = ()
    version_lower: bool = False  # match the keywords against the lower-cased line
    version_strip: str = ""  # trailing characters to strip from a matched version
    banner_names: tuple[str, ...] = ()
    infer_version: Callable[[list[Record]], str | None] | None = None
    launch_pattern: str = ""
    command_words: tuple[str, ...] = ()  # regexes that mark its launch command in a unit file (unitfile.py)
    command_line: bool = False
    flag_aliases: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    nargs_flags: frozenset[str] = frozenset()
    hint_flags: frozenset[str] = frozenset()
    no_flags_negate: bool = False  # `--no-x` sets x false (argparse BooleanOptionalAction)
    resolved_config: Callable[[str], dict[str, object]] | None = None
    config_complete: bool = False
    proc_is_rank: bool = False  # its process tags (EngineCore_DP0, Worker_TP1) stand for ranks
    unknown_fallback: bool = False
    lever_sides: Mapping[str, Side] = field(default_factory=lambda: MappingProxyType({}))

    def version_in(self, msg: str) -> str | None:
        """The version this line states, if it is this engine's version line."""
        if self.version_pattern is None:
            return None
        hay = msg.lower() if self.version_lower else msg
        if not any(k in hay for k in self.version_keywords):
            return None
        m = self.version_pattern.search(msg)
        if m is None:
            return None
        return m.group("v").rstrip(self.version_strip) if self.version_strip else m.group("v")
