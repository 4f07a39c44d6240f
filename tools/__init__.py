"""Developer tools for logdoctor (not part of the installed package)."""
