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

# Past EXPANDED_CAP, an input that expands more than BOMB_RATIO times its compressed size is a decompression bomb and
# stops there (gzip tops out near 1000:1 on zeros; real logs compress 5-50:1, very repetitive ones up to ~150:1).
BOMB_RATIO = 400

# triage streams its inputs (memory stays flat), so its caps bound time and disk, not memory: each log or tar member
# decompresses to at most STREAM_EXPANDED_CAP, one task (an input with all its members) to TASK_EXPANDED_CAP, and a
# whole run to RUN_EXPANDED_CAP: once the finished tasks reach it, the inputs not yet started are listed, not read.
STREAM_EXPANDED_CAP = 8 * 1024 * 1024 * 1024
TASK_EXPANDED_CAP = 64 * 1024 * 1024 * 1024
RUN_EXPANDED_CAP = 256 * 1024 * 1024 * 1024

# Header fields of archives are read before any data, so each is bounded: a gzip FNAME/FCOMMENT, a tar GNU long name
# or a PAX header block (a 2 GiB long-name header would otherwise be read into memory whole).
GZIP_FIELD_CAP = 64 * 1024
TAR_HEADER_CAP = 1024 * 1024
TAR_NAME_CAP = 4096  # PATH_MAX: a longer member name is not a file anyone wrote

# A tar member that is a systemd journal file is copied to a temporary folder for the journal reader; journald's own
# files are at most 128 MiB by default (SystemMaxFileSize), so a larger one is refused instead of filling /tmp.
JOURNAL_MEMBER_CAP = 512 * 1024 * 1024

# An archive of many members lists at most this many members that gave nothing (empty, skipped); the rest are
# counted in one entry, so a 200 000-member tar bomb does not make a 200 000-row report.
MAX_LISTED = 1000

# explain reading a pipe or FIFO that gives no data for this long says so on stderr (is the writer still running?).
WAIT_NOTE_SECONDS = 5.0

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
