"""Engine knowledge: line prefixes, phase markers, config dumps, per engine."""
