"""The documented caps (docs/reliability.md): what logdoctor does with input too large or too damaged to take whole.

Each cap keeps the useful part and says what was dropped, instead of refusing the log: a diagnosis of the rest of a
journal is worth more than an error about one line of it.
"""
from __future__ import annotations

# A line longer than this keeps its first LINE_CAP bytes; the rest is cut and counted (--stats, JSON window.damage).
# journald itself splits lines at 48 KiB (LineMax=), and the longest line in our fixtures and the dev corpus (an
# SGLang server_args dump) is under 5 KiB, so only request/prompt echoes (SGLang --log-requests) reach this.
LINE_CAP = 64 * 1024

# Rule regexes look at the first MATCH_CAP characters of a line. Together with the backtracking lint this bounds
# the work per line: even a regex of the form `A.*B` is quadratic only in this many characters.
MATCH_CAP = 8 * 1024

# Decompression is streamed and stops after this many decompressed bytes (a 1 MB gzip bomb expands to 2 GB);
# the part read so far is diagnosed and a warning says where it stopped.
EXPANDED_CAP = 256 * 1024 * 1024

# A source is read whole, but its first EARLY_SNIFF bytes are checked first, so an endless binary stream
# (/dev/zero, `cat /dev/urandom |`) is refused before it fills memory.
EARLY_SNIFF = 1024 * 1024

# How many bytes of the start are sampled to tell text from binary junk and to detect the encoding.
SNIFF_BYTES = 64 * 1024

# Binary junk: more than one control byte (other than tab, newline, CR, ESC, NUL) in BINARY_RATIO of the sample.
BINARY_RATIO = 20

# A user rule file larger than this is refused (a rule is a few KiB of YAML; the bundled ones are under 8 KiB).
RULE_FILE_CAP = 256 * 1024


def human(n: int) -> str:
    """Bytes in the unit a person reads (the caps are powers of two, so KiB/MiB/GiB)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"
