"""Is a prefilter boundary hit really a config dump? Asked of the core reader, with the log's own prefixes.

The prefilter finds `server_args=` anywhere on a raw line, but `attempts.split` cuts an attempt only where a
*message* starts with it, after the reader has peeled every prefix: journal headers, timestamps and levels, and the
process-manager wrappers of issue 10 (Ray "(Name pid=N, ip=A)", torchrun "[rank1]:", mpirun "[1,0]<stderr>:",
srun "0: ", kubectl "[pod/x/y] ", compose "svc-1  | ", or a prefix most lines share). A traceback line such as
`_launch_subprocesses(server_args=server_args)` is not a boundary; cutting there split one crash into pieces.

Some wrappers (srun labels, compose names, unknown shared prefixes) are recognised over the whole log, not per
line, so each candidate line is read after a sample of the log's first lines: the reader sees the same prefixes
it sees in `diagnose`. Candidates are rare (about one per attempt), so the cost does not matter.
"""

from __future__ import annotations

from logdoctor.engines import each

SAMPLE_LINES = 20
# the literal words of every engine's config dump (Engine.config_dump_words); one ending in "=" is also a keyword
# argument in traceback lines, so it needs the look-behind check below
_WORDS = tuple(w.encode() for w in each("config_dump_words") if not w.endswith("="))
_KWARGS = tuple(w.encode() for w in each("config_dump_words") if w.endswith("="))
_ARG_BEFORE = frozenset(b"_(,=.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class BoundaryCheck:
    def __init__(self, head: bytes):
        text = head.decode("utf-8", "replace")
        lines = text.split("\n")
        if not text.endswith("\n"):
            lines = lines[:-1]  # a cut last line
        self.sample = [l.rstrip("\r") for l in lines if l.strip()][:SAMPLE_LINES]

    def is_config(self, line: bytes) -> bool:
        """The line is a config dump / version banner where `attempts.split` would see one."""
        if not _maybe(line):
            return False
        from logdoctor.input.read import read_lines
        from logdoctor.timeline.attempts import _CONFIG

        text = line.decode("utf-8", "replace").rstrip("\r")
        rec = read_lines(self.sample + [text]).records[-1]
        return not rec.continuation and _CONFIG.search(rec.msg) is not None


def _maybe(line: bytes) -> bool:
    """Cheap reject: a message can start with server_args= only after a prefix; after a name, "(", ",", "=" or "."
    it is a call's argument (the other engines' dump words have no such look-alike)."""
    if any(w in line for w in _WORDS):
        return True
    for word in _KWARGS:
        i = line.find(word)
        while i >= 0:
            if i == 0 or line[i - 1] not in _ARG_BEFORE:
                return True
            i = line.find(word, i + 1)
    return False
