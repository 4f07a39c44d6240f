"""What happens after the ready line: a hang while serving.

After the service came up, most errors are one request's (decisive.is_request_error). A failure while serving needs
evidence that the engine itself stopped; one kind has no traceback at all: the engine stops answering (health checks
fail from then on, or a scheduler/detokenizer stops responding) and the operator's `systemctl stop` then times out
on SIGTERM (`State 'stop-sigterm' timed out`, `Failed with result 'timeout'`). That is a hang while serving, not a
start-up timeout: `startup_timeout` needs the *start* job to time out. Its advice is about the hang (the stuck
process, the last request, the NCCL / engine watchdogs), never TimeoutStartSec.
"""

from __future__ import annotations

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import SERVICE, SYSTEMD

_HEALTH_FAIL = rxcache.compile(
    r"[Hh]ealth ?check (?:failed|timed? ?out)|\"GET /health[^\"]*\" 5\d\d|/health\b.{0,80}"
    r"(?:timed? ?out|refused|503|504|500)|(?:[Dd]etokenizer|[Ss]cheduler|[Tt]okenizer ?[Mm]anager|"
    r"EngineCore)\w* (?:is )?not respon\w+|no response from (?:the )?(?:scheduler|engine|detokenizer)|"
    r"[Ll]iveness probe failed"
)
_HEALTH_OK = rxcache.compile(r"\"GET /health[^\"]*\" 200|[Hh]ealth ?check (?:ok|passed|succeeded)")
_STOP_TIMEOUT = rxcache.compile(r"State 'stop[\w-]*' timed out|Failed with result 'timeout'|stop operation timed out")


@dataclass
class Hang:
    """A server that stopped answering while serving: where it began and the lines that show it."""

    first_line: int
    evidence: list[tuple[int, str]] = field(default_factory=list)
    stop_timed_out: bool = False

    def explanation(self) -> str:
        tail = (
            " When the operator stopped it, it did not exit on SIGTERM within the stop timeout either, which is "
            "what a process stuck in a GPU kernel or a collective looks like."
            if self.stop_timed_out
            else ""
        )
        return (
            "The service came up and served, then stopped answering: health checks failed from then on with no "
            "error or death line from the engine." + tail + " This is a hang while serving, not a start-up "
            "timeout (the start job had finished), so start-up timeouts and memory flags are not the lever."
        )

    @staticmethod
    def actions() -> list[str]:
        return [
            "next time it hangs, before stopping it: py-spy dump --pid <scheduler/worker pid> (and nvidia-smi)",
            "find the last request the engine logged before it went quiet and try to reproduce with it",
            "let the engine's own watchdog dump and exit on a stuck forward pass ("
            + "".join(f"{title} {flag}; " for title, flag in _watchdog_flags())
            + "NCCL: TORCH_NCCL_ASYNC_ERROR_HANDLING=1, TORCH_NCCL_TRACE_BUFFER_SIZE for a flight-recorder dump)",
        ]


def _watchdog_flags() -> list[tuple[str, str]]:
    """(engine title, flag) of each registered engine with a watchdog flag (its `watchdog_timeout` lever)."""
    from logdoctor.engines import ENGINES

    return [
        (e.title, side.flags[-1].flag)
        for e in ENGINES.values()
        if (side := e.lever_sides.get("watchdog_timeout")) is not None and side.flags
    ]


def hang(a, ready_line: int) -> Hang | None:
    """Health checks failing from some point after ready to the end of the window (or to the operator's stop), with
    no engine error or death line in that stretch."""
    if not ready_line:
        return None
    fails, last_ok = [], 0
    for r in a.records:
        if r.line <= ready_line or r.transport not in (SERVICE,):
            continue
        if _HEALTH_OK.search(r.msg):
            last_ok = r.line
        elif _HEALTH_FAIL.search(r.msg):
            fails.append((r.line, r.msg))
    fails = [f for f in fails if f[0] > last_ok]
    if len(fails) < 2:
        return None
    stop_to = any(r.transport == SYSTEMD and _STOP_TIMEOUT.search(r.msg) and r.line > fails[0][0] for r in a.records)
    ev = (
        fails[:2]
        + [
            (r.line, r.msg)
            for r in a.records
            if r.transport == SYSTEMD and r.line > fails[0][0] and _STOP_TIMEOUT.search(r.msg)
        ][:1]
    )
    return Hang(first_line=fails[0][0], evidence=ev, stop_timed_out=stop_to)
