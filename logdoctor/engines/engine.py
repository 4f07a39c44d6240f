"""What an engine module declares: one `Engine` record, exported as `ENGINE` by engines/<name>.py and registered
in engines/__init__.py. Detection, phase markers, death markers, version dating, the launch command, the
command-line grammar hooks and the flag spellings per lever all live in that one file; the stages (detect,
timeline, config, config_dump, levers, the CLI and the schemas) read the registry instead of naming engines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import Record
from logdoctor.engines.markers import Marker
from logdoctor.engines.spelling import Side


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
    `lever_sides`: canonical lever -> how this engine spells it (levers.py reads them).
    `lever_notes`: canonical lever -> what is particular to this engine's handling of it (documentation).

    Knowledge below the names (issue 20; like ruff's codes.rs, nothing outside engines/ should name an engine):
    `package_dirs`: its Python package folders as they appear in traceback paths (frames that are the engine's own).
    `compile_dirs`: its torch.compile backend inside the package (a failure there is a graph-capture failure).
    `process_names`: regexes of the process names it runs under (the kernel's comm in Xid / oom-kill lines, at most
    15 characters, and the process titles it sets), so a kernel line can be attributed to it.
    `front_end_processes`: regexes of process tags that only echo a worker's error (never the failing rank).
    `worker_processes`: regexes of process tags that are worker ranks.
    `unit_words`: words in a systemd unit name that say the unit runs this engine.
    `config_dump`: regexes, on a message, of the line that opens an attempt (its config dump or version banner).
    `config_dump_words`: literal words every such line contains (byte prefilters look for them; a word ending in
    "=" also appears as a keyword argument in traceback lines, which is not a dump).
    `env_prefixes`: prefixes of its own environment variables (config reads them from the log).
    `source_phases`: (phase, words) pairs: a message raised in a module path of its package containing one of the
    words belongs to that start-up phase (atlas/phases.py adds them to its shared table's row for the phase).
    `in_atlas`: its released sources are mined into the atlas of messages (docs/atlas.md; `logdoctor atlas`).
    `auto_static_fraction`: (GPU MiB, config fields, tp, pp, mla) -> the static memory fraction the engine picks by
    itself when none is set (None: a fixed default, in `lever_sides`), so a fraction set below it can be told."""

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
    lever_notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    package_dirs: tuple[str, ...] = ()
    compile_dirs: tuple[str, ...] = ()
    process_names: tuple[str, ...] = ()
    front_end_processes: tuple[str, ...] = ()
    worker_processes: tuple[str, ...] = ()
    unit_words: tuple[str, ...] = ()
    config_dump: tuple[str, ...] = ()
    config_dump_words: tuple[str, ...] = ()
    env_prefixes: tuple[str, ...] = ()
    source_phases: tuple[tuple[str, tuple[str, ...]], ...] = ()
    in_atlas: bool = False
    auto_static_fraction: Callable[[float, Mapping[str, object], int, int, bool], tuple[float, int, int]] | None = None

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
