"""The bottom layer: the closed vocabularies, errors and exit codes, documented caps, the compiled-regex cache,
optional extras, progress, atomic writes and the Record shape. Imports nothing of logdoctor above it."""
