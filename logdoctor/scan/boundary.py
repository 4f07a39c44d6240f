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
        # answers by the line's shape up to just past its dump words, digits as 0: a log's config lines differ in
        # their times, pids and ranks, and each reading costs a parse of the sample (~1 ms)
        self._known: dict[bytes, bool] = {}

    def is_config(self, line: bytes) -> bool:
        """The line is a config dump / version banner where `attempts.split` would see one."""
        at = _word_at(line)
        if at < 0:
            return False
        key = line[: at + _SHAPE].translate(_DIGITS)
        known = self._known.get(key)
        if known is None:
            from logdoctor.input.read import read_lines
            from logdoctor.timeline.attempts import _CONFIG

            text = line.decode("utf-8", "replace").rstrip("\r")
            rec = read_lines(self.sample + [text]).records[-1]
            known = not rec.continuation and _CONFIG.search(rec.msg) is not None
            if len(self._known) >= 256:
                self._known.clear()
            self._known[key] = known
        return known


_SHAPE = 96  # bytes past the dump word's start that a config pattern may read (a banner's version words)
_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def _word_at(line: bytes) -> int:
    """Where the last of the dump words that can start a message first appears (-1: none does): the line's shape up
    to there decides. Cheap reject: a message can start with server_args= only after a prefix; after a name, "(",
    ",", "=" or "." it is a call's argument (the other engines' dump words have no such look-alike)."""
    at = -1
    for w in _WORDS:
        at = max(at, line.find(w))
    for word in _KWARGS:
        i = line.find(word)
        while i >= 0:
            if i == 0 or line[i - 1] not in _ARG_BEFORE:
                at = max(at, i)
                break
            i = line.find(word, i + 1)
    return at
