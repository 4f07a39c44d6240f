"""The console script: the start-up fast path (entry), the click group (app) and one module per command."""
