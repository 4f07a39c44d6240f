"""Issue 18's trust boundaries on the explain side, through the CLI on real files: rule files are code you run
(YAML aliases, catastrophic and deeply nested regexes, format strings), evidence provenance (a logged prompt or an
exception quoting "NVRM: Xid ... 79" is no hardware evidence; triage agrees with explain on application Xids),
bounded explain state, and log text made visible on a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logdoctor.core.records import Record, kernel_sourced
from logdoctor.input import read, stream
from logdoctor.matching import template
from logdoctor.matching.regexsafe import nesting, problem
from logdoctor.render.visible import visible_lines as visible

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
PFX = "May 22 10:31:59 h200-qwen-03 python3[115949]: "
RULE_HEAD = "id: t.evil\ncause: kv_cache_oom\ntitle: a long enough title\nengines: [any]\ntier: generic\n"


def cli(*args, env=None, timeout=120, pre=""):
    """The CLI as a subprocess; `pre` runs first in the child (e.g. to hide the re2 module)."""
    code = f"{pre}\nimport sys\nfrom logdoctor.cli.entry import main\nsys.argv = ['logdoctor', *sys.argv[1:]]\nmain()"
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=e, timeout=timeout
    )
    return p.returncode, p.stdout, p.stderr


NO_RE2 = "import sys; sys.modules['re2'] = None"


def seed_with(tmp_path: Path, line: str, at: int = 40, name: str = "x.log") -> Path:
    lines = SEED.read_text().split("\n")
    lines.insert(at, line)
    p = tmp_path / name
    p.write_text("\n".join(lines))
    return p


def rule_dir(tmp_path: Path, body: str, name: str = "r.yaml") -> Path:
    d = tmp_path / "rules"
    (d / "kv_cache_oom").mkdir(parents=True, exist_ok=True)
    (d / "kv_cache_oom" / name).write_text(RULE_HEAD + body)
    return d


def one_line_error(rc: int, err: str, *words: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err and "RecursionError" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("logdoctor:")]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, err)


# ---------------------------------------------------------------------------------------------- rule files (F7-F9)


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    body = "match:\n  any:\n    - &a0 {message: 'zzzq'}\n"
    for i in range(1, 9):
        body += f"    - &a{i} {{any: [{', '.join([f'*a{i - 1}'] * 10)}]}}\n"
    d = rule_dir(tmp_path, body + "explain: x\n", "laughs.yaml")
    t = time.monotonic()
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    one_line_error(rc, err, "laughs.yaml:8", "anchor")
    rc, out, err = cli("rules", "lint", str(d))
    assert rc == 2 and "laughs.yaml:8" in err and "1 problems" in out
    assert time.monotonic() - t < 60


def test_yaml_depth_and_node_caps(tmp_path):
    deep = "match: " + "{all: [" * 40 + "{message: x}" + "]}" * 40 + "\n"
    rc, _, err = cli("rules", "lint", str(rule_dir(tmp_path, deep)))
    assert rc == 2 and "nested over 32 levels" in err
    wide = "match:\n  any:\n" + "".join(f"    - {{message: 'w{i}'}}\n" for i in range(3000))
    rc, _, err = cli("rules", "lint", str(rule_dir(tmp_path, wide)))
    assert rc == 2 and "over 5000 YAML nodes" in err


def test_overlapping_alternation_runs_under_re2_and_is_linted(tmp_path):
    d = rule_dir(tmp_path, "match: {message: '^(a|aa)+$'}\nexplain: x\n", "cat.yaml")
    log = seed_with(tmp_path, PFX + "a" * 47 + "!")
    t = time.monotonic()
    rc, out, err = cli("explain", "--no-history", "--rules", str(d), str(log))
    assert rc == 1 and "kv_cache_oom" in out, err  # RE2 runs it in linear time
    assert time.monotonic() - t < 60
    rc, out, err = cli("rules", "lint", str(d))
    assert rc == 2 and "cat.yaml:6: bad regex '^(a|aa)+$'" in err and "catastrophic backtracking" in err
    # without RE2 the backtracking lint refuses it before any line is read
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(log), pre=NO_RE2)
    one_line_error(rc, err, "cat.yaml:6", "bad regex", "(a|aa)+")


def test_a_pattern_re2_cannot_compile_is_linted_first(tmp_path):
    # a look-behind does not compile under RE2: Python's engine runs it, only after the lint
    d = rule_dir(tmp_path, "match: {message: '(?<=x)(a|aa)+$'}\nexplain: x\n")
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    one_line_error(rc, err, "r.yaml:6", "bad regex")
    d = rule_dir(tmp_path, "match: {message: '(?<=memory)\\. Please try'}\nexplain: x\n", "ok.yaml")
    (d / "kv_cache_oom" / "r.yaml").unlink()
    rc, out, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    assert rc == 1 and "kv_cache_oom" in out, err


def test_deeply_nested_groups_are_a_bad_regex_naming_the_file(tmp_path):
    pat = "(" * 2000 + "a" + ")" * 2000
    d = rule_dir(tmp_path, f"match: {{message: '{pat}'}}\nexplain: x\n", "nest.yaml")
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    one_line_error(rc, err, "nest.yaml:6", "bad regex", "nested 2000 deep")
    rc, _, err = cli("rules", "lint", str(d))
    assert rc == 2 and "nest.yaml:6: bad regex" in err and "Traceback" not in err


def test_a_bad_regex_names_its_file(tmp_path):
    d = rule_dir(tmp_path, "match: {message: '(unclosed'}\nexplain: x\n", "bad.yaml")
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED), pre=NO_RE2)
    one_line_error(rc, err, "bad.yaml:6", "bad regex '(unclosed'")
    rc, _, err = cli("explain", "--no-history", str(SEED), env={"LOGDOCTOR_RULES_PATH": str(d)})
    one_line_error(rc, err, "bad.yaml:6", "bad regex '(unclosed'")


@pytest.mark.parametrize(
    "text",
    [
        "x {weights_gb:>4000000000}",
        "format {mem_fraction.__class__.__mro__}",
        "{mem_fraction[0]}",
        "{mem_fraction!r}",
        "{0}",
        "a } b",
    ],
)
def test_explain_text_substitutes_names_only(tmp_path, text):
    body = f"match: {{error: 'Not enough memory'}}\nexplain: '{text}'\n"
    d = rule_dir(tmp_path, body, "f.yaml")
    t = time.monotonic()
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    one_line_error(rc, err, "f.yaml:7")
    assert time.monotonic() - t < 30


def test_fill_never_formats():
    vals = {"x": 0.88, "y": "a{b}"}
    assert template.fill("{x} and {y} {{z}} {missing}", vals, lambda k: f"<{k}>") == "0.88 and a{b} {z} <missing>"
    assert template.fill("{x:>999999999}", vals, lambda k: "?") == "{x:>999999999}"  # left as written
    assert template.check("The fraction is {mem_fraction}; weights {weights_gb} GB.") is None


def test_a_user_rule_with_names_renders(tmp_path):
    d = tmp_path / "rules" / "kv_cache_oom"
    d.mkdir(parents=True)
    (d / "f.yaml").write_text(
        "id: t.names\ncause: kv_cache_oom\ntitle: a long enough title\ntier: system\n"
        "confidence: 0.99\nmatch: {error: 'Not enough memory'}\n"
        "explain: 'pool too small at {mem_fraction}; braces {{kept}}'\n"
    )
    rc, out, err = cli("explain", "--no-history", "--format", "json", "--rules", str(d.parent), str(SEED))
    assert rc == 1, err
    assert json.loads(out)["explanation"] == "pool too small at 0.88; braces {kept}"


def test_rules_lint_reports_every_problem_with_its_line(tmp_path):
    d = tmp_path / "rules"
    (d / "kv_cache_oom").mkdir(parents=True)
    (d / "kv_cache_oom" / "a.yaml").write_text(
        RULE_HEAD + "match: {message: '(a+)+b', frame: '('}\nexplain: 'x {y.z}'\nfixes:\n  - {lever: nope, op: raise}\n"
    )
    (d / "kv_cache_oom" / "b.yaml").write_text(RULE_HEAD + "match: {bogus: 1}\n")
    (d / "kv_cache_oom" / "c.yaml").write_text("id: [unclosed\n")
    long_title = "t" * 400
    (d / "kv_cache_oom" / "d.yaml").write_text(f"id: t.d\ncause: kv_cache_oom\ntitle: {long_title}\nmatch: 7\n")
    rc, out, err = cli("rules", "lint", str(d))
    assert rc == 2
    for want in (
        "a.yaml:6: bad regex '(a+)+b'",
        "a.yaml:6: bad regex '('",
        "a.yaml:7: '{y.z}'",
        "a.yaml:9: unknown lever 'nope'",
        "b.yaml:6: unknown condition 'bogus'",
        "invalid YAML",
        "d.yaml:4: a condition must be a mapping",
    ):
        assert want in err, (want, err)
    assert "4 rule files" in out and int(out.split(", ")[1].split()[0]) >= 7
    unknown = next(line for line in err.splitlines() if "unknown condition 'bogus'" in line)
    assert len(unknown) > 200 and unknown.endswith(", not)")  # a long message is not cut


def test_the_bundled_rules_still_lint_clean():
    rc, out, err = cli("rules", "lint")
    assert rc == 0 and ", 0 problems" in out, err


def test_regex_checks():
    assert nesting(r"((a)(b))\(\)[(]") == 2
    assert "nested 100 deep" in (problem("(" * 100 + "a" + ")" * 100) or "")
    assert problem("^(a|aa)+$") and problem("((a)|(aa))*x")
    for ok in (r"(foo|far)+", r"(?:ab|cd)*", r"(a|ab)+", r"(x|y|xz)*q", r"Not enough memory\. Please try"):
        assert problem(ok) is None, ok


# ------------------------------------------------------------------------------------------- provenance (F2, N4)

FORGED = [
    # an SGLang --log-requests echo of a user's prompt
    PFX + "[2026-05-22 10:31:59] Receive: obj=GenerateReqInput(text='please summarise: NVRM: Xid (PCI:0000:3b:00): "
    "79, GPU has fallen off the bus')",
    # a prompt with a real newline, printed by the engine: its own journal line, under the engine's identifier
    PFX + "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus",
    # an exception message quoting the kernel's text
    PFX + "ValueError: cannot parse 'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus'",
    # a vLLM request echo
    PFX + "Received request cmpl-1: prompt: 'NVRM: Xid (PCI:0000:3b:00): 48, GPU has fallen off the bus', params: x",
]


@pytest.mark.parametrize("line", FORGED, ids=["sglang-echo", "own-line", "exception", "vllm-echo"])
def test_a_quoted_kernel_report_is_not_evidence(tmp_path, line):
    rc, out, err = cli("explain", "--no-history", "--format", "json", str(seed_with(tmp_path, line)))
    d = json.loads(out)
    assert rc == 1 and d["cause"] == "kv_cache_oom", (d["cause"], err)
    assert all("NVRM" not in e["text"] for e in d["evidence"])


@pytest.mark.parametrize(
    "line",
    [
        "May 22 10:31:59 h200-qwen-03 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus",
        "[ 8123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus",
    ],
    ids=["kernel-identifier", "dmesg-line"],
)
def test_the_kernels_own_report_still_counts(tmp_path, line):
    rc, out, err = cli("explain", "--no-history", "--format", "json", str(seed_with(tmp_path, line)))
    assert json.loads(out)["cause"] == "hardware_fault", err


def test_kernel_sourced():
    def rec(line: str) -> Record:
        return read.read_lines([line]).records[0]

    assert kernel_sourced(rec("May 22 10:31:59 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x"))
    assert kernel_sourced(rec("[  99.945504] NVRM: Xid (PCI:0000:00:06): 43, pid=787, name=python3"))
    assert kernel_sourced(rec("[Fri May 22 10:31:59 2026] NVRM: Xid (PCI:0000:00:06): 79, x"))
    assert kernel_sourced(rec("NVRM: Xid (PCI:0000:18:00): 13, pid=234183, name=x, Graphics SM Warp Exception"))
    assert not kernel_sourced(rec(PFX + "NVRM: Xid (PCI:0000:3b:00): 79, x"))
    assert not kernel_sourced(rec("[2026-05-22 10:31:59 TP0] NVRM: Xid (PCI:0000:3b:00): 79, x"))
    assert not kernel_sourced(rec("INFO: got text NVRM: Xid (PCI:0000:3b:00): 79, x"))


def test_journal_json_transport_decides(tmp_path):
    def entry(msg: str, transport: str, ident: str) -> str:
        return json.dumps(
            {
                "MESSAGE": msg,
                "_TRANSPORT": transport,
                "SYSLOG_IDENTIFIER": ident,
                "_HOSTNAME": "h",
                "__REALTIME_TIMESTAMP": "1779445919000000",
            }
        )

    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus"
    forged = read.read_lines([entry(xid, "stdout", "python3")]).records[0]
    real = read.read_lines([entry(xid, "kernel", "kernel")]).records[0]
    assert not kernel_sourced(forged) and kernel_sourced(real)


def _triage_md(path: Path) -> str:
    rc, out, err = cli("triage", str(path), "--format", "markdown", timeout=300)
    assert rc in (0, 1), err
    return out


def test_triage_agrees_with_explain_on_xids(tmp_path):
    pytest.importorskip("pandas")
    app = ROOT / "fixtures" / "journals" / "vllm-illegal_memory_access-serving-xid13" / "journal.log"
    rc, out, _ = cli("explain", "--no-history", "--format", "json", str(app))
    assert json.loads(out)["cause"] == "illegal_memory_access"
    assert "Suspect hosts" not in _triage_md(app)  # Xid 13 is the program's fault, not the host's
    forged = seed_with(tmp_path, FORGED[0], name="forged.log")
    assert "Suspect hosts" not in _triage_md(forged)
    real = seed_with(
        tmp_path,
        "May 22 10:31:59 h200-qwen-03 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, "
        "name=python3, GPU has fallen off the bus",
        name="real.log",
    )
    md = _triage_md(real)
    assert "Suspect hosts" in md and "h200-qwen-03" in md and "79" in md


# ----------------------------------------------------------------------------------------- bounded state (F10)


def _tracebacks(path: Path, n: int) -> None:
    seed = SEED.read_text().splitlines()
    with path.open("w") as fh:
        fh.write("\n".join(seed[:39]) + "\n")
        for i in range(n):
            fh.write(
                f'{PFX}Traceback (most recent call last):\n{PFX}  File "/srv/app/mod{i}.py", line {i}, in f{i}\n'
                f"{PFX}    do_{i}()\n{PFX}ValueError{i % 97}: distinct failure number {i}\n"
            )
        fh.write("\n".join(seed[39:]) + "\n")


def test_evidence_store_is_bounded_in_whole_stanzas(tmp_path, monkeypatch):
    p = tmp_path / "tb.log"
    _tracebacks(p, 3000)
    monkeypatch.setattr(stream, "EVIDENCE_HEAD", 301)
    monkeypatch.setattr(stream, "EVIDENCE_RING", 299)
    got = stream.read_file(str(p), chunk=1 << 16)
    whole = read.read_bytes(p.read_bytes(), str(p))
    assert got.stats == whole.stats  # every line still read and counted
    assert got.stats.evidence_dropped > 10000 and "evidence lines" in got.stats.line()
    assert len(got.records) < 1000
    ours = [
        r
        for r in got.records
        if "/srv/app/" in r.msg
        or "do_" in r.msg
        or "distinct failure" in r.msg
        or (r.msg.startswith("Traceback") and r.line > 39)
    ]
    # no half traceback at either seam: each kept traceback has its header, frame, code and exception line
    starts = [i for i, r in enumerate(got.records) if r.msg.startswith("Traceback (most recent")]
    for i in starts[:-2]:
        seq = [got.records[i + k].msg for k in range(4)]
        if "/srv/app/" in seq[1]:
            assert "do_" in seq[2] and "distinct failure" in seq[3], seq
    assert ours[0].msg.startswith("Traceback")
    from logdoctor.classify.runtime import load_default
    from logdoctor.matching.loader import load_rules
    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import diagnose_timeline

    def verdict(res):
        d = diagnose_timeline(build(res.records), res, load_rules(()), classifier=load_default()).to_dict()
        return d["cause"], d["phase"], d["confidence"], [e["line"] for e in d["evidence"]]

    assert verdict(got) == verdict(whole)


def test_cli_many_tracebacks_keep_the_verdict(tmp_path):
    p = tmp_path / "tb.log"
    _tracebacks(p, 26000)  # 9 MB: over the streaming threshold
    assert p.stat().st_size > stream.STREAM_MIN
    rc, out, err = cli("explain", "--no-history", "--stats", "--format", "json", str(p), timeout=600)
    assert rc == 1 and json.loads(out)["cause"] == "kv_cache_oom", err
    assert "evidence lines from the middle not kept" in err and "not kept (bounded store)" in err


# -------------------------------------------------------------------------------------------------- terminal (F21)


def test_visible():
    s = "a\u009b2J b\x08\x08XX c\u202eevil\u202c \x1b]0;T\x07 \x7f\tz"
    assert visible(s) == "a<U+009B>2J b^H^HXX c<U+202E>evil<U+202C> ^[]0;T^G ^?\tz"
    assert visible(visible(s)) == visible(s)


def test_log_controls_are_visible_in_explain_output(tmp_path):
    lines = SEED.read_text().split("\n")
    i = next(k for k, ln in enumerate(lines) if "RuntimeError: Not enough memory" in ln)
    lines[i] += " \u009b2J BS\x08\x08\x08XX \u202eevil\u202c"
    p = tmp_path / "ctl.log"
    p.write_text("\n".join(lines))
    for fmt in ("text", "markdown"):
        # wide enough that the evidence line is shown whole (the text is fitted to COLUMNS and cut visibly)
        rc, out, err = cli("explain", "--no-history", "--format", fmt, str(p), env={"COLUMNS": "200"})
        assert rc == 1, err
        assert "<U+009B>2J" in out and "^H^H^HXX" in out and "<U+202E>evil" in out
        assert not any(c in out for c in "\u009b\x08\u202e\x1b")


@pytest.mark.parametrize("match", ["{flag: 5}", "{systemd: 5}", "{attempts: 3}", "{exit_code: x}"])
def test_a_user_rule_of_the_wrong_shape_is_refused_not_a_crash(tmp_path, match):
    # found by the rule-file fuzz target: the explain path checked keys, not the shape of a leaf's value (exit 4)
    d = rule_dir(tmp_path, f"match: {match}\nexplain: x\n", "shape.yaml")
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    one_line_error(rc, err, "shape.yaml", "schema")
    rc, out, err = cli("rules", "lint", str(d))
    assert rc == 2 and "shape.yaml" in err and "Traceback" not in err


def test_env_patterns_of_user_rules_are_guarded_too(tmp_path):
    d = rule_dir(tmp_path, "match: {env: {CUDA_VISIBLE_DEVICES: '^(a|aa)+$'}}\nexplain: x\n", "env.yaml")
    rc, _, err = cli("explain", "--no-history", "--rules", str(d), str(SEED), pre=NO_RE2)
    one_line_error(rc, err, "env.yaml", "bad regex")


def test_fuzz_crash_reading_with_an_unknown_op(tmp_path):
    # atheris, rule_file target: `reading: {name: static_left, "lt\xff\xff05": null}` compared None with a float
    d = rule_dir(tmp_path, 'match: {reading: {name: static_left, "lt\\xff05": null}}\nexplain: x\n', "rd.yaml")
    rc, out, err = cli("explain", "--no-history", "--rules", str(d), str(SEED))
    assert rc == 1 and "kv_cache_oom" in out and "Traceback" not in err, err
    from fuzz.targets import target_rule_file

    target_rule_file(b"\x00" + (d / "kv_cache_oom" / "rd.yaml").read_bytes())


_RULE_BITS = [b"&a ", b"*a", b"{x:>9}", b"(a|aa)+", b"((((", b"flag: 5", b"  - message: '", b"\n  any:\n", b"\xff"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 255), st.integers(0, 255), st.binary(max_size=80) | st.sampled_from(_RULE_BITS))
def test_rule_file_fuzz_target_property(where, which, junk):
    """The rule_file fuzz target's invariant (only a one-line RuleError, bounded) on bundled rules with junk spliced
    in; atheris runs the same target for campaigns (fuzz/run.py rule_file)."""
    from fuzz.targets import target_rule_file

    target_rule_file(bytes([where | 1, which]) + junk)


def test_weak_rules_outvoted_are_named_not_denied():
    """F22: weak rules matched, the classifier disagrees and decides: the text must not say no rule matched."""
    from logdoctor.matching.conditions import Hit
    from logdoctor.matching.decide import NO_RULE_SENTENCE, combine
    from logdoctor.matching.loader import Rule
    from logdoctor.matching.rank import Candidate

    weak = Rule(
        id="t.weak", cause="config_invalid", title="t", engines=("any",), match={}, tier="generic", confidence=0.5
    )

    class Clf:
        threshold = 0.5

        def synth(self, tl, attempt, cause, p, rules, score, *, alternative=False):
            rule = Rule(
                id="classifier",
                cause=cause,
                title=cause,
                engines=("any",),
                match={},
                explain=NO_RULE_SENTENCE + " The classifier reads it as " + cause + ".",
            )
            return Candidate(rule, Hit(), score, confidence=p)

    out = combine(Clf(), None, None, [Candidate(weak, Hit(), 40.0)], {"kv_cache_oom": 0.9, "config_invalid": 0.01})
    assert out[0].rule.id == "classifier" and out[0].cause == "kv_cache_oom"
    assert NO_RULE_SENTENCE not in out[0].rule.explain and "t.weak" in out[0].rule.explain
    # no rule at all: the sentence stays true and stays
    out = combine(Clf(), None, None, [], {"kv_cache_oom": 0.9})
    assert out[0].rule.explain.startswith(NO_RULE_SENTENCE)
