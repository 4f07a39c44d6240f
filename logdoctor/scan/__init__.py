"""The line scan, shared by explain and triage: a byte stream → attempt segments and candidate lines.

`scan.py` cuts a decompressed stream into attempt segments with bounded memory, `prefilter.py` is the one compiled
prefilter (Hyperscan/RE2/`re`) that finds the lines that can matter, `boundary.py` asks the core reader whether a
candidate boundary is really a config dump, `reader.py` turns a large text source into explain's ReadResult
through the same scan (every line of a small failing segment, head + hits + tail of a large one), and `sources.py`
is what the CLI and the API read (read_source_spec, read_any): a journal as entries, a small input whole, a large
one through the scan.
"""
