"""atheris (libFuzzer) harness over fuzz/targets.py. Not part of CI; see fuzz/README.md.

    python fuzz/run.py TARGET [libFuzzer flags, e.g. -runs=200000 -timeout=10 -max_len=65536 CORPUS_DIR]

A crash (an exception that is not the documented InputError, or a broken invariant) stops the run and writes the
input to crash-<sha1>; a hang past -timeout seconds writes timeout-<sha1>. Reproduce with
`python fuzz/run.py TARGET crash-<sha1>` and turn it into a regression test in tests/test_fuzz_properties.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

with atheris.instrument_imports(include=["logdoctor"]):
    # every module a target reaches, imported here so that it is instrumented for coverage feedback
    import logdoctor.classify.runtime  # noqa: F401
    import logdoctor.engines.config_dump  # noqa: F401
    import logdoctor.engines.detect  # noqa: F401
    import logdoctor.engines.prefixes  # noqa: F401
    import logdoctor.input.formats.journal_export  # noqa: F401
    import logdoctor.input.read  # noqa: F401
    import logdoctor.input.sources.archive  # noqa: F401
    import logdoctor.input.sources.files  # noqa: F401
    import logdoctor.input.sources.tarstream  # noqa: F401
    import logdoctor.matching.conditions  # noqa: F401
    import logdoctor.matching.rank  # noqa: F401
    import logdoctor.timeline.build  # noqa: F401
    import logdoctor.verdict.api  # noqa: F401
from fuzz.targets import TARGETS, seeds  # noqa: E402


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: python fuzz/run.py {{{'|'.join(TARGETS)}}} [libFuzzer flags] [CORPUS_DIR]")
    name = sys.argv.pop(1)
    target = TARGETS[name]
    args = list(sys.argv)
    corpus = [a for a in args[1:] if not a.startswith("-")]
    if corpus and Path(corpus[0]).is_dir() and not any(Path(corpus[0]).iterdir()):
        for i, s in enumerate(seeds()):  # an empty corpus folder starts from the fixture journals
            (Path(corpus[0]) / f"seed-{i:04d}").write_bytes(s)
    atheris.Setup(args, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
