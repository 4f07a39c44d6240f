"""Where log bytes come from: files (plain or compressed), stdin, journal files and the live journal."""
