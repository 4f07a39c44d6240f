"""The Dask client behind `triage --scheduler`: `local[:N]` starts a LocalCluster, an address is connected to within
a bounded time, and what goes wrong is a one-line usage error (exit 2), never a 30 s wait then "internal error"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

CONNECT_TIMEOUT_S = 10
_LOCAL = re.compile(r"local(?::(\d+))?")
# anchored at both ends (it is used with fullmatch): a search over a long near-miss stays linear
_ADDRESS = re.compile(r"\A(?:(?:tcp|tls|ucx|inproc|ws|wss)://)?[\w.\-\[\]:]+:\d+\Z")


@dataclass
class Cluster:
    """A connected client, and the LocalCluster we started (closed with it)."""

    client: Any
    local: Any = None

    def close(self) -> None:
        import logging

        # a worker slow to exit is killed by the nanny: routine for a cluster we own, not news for the user
        logging.getLogger("distributed").setLevel(logging.ERROR)
        try:
            self.client.close()
        finally:
            if self.local is not None:
                self.local.close()


def connect(spec: str, *, timeout: float = CONNECT_TIMEOUT_S) -> Cluster:
    """`local`, `local:N` (N worker processes) or a scheduler address (tcp://host:8786, host:8786)."""
    from logdoctor.core.errors import UsageError

    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'logdoctor[dask]'") from None
    import dask

    spec = spec.strip()
    m = _LOCAL.fullmatch(spec)
    if m:
        n = int(m.group(1)) if m.group(1) else None
        if n is not None and not 1 <= n <= 256:
            raise UsageError(f"--scheduler local:N takes 1 to 256 workers, not {n}")
        with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"}):
            local = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            try:
                return Cluster(distributed.Client(local, set_as_default=False), local)
            except Exception:
                local.close()
                raise
    if not _ADDRESS.fullmatch(spec):
        raise UsageError(f"--scheduler {spec!r}: give local, local:N or an address with a port (tcp://host:8786)")
    with dask.config.set({"distributed.comm.timeouts.connect": f"{timeout}s"}):
        try:
            client = distributed.Client(spec, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise UsageError(
                f"cannot reach the Dask scheduler at {spec} within {timeout:g} s ({reason[:160]})"
            ) from None
    return Cluster(client)
