"""Fuzz targets shared by the atheris harness (fuzz/run.py) and the hypothesis suite (tests/test_fuzz_properties.py).

Each target takes raw bytes, drives one stage of logdoctor the way a user's input reaches it, and asserts the
stage's invariants (docs/reliability.md): no unhandled exception (an InputError, the documented refusal, is fine
where the CLI would print it), every line accounted for (read == parsed + unparsed), and JSON that validates.
Keep each target cheap: the harness runs it a million times.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from logdoctor.core.errors import InputError

ROOT = Path(__file__).resolve().parent.parent


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _check_stats(res) -> None:
    st = res.stats
    assert st.read == st.parsed + st.unparsed, st
    assert 0 <= st.skipped <= st.parsed, st
    for r in res.records:
        assert r.line >= 1, r


def target_read(data: bytes) -> None:
    """bytes → (compression sniffing, refusal gate, repair) → records."""
    from logdoctor.input.read import check_bytes, read_bytes
    from logdoctor.input.sources.files import from_bytes

    try:
        raw = from_bytes(data, "<fuzz>")
        check_bytes(bytes(raw.data), raw.origin)
    except InputError as exc:
        assert "\n" not in str(exc), exc  # the refusal is one line
        return
    res = read_bytes(bytes(raw.data), raw.origin, damage=raw.damage)
    _check_stats(res)


def target_formats(data: bytes) -> None:
    """Text lines → outer-format recognition (journal short/iso/json/export, docker, compose, raw) + engine detection."""
    from logdoctor.engines.detect import detect
    from logdoctor.input.formats import journal_export
    from logdoctor.input.read import read_lines

    lines = _text(data).split("\n")
    res = read_lines(lines, "<fuzz>")
    assert res.stats.read == len(lines)
    _check_stats(res)
    covered = {r.line for r in res.records} | {u.line for u in res.unparsed}
    assert covered == set(range(1, len(lines) + 1)), covered
    engine, _version = detect(res.records)
    assert isinstance(engine, str)
    entries, bad = journal_export.parse_export(data)
    assert all(e.first_line >= 1 for e in entries)


def target_prefix(data: bytes) -> None:
    """One message → engine prefix split (SGLang [time TPn], vLLM (Worker_TPn pid=) LEVEL ..., torch ranks)."""
    from logdoctor.engines.prefixes import split_prefix

    msg = _text(data).replace("\n", " ")
    p = split_prefix(msg)
    assert isinstance(p.body, str)
    assert len(p.body) <= len(msg), (p.body, msg)


def target_config(data: bytes) -> None:
    """The config-dump grammars: SGLang server_args, vLLM non-default args / Namespace / engine config, command lines."""
    from logdoctor.engines import config_dump as cd

    text = _text(data)
    for parse in (cd.parse_server_args, cd.parse_py_dict, cd.parse_namespace, cd.parse_vllm_engine_config):
        dump = parse(text)
        assert isinstance(dump.values, dict)
    try:
        cd.parse_literal(text)
    except ValueError:
        pass
    cl = cd.parse_command_line(text)
    assert isinstance(cl.args, dict)


@lru_cache(maxsize=1)
def _rules():
    from logdoctor.matching.loader import load_rules

    return load_rules(())


@lru_cache(maxsize=1)
def _schema_validator():
    import jsonschema

    schema = json.loads((ROOT / "logdoctor" / "schemas" / "diagnosis.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _seed_lines() -> list[str]:
    """Real log lines to splice fuzz bytes into, so the rule and explain targets reach deep states."""
    p = ROOT / "fixtures" / "journals" / "seed-attempt1-kv-oom" / "journal.log"
    return p.read_text(encoding="utf-8").split("\n") if p.exists() else []


_SEED = _seed_lines()


def _spliced(data: bytes) -> bytes:
    """The first byte picks where the fuzz bytes go into a real failing log (or 0: the fuzz bytes alone)."""
    if not data or not _SEED or data[0] % 4 == 0:
        return data[1:]
    at = data[0] % len(_SEED)
    return "\n".join(_SEED[:at]).encode() + b"\n" + data[1:] + b"\n" + "\n".join(_SEED[at:]).encode()


def target_rules(data: bytes) -> None:
    """Timeline + every bundled rule evaluated over each failed attempt."""
    from logdoctor.input.read import read_bytes
    from logdoctor.matching.conditions import Context
    from logdoctor.matching.rank import candidates
    from logdoctor.timeline.build import build

    res = read_bytes(_spliced(data), "<fuzz>")
    tl = build(res.records)
    for a in tl.attempts:
        if a.failed:
            for c in candidates(_rules(), Context.build(tl, a)):
                assert c.rule.cause == c.cause or c.rule.id == "classifier"


def target_explain(data: bytes) -> None:
    """explain end to end (rules + classifier + fix plan) → JSON that validates against the schema."""
    from logdoctor.classify.runtime import load_default
    from logdoctor.verdict.api import diagnose

    try:
        d = diagnose(_spliced(data), loaded_rules=_rules(), classifier=load_default())
    except InputError:
        return
    doc = d.to_dict()
    json.dumps(doc)
    errors = list(_schema_validator().iter_errors(doc))
    assert not errors, errors[0].message
    assert d.exit_code in (0, 1, 3)


_ARCHIVE_CAP = 1 << 20


def _drain(stream, limit: int) -> int:
    n = 0
    while n < limit:
        piece = stream.read(1 << 16)
        if not piece:
            break
        n += len(piece)
    return n


def target_archive(data: bytes) -> None:
    """Any bytes as triage opens an input: compression layers by magic, then tar members one by one, each member's
    own layers. Invariants: only the documented errors, the caps hold, a member never costs the archive."""
    import io

    from logdoctor.input.sources import archive, tarstream

    budget = archive.Budget(4 * _ARCHIVE_CAP)
    try:
        opened = archive.open_layers(io.BytesIO(data), "<fuzz>", _ARCHIVE_CAP, budget)
    except InputError:
        return  # zstd without the zstandard package
    head = opened.stream.peek(512)[:512]
    if not tarstream.is_tar(head):
        assert _drain(opened.stream, 1 << 30) <= _ARCHIVE_CAP + (1 << 20)
        return
    try:
        for m in tarstream.TarReader(opened.stream):
            assert len(m.name.encode("utf-8", "replace")) <= 4096 + 8, len(m.name)
            if m.body is None:
                continue
            inner = archive.open_layers(m.body, m.name, _ARCHIVE_CAP, budget)
            assert _drain(inner.stream, 1 << 30) <= _ARCHIVE_CAP + (1 << 20)
    except (tarstream.TarError, EOFError, InputError):
        pass
    assert budget.left >= -(1 << 20) * 4, budget.left


@lru_cache(maxsize=1)
def _tar_seed() -> bytes:
    """A small real tar (GNU format, a long name, a symlink, a gzip member) whose header bytes the fuzzer rewrites."""
    import gzip
    import io
    import tarfile

    body = "\n".join(_SEED[:20]).encode() or b"line\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, payload in (("a.log", body), ("d/" + "n" * 150 + ".log", body), ("b.log.gz", gzip.compress(body))):
            ti = tarfile.TarInfo(name)
            ti.size = len(payload)
            tar.addfile(ti, io.BytesIO(payload))
        ln = tarfile.TarInfo("link.log")
        ln.type, ln.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(ln)
    return buf.getvalue()


def target_tar_headers(data: bytes) -> None:
    """A real tar with fuzz bytes written over its header fields (the first two bytes pick the offset): sizes, types,
    checksums, long names, PAX records. The reader must stay within its caps and raise only TarError."""
    if len(data) < 3:
        return
    tar = bytearray(_tar_seed())
    at = int.from_bytes(data[:2], "big") % len(tar)
    patch = data[2:]
    tar[at : at + len(patch)] = patch
    target_archive(bytes(tar))


def target_nested(data: bytes) -> None:
    """Fuzz bytes through 1-3 compression layers (gzip/xz/bzip2/zstd), one byte damaged: explain's reader
    (sources.files.from_bytes) and triage's (open_layers, streamed) must yield the same bytes."""
    import bz2
    import gzip
    import io
    import lzma

    from logdoctor.input.sources import archive
    from logdoctor.input.sources.files import from_bytes

    if len(data) < 3:
        return
    # fast settings (a default xz preset sets up a 64 MiB dictionary per call: 5 inputs a second)
    comp = [lambda b: gzip.compress(b, 1), lambda b: lzma.compress(b, preset=0), lambda b: bz2.compress(b, 1)]
    try:
        import zstandard

        comp.append(zstandard.ZstdCompressor(level=1).compress)
    except ImportError:
        pass
    blob = data[3:]
    for i in range(1 + data[0] % 3):
        blob = comp[(data[0] >> (2 * i + 2)) % len(comp)](blob)
    if data[1] and blob:
        pos = (data[1] * 7919 + data[2]) % len(blob)
        blob = blob[:pos] + bytes([blob[pos] ^ data[2] or 1]) + blob[pos + 1 :]
    try:
        whole = bytes(from_bytes(blob, "<fuzz>").data)
    except InputError:
        whole = None
    opened = archive.open_layers(io.BytesIO(blob), "<fuzz>")
    streamed = bytearray()
    while piece := opened.stream.read(1 << 16):
        streamed += piece
    if whole is not None:
        assert whole == bytes(streamed), (len(whole), len(streamed))
    else:
        assert not streamed or archive.sniff(bytes(streamed[:8])) is not None or streamed[257:262] == b"ustar"


TARGETS = {
    "read": target_read,
    "formats": target_formats,
    "prefix": target_prefix,
    "config": target_config,
    "rules": target_rules,
    "explain": target_explain,
    "archive": target_archive,
    "tar_headers": target_tar_headers,
    "nested": target_nested,
}


def seeds(limit: int = 200) -> list[bytes]:
    """Seed inputs: heads and tails of the fixture journals, in every outer format we have."""
    out: list[bytes] = []
    root = ROOT / "fixtures" / "journals"
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".log", ".export", ".json", ".txt") and p.stat().st_size < 2_000_000:
            b = p.read_bytes()
            out += [b[:2048], b[-2048:]]
        if len(out) >= limit:
            break
    return out


if __name__ == "__main__":  # a smoke run of every target on the seeds: python fuzz/targets.py
    for name, fn in TARGETS.items():
        for s in seeds(40):
            fn(s)
        print(name, "ok")


# ---------------------------------------------------------------------------------------------------------------------
# rule files (issue 18): a user's rule folder is code logdoctor runs


@lru_cache(maxsize=1)
def _rule_texts() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((ROOT / "rules").rglob("*.yaml"))]


@lru_cache(maxsize=1)
def _seed_context():
    from logdoctor.input.read import read_lines
    from logdoctor.matching.conditions import Context
    from logdoctor.timeline.build import build

    tl = build(read_lines(_SEED, "<seed>").records)
    return next(Context.build(tl, a) for a in tl.attempts if a.failed)


def _rule_text(data: bytes) -> str:
    """The first byte picks a bundled rule file and a line to put the fuzz bytes at (or 0 mod 4: the bytes alone)."""
    texts = _rule_texts()
    if len(data) < 2 or not texts or data[0] % 4 == 0:
        return _text(data[1:])
    lines = texts[data[1] % len(texts)].split("\n")
    at = data[0] % (len(lines) + 1)
    return "\n".join(lines[:at] + [_text(data[2:])] + lines[at:])


def target_rule_file(data: bytes) -> None:
    """Rule-file text → the loader's checks (YAML without anchors, node and depth caps, templates, regex lint) →
    a rule that loads is compiled as a user rule (RE2 or the lint) and run over the seed log, its explain text
    filled. Only a one-line RuleError naming the file may come out, and every step is bounded."""
    from logdoctor.core.errors import RuleError
    from logdoctor.matching import loader, template, yamlsafe
    from logdoctor.matching.rank import candidates

    text = _rule_text(data)
    try:
        doc = yamlsafe.load(text, "<fuzz>")
    except RuleError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("<fuzz>"), exc
        return
    if not isinstance(doc, dict):
        return
    from logdoctor.matching.schema import schema_problems

    problems = schema_problems(doc, "<fuzz>", text)  # explain checks a user folder as lint does
    assert all(p.startswith("<fuzz>") and "\n" not in p for p in problems), problems
    if problems:
        return
    rule = loader._build(doc, Path("<fuzz>"), text, compile_regexes=False, problems=problems)
    assert all(p.startswith("<fuzz>") and "\n" not in p for p in problems), problems
    if rule is None or problems:
        return
    try:
        loader.guard_regexes(rule)
    except RuleError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("<fuzz>"), exc
        return
    try:
        for c in candidates([rule], _seed_context()):
            template.fill(c.rule.explain, c.hit.captures, lambda k: "?")
    except RuleError as exc:
        assert "\n" not in str(exc), exc


TARGETS["rule_file"] = target_rule_file
