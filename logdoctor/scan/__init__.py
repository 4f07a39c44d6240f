"""The line scan, shared by explain and triage: a byte stream → attempt segments and candidate lines.

`scan.py` cuts a decompressed stream into attempt segments with bounded memory, `prefilter.py` is the one compiled
prefilter (Hyperscan/RE2/`re`) that finds the lines that can matter, `boundary.py` asks the core reader whether a
candidate boundary is really a config dump, and `reader.py` turns a large text source into explain's ReadResult
through the same scan (every line of a small segment, head + hits + tail of a large one).
"""
