"""Verdict: the timeline, the rules and the classifier, plus facts from history and other attempts, decided
once into a frozen Diagnosis with its fix plan."""
