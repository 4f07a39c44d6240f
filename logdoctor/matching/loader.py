"""Load rule files: one YAML rule per file under rules/<cause>/<id>.yaml, bundled and user folders.

Loading is on the `explain` hot path, so it does a cheap structural check here (required keys, known condition
keys, regexes compile, levers exist) and leaves full JSON-Schema validation to `rules lint`/`rules test`. Every
error names the file and, where the YAML knows it, the line.
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

from logdoctor.core.errors import InstallError, RuleError
from logdoctor.core.lean import dataclass, field
from logdoctor.core.limits import RULE_FILE_CAP, human
from logdoctor.core.paths import PACKAGE
from logdoctor.core.vocab import CAUSES, OPS, TIER_NAMES
from logdoctor.core.vocab import PHASES_OR_UNKNOWN as PHASES
from logdoctor.matching.conditions import AllNode, LeafNode, Node, from_data, leaves, parse


def bundled_rules_dir() -> Path:
    """The rule base this installation ships: rules/ at the root of a checkout (an editable install reads the files
    people edit), else the copy the build put into the package (logdoctor/data/rules, see setup.py)."""
    here = PACKAGE
    checkout = here.parent / "rules"
    if checkout.is_dir() and (here.parent / "pyproject.toml").is_file():
        return checkout
    return here / "data" / "rules"


def check_bundled(d: Path) -> None:
    """A missing or empty bundled rule base is a broken installation, never a silent classifier-only verdict."""
    if not d.is_dir() or not any(d.rglob("*.yaml")):
        raise InstallError(
            f"no bundled rule base at {d} — this installation is broken; reinstall logdoctor "
            "(a wheel built from the repository carries rules/ as package data)"
        )


@dataclass
class Fix:
    """A rule's fix: an operation on a lever, its value and bounds, why, and when it applies."""

    lever: str
    op: str
    value: object = None
    min: float | None = None
    max: float | None = None
    why: str = ""
    when: dict | None = None  # optional condition on captures/config, e.g. {lever_set: mamba_ratio}


@dataclass
class Rule:
    """One rule file, loaded: its cause, engines, condition tree, fixes and examples."""

    id: str
    cause: str
    title: str
    engines: tuple[str, ...]
    match: dict
    tier: str = "generic"  # precedence tier (vocab.TIERS); "fallback" yields to any other tier (rank.py)
    confidence: float = 0.8
    phases: tuple[str, ...] = ()
    explain: str = ""
    fixes: list[Fix] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    no_flag_change: bool = False  # hardware-style rules: say "do not change flags"
    notes: str = ""  # the why of the rule's mechanism and precedence (shown in the catalogue)
    evidence_lines: dict[str, int] = field(default_factory=dict)  # example case -> the line the evidence must show
    path: str = ""
    compiled: dict = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()  # old-shape keys the file used, a missing tier (`rules lint` prints them)
    # `match` parsed (matching/conditions.py `parse`): built by the loader as it checks the file, kept in the rule
    # cache as its `cache_data()` (rebuilt here); a Rule made in code gets it from `match` here
    cond: AllNode = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.cond is None:
            self.cond = parse(self.match)
        elif not isinstance(self.cond, Node):
            self.cond = from_data(self.cond)  # type: ignore[assignment]

    @property
    def fallback(self) -> bool:
        """A catch-all: it yields to any rule of another tier that fires on the attempt."""
        return self.tier == "fallback"

    def applies_to(self, engine: str) -> bool:
        return "any" in self.engines or engine in self.engines

    def regexes(self) -> set[str]:
        """Every regex of the rule's regex leaves (the prefilter's patterns, matching/prefilter.py)."""
        return {p for lf in leaves(self.cond) for p in lf.searches}


def rule_dirs(extra: tuple[str, ...] | list[str] = ()) -> list[Path]:
    dirs = [bundled_rules_dir()]
    env = os.environ.get("LOGDOCTOR_RULES_PATH", "")
    dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [Path(p) for p in extra]
    return dirs


def load_rules(extra_dirs=(), *, strict: bool = False) -> list[Rule]:
    """All rules; a later folder's rule with the same id replaces an earlier one (user folders override).
    A user folder's regexes are compiled here, before any log line meets them (`guard_regexes`)."""
    by_id: dict[str, Rule] = {}
    bundled = bundled_rules_dir()
    for d in rule_dirs(extra_dirs):
        if d == bundled:
            check_bundled(d)
        elif not d.exists():
            raise RuleError(f"{d}: rules folder does not exist")
        seen: dict[str, str] = {}
        if strict:
            from logdoctor.matching.cache import rule_files

            loaded = [load_rule_file(p, strict=True) for p in rule_files(d)]
        else:
            # a user folder is checked as `rules lint` checks it (schema: each leaf's value has the leaf's shape)
            # before it is cached; its regexes compile in guard_regexes (RE2 first) on every run, not here
            from logdoctor.matching.cache import load_dir

            loaded = load_dir(d, partial(_parse_all, strict=d != bundled), _cached_classes(), _index, _seed)
        for rule in loaded:
            path = rule.path
            if rule.id in seen:
                raise RuleError(f"{path}: duplicate rule id {rule.id!r} (also in {seen[rule.id]})")
            seen[rule.id] = str(path)
            if d != bundled:
                guard_regexes(rule)
            by_id[rule.id] = rule
    return list(by_id.values())


def _parse_all(files: list[Path], *, strict: bool) -> list[Rule]:
    return [load_rule_file(p, strict=strict, compile_regexes=False) for p in files]


def _cached_classes() -> dict[str, type]:
    """The dataclasses a rule cache entry may name (matching/cache.py decodes no other class): this module's."""
    return {
        c.__name__: c
        for c in globals().values()
        if isinstance(c, type) and "__lean_fields__" in c.__dict__ and c.__module__ == __name__
    }


def _index(rules: list[Rule]) -> dict:
    """What the rule cache keeps beside the rules: each regex's required literal words (the prefilter's index), so
    a run never parses a pattern to learn them."""
    from logdoctor.matching import prefilter

    reqs = {p: prefilter.requirement(p) for p in prefilter.patterns(rules)}
    # plain JSON lists, not the cache's tagged tuples and sets: the index is ~60 % of the entry, and a tagged value
    # costs a decoder hook call each (the prefilter reads a requirement as any sequence)
    return {
        "requirements": {p: _lists(r) for p, r in reqs.items()},
        "words": {p: sorted(prefilter.pattern_words(p)) for p in reqs},
    }


def _lists(req):
    return [_lists(x) for x in req] if isinstance(req, (tuple, list)) else req


def _seed(entry: dict) -> bool:
    """A cache hit: hand the stored index to the prefilter (False: the entry has none, rebuild it)."""
    reqs = entry["requirements"]
    if not isinstance(reqs, dict):
        return False
    from logdoctor.matching import prefilter

    words = entry.get("words")
    prefilter.seed(reqs, {p: frozenset(ws) for p, ws in words.items()} if isinstance(words, dict) else None)
    return True


def rule_patterns(cond: Node) -> list[tuple[str, str]]:
    """(leaf, pattern) for every regex a condition tree holds: the regex leaves and e.g. the `env:` value patterns
    (`Leaf.patterns` of the registry)."""
    return [(lf.name, p) for lf in leaves(cond) for p in lf.patterns]


def guard_regexes(rule: Rule) -> None:
    """Compile a user rule's regexes for the explain path: RE2 where it takes them, else Python's `re` after the
    backtracking lint (matching/regexsafe.py). A pattern that may not run is a RuleError naming the file."""
    from logdoctor.matching.regexsafe import compile_user

    for key, pat in rule_patterns(rule.cond):
        if pat in rule.compiled:
            continue
        try:
            rule.compiled[pat] = compile_user(pat)
        except ValueError as exc:
            text = ""
            try:
                text = Path(rule.path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                pass
            raise RuleError(f"{rule.path}{_line_of(text, key, pat)}: bad regex {pat[:120]!r}: {exc}") from None


def load_rule_file(path: Path | str, *, strict: bool = False, compile_regexes: bool | None = None) -> Rule:
    """One rule file; the first problem raises RuleError (file:line). `strict`: JSON-Schema validation, and the
    regexes compiled and linted (unless `compile_regexes` says otherwise)."""
    rule = _load_file(path, strict, None, strict if compile_regexes is None else compile_regexes)
    assert rule is not None  # without a problems list every problem raised
    return rule


def lint_rule_file(path: Path | str, problems: list[str]) -> Rule | None:
    """One rule file, strictly checked: every problem found is appended to `problems` (file:line each); the rule is
    returned when it could still be built (its id and folder are then checked too)."""
    return _load_file(path, True, problems, True)


def _load_file(path: Path | str, strict: bool, problems: list[str] | None, compile_regexes: bool) -> Rule | None:
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > RULE_FILE_CAP:  # rule folders come from other teams: data of bounded size, never code
            raise RuleError(
                f"{path}: rule file is {size} bytes (limit {human(RULE_FILE_CAP)}); a rule is a few KiB of YAML"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"{path}: cannot read rule file ({exc})") from None
        from logdoctor.matching import yamlsafe  # YAML is imported here: explain loads rules from the cache

        data = yamlsafe.load(text, path)  # no anchors or aliases, bounded nodes and depth (billion laughs)
        if not isinstance(data, dict):
            raise RuleError(f"{path}:1: a rule file must be a mapping with id, cause, match, ...")
    except RuleError as exc:
        if problems is None:
            raise
        problems.append(str(exc))
        return None
    if strict:
        from logdoctor.matching.schema import schema_problems

        found = schema_problems(data, path, text)
        if found and problems is None:
            raise RuleError(found[0])
        if problems is not None:
            problems += found
            if found:  # the shapes are wrong: the other checks are still run, as far as the shapes allow
                try:
                    return _build(data, path, text, compile_regexes=compile_regexes, problems=problems)
                except (TypeError, AttributeError, ValueError, KeyError):
                    return None
    return _build(data, path, text, compile_regexes=compile_regexes, problems=problems)


def _line_of(text: str, key: str, value: object = None) -> str:
    """The line of `key:` (block or flow style), preferring one that also holds `value`."""
    pats = []
    if value is not None:
        pats.append(rf"[{{\s-]{re.escape(key)}\s*:\s*['\"]?{re.escape(str(value))}")
    pats += [rf"^\s*-?\s*{re.escape(key)}\s*:", rf"[{{,]\s*{re.escape(key)}\s*:"]
    for pat in pats:
        m = re.search(pat, text, re.M)
        if m:  # +1: a match may start at the newline before the key, which belongs to the previous line
            return f":{text.count(chr(10), 0, m.start() + 1) + 1}"
    return ""


def build_rule(data: dict, path: Path, text: str = "", *, compile_regexes: bool = True) -> Rule:
    """Check and build a Rule; the first problem raises RuleError. On the explain path regexes compile lazily, when
    a condition first needs them (most rules stop at their first leaf); lint/test compile all of them up front."""
    rule = _build(data, path, text, compile_regexes=compile_regexes, problems=None)
    assert rule is not None  # without a problems list every problem raised
    return rule


def _build(
    data: dict, path: Path, text: str = "", *, compile_regexes: bool = True, problems: list[str] | None = None
) -> Rule | None:
    """build_rule; with `problems`, each problem is appended (file:line) and checking goes on (None when required
    keys are missing)."""
    found: list[str] = []

    def fail(key: str, msg: str, value: object = None) -> None:
        err = f"{path}{_line_of(text, key, value)}: {msg}"
        if problems is None:
            raise RuleError(err)
        found.append(err)

    missing = [k for k in ("id", "cause", "title", "match") if k not in data]
    for key in missing:
        fail("id", f"missing required key {key!r}")
    if missing:
        if problems is not None:
            problems += found
        return None
    if data["cause"] not in CAUSES:
        fail("cause", f"unknown cause {data['cause']!r} (TAXONOMY.md: {', '.join(CAUSES)})", data["cause"])
    engines = data.get("engines", ["any"])
    if isinstance(engines, str):
        engines = [engines]
    phases = data.get("phases", []) or []
    for p in phases if isinstance(phases, list) else [phases]:
        if p not in PHASES:
            fail("phases", f"unknown phase {p!r}")
    fixes = _fixes(data, fail)
    _check_templates(data, fixes, fail)
    compiled: dict = {}
    check = partial(_check_patterns, compiled=compiled, fail=fail) if compile_regexes else None
    cond = parse(data["match"], fail, check)  # the problems of `match:` in file order, the tree built as it goes
    examples, pinned = _examples(data, fail)
    conf = _confidence(data, fail)
    tier, warnings = _tier(data, fail)
    if found and problems is not None:  # collecting (rules lint): the rule is still returned, its id checked too
        problems += found
    return Rule(
        id=str(data["id"]),
        cause=data["cause"],
        title=str(data["title"]),
        engines=tuple(engines),
        match=data["match"],
        tier=tier,
        confidence=conf,
        phases=tuple(phases),
        explain=str(data.get("explain", "")),
        fixes=fixes,
        actions=[str(a) for a in data.get("actions", []) or []],
        examples=examples,
        no_flag_change=bool(data.get("no_flag_change", False)),
        notes=" ".join(str(data.get("notes", "")).split()),
        evidence_lines=pinned,
        path=str(path),
        compiled=compiled,
        warnings=warnings,
        cond=cond,
    )


def _fixes(data: dict, fail) -> list[Fix]:
    """The rule's fixes; a fix without a lever is left out, an unknown lever or op is a problem."""
    from logdoctor.engines import levers as lv

    fixes = []
    for f in data.get("fixes", []) or []:
        if not isinstance(f, dict) or "lever" not in f:
            fail("fixes", "each fix needs a lever")
            continue
        if f["lever"] not in lv.LEVERS:
            fail("lever", f"unknown lever {f['lever']!r}", f["lever"])
        op = f.get("op", "set")
        if op not in OPS:
            fail("op", f"unknown fix op {op!r} (one of {', '.join(OPS)})", op)
        fixes.append(
            Fix(
                lever=f["lever"],
                op=op,
                value=f.get("value"),
                min=f.get("min"),
                max=f.get("max"),
                why=str(f.get("why", "")),
                when=f.get("when"),
            )
        )
    return fixes


def _check_templates(data: dict, fixes: list[Fix], fail) -> None:
    """The texts shown with {name} placeholders (explain, each fix's why, actions) are templates that fill safely."""
    from logdoctor.matching import template

    for key, texts in (
        ("explain", [data.get("explain")]),
        ("why", [f.why for f in fixes]),
        ("actions", data.get("actions") or []),
    ):
        for t in texts if isinstance(texts, list) else [texts]:
            why = template.check(str(t)) if t is not None else None
            if why:
                fail(key, why)


def _examples(data: dict, fail) -> tuple[list[str], dict[str, int]]:
    """The example case ids, and the input line each {case: ID, line: N} example pins for the winner's evidence."""
    examples: list[str] = []
    pinned: dict[str, int] = {}
    for e in data.get("examples", []) or []:
        if isinstance(e, dict):  # {case: ID, line: N}: the winner's evidence must include input line N
            if "case" not in e:
                fail("examples", "an example mapping needs a case (and may pin a line)")
                continue
            examples.append(str(e["case"]))
            if e.get("line") is not None:
                try:
                    pinned[str(e["case"])] = int(e["line"])
                except (TypeError, ValueError):
                    fail("line", f"an example's line must be a number, got {e['line']!r}")
        else:
            examples.append(str(e))
    return examples, pinned


def _confidence(data: dict, fail) -> float:
    try:
        conf = float(data.get("confidence", 0.8))
    except (TypeError, ValueError):
        conf = 0.0
    if not 0 < conf <= 1:
        fail("confidence", "confidence must be in (0, 1]")
    return conf


def _tier(data: dict, fail) -> tuple[str, tuple[str, ...]]:
    """The rule's tier, and warnings for `rules lint`: the old shape still loads (`priority: N` as the tier of its
    band, `fallback: true` as `tier: fallback`), so user folders and rules written before tiers keep working."""
    if "tier" in data:
        tier = data["tier"]
        if tier not in TIER_NAMES:
            fail("tier", f"unknown tier {tier!r} (one of {', '.join(TIER_NAMES)})", tier)
        old = [k for k in ("priority", "fallback") if k in data]
        return str(tier), tuple(f"{k}: is ignored next to tier: (remove it)" for k in old)
    if data.get("fallback") is True:
        return "fallback", ("fallback: true is deprecated: write tier: fallback",)
    if "priority" in data:
        try:
            prio = int(data["priority"])
        except (TypeError, ValueError):
            fail("priority", f"priority must be an integer, got {data['priority']!r} (better: a tier)")
            return "generic", ()
        from logdoctor.matching.decide import tier_for_priority

        tier = tier_for_priority(prio)
        return tier, (f"priority: {prio} is deprecated: it loads as tier: {tier} (docs/rules.md, Precedence)",)
    return "generic", ("no tier: it defaults to generic (docs/rules.md, Precedence: choose one)",)


def _check_patterns(lf: LeafNode, *, compiled: dict, fail) -> None:
    for p in lf.patterns:
        _check_regex(lf.name, p, compiled, fail)


def _check_regex(key: str, p: str, compiled: dict, fail) -> None:
    """lint/test: the pattern must pass regexsafe.problem (length, nesting, compiles, no backtracking risk)."""
    from logdoctor.matching.regexsafe import problem

    why = problem(p)
    if why:
        fail(key, f"bad regex {p[:120]!r}: {why}", p)
        return
    compiled[p] = re.compile(p)
