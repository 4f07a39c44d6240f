from journal_export import journal_file  # noqa: F401  (real .journal files from export entries; tests/journal_export.py)
