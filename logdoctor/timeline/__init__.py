"""Timeline: records -> events -> per-rank phases (one declared state machine) -> attempts, with the
effective config and the decisive error of each attempt."""
