"""Renderers: Diagnosis/Timeline → text (a person at a terminal), json (scripts), markdown (incident tickets)."""
