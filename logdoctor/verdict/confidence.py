"""Every change made to a verdict's confidence after the rules and the classifier decided, with its named number.

Why one module: "why this confidence?" used to need api.py, crossattempt.py and classify/runtime.py besides
matching/decide.py (which holds the deciding numbers: scores, the decisive threshold, the classifier combination).
`calibration.adjust` (classifier alone, one hint line) is the one adjustment still kept in its own module. It
imports nothing, so every layer may read it.
"""

from __future__ import annotations

from typing import Final

# the window ends inside the decisive traceback (or before the final error): less sure, never decisive
CUT_WINDOW_FACTOR: Final = 0.85
CUT_WINDOW_CAP: Final = 0.7
# the classifier's probability as a candidate's confidence: never certain either way
CLASSIFIER_FLOOR: Final = 0.01
CLASSIFIER_CEILING: Final = 0.99
# the attempt history escalates to a suspected hardware fault (crossattempt.py)
REGRESSION_BASE: Final = 0.8  # the previous attempt's fix was applied and it fails as early or earlier
NO_FLAG_EXPLAINS_BASE: Final = 0.75  # an earlier attempt got further; no differing lever acts that early
HEALTHY_ELSEWHERE_BONUS: Final = 0.08  # and the same or a larger config came up on another host
# the log's own cause, kept as an alternative under the escalation
DEMOTED_FACTOR: Final = 0.3
DEMOTED_CAP: Final = 0.5
# the fleet circuit breaker: the same hardware verdict on many hosts reads as software, not hardware
BREAKER_CAP: Final = 0.5


def cut_window(conf: float) -> float:
    """The confidence of a verdict whose window cut its decisive error."""
    return round(min(conf * CUT_WINDOW_FACTOR, CUT_WINDOW_CAP), 2)


def classifier(p: float) -> float:
    """A classifier probability as a candidate confidence (unrounded)."""
    return max(min(p, CLASSIFIER_CEILING), CLASSIFIER_FLOOR)


def escalation(regression: bool, healthy_elsewhere: bool) -> float:
    """The confidence of the history's hardware-fault escalation (unrounded)."""
    base = REGRESSION_BASE if regression else NO_FLAG_EXPLAINS_BASE
    return base + HEALTHY_ELSEWHERE_BONUS if healthy_elsewhere else base


def demoted(conf: float) -> float:
    """The log's own cause when the history escalated past it."""
    return round(min(DEMOTED_CAP, conf * DEMOTED_FACTOR), 2)


def breaker(conf: float) -> float:
    """A hardware verdict the fleet circuit breaker doubts."""
    return round(min(conf, BREAKER_CAP), 2)
