"""The deploy-time side: follow a unit until ready or failed, write the verdict into the journal, edit the
unit's launch command (drop-ins)."""
