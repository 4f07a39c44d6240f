"""Rules: loading YAML rule files (loader), evaluating their conditions over a timeline (conditions), and
ranking the rules that fire (rank)."""
