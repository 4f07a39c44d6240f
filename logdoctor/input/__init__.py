"""Input: bytes from files, pipes, archive members and journals, under one decompression and input policy,
read into Records (outer formats peeled, damage counted)."""
