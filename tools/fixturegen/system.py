"""systemd (PID 1) lines about the unit, NVIDIA kernel (NVRM) lines, and the kernel OOM killer."""
from __future__ import annotations

import random

from .timeline import Log


def cpu_time(rng: random.Random, lo: float, hi: float) -> str:
    s = rng.uniform(lo, hi)
    if s < 60:
        return f"{s:.3f}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{int(m)}min {s:.3f}s"
    h, m = divmod(m, 60)
    return f"{int(h)}h {int(m)}min {s:.3f}s"


def started(log: Log, desc: str) -> None:
    log.systemd(f"Started {log.unit} - {desc}.")


def exited(log: Log, how: str, rng: random.Random, cpu: tuple[float, float] = (20, 600)) -> None:
    """how: exit1 | sigkill (SGLang kills its own tree) | oom | timeout | term."""
    u = log.unit
    log.tick(0.05, 0.6)
    if how == "oom":
        log.systemd(f"{u}: A process of this unit has been killed by the OOM killer.", 4)
        log.systemd(f"{u}: Main process exited, code=killed, status=9/KILL", 5)
        log.systemd(f"{u}: Failed with result 'oom-kill'.", 4)
    elif how == "oom-exit1":
        log.systemd(f"{u}: A process of this unit has been killed by the OOM killer.", 4)
        log.systemd(f"{u}: Main process exited, code=exited, status=1/FAILURE", 5)
        log.systemd(f"{u}: Failed with result 'exit-code'.", 4)
    elif how == "sigkill":
        log.systemd(f"{u}: Main process exited, code=killed, status=9/KILL", 5)
        log.systemd(f"{u}: Failed with result 'signal'.", 4)
    elif how == "timeout":
        log.systemd(f"{u}: Main process exited, code=killed, status=15/TERM", 5)
        log.systemd(f"{u}: Failed with result 'timeout'.", 4)
    elif how == "abrt":
        log.systemd(f"{u}: Main process exited, code=dumped, status=6/ABRT", 5)
        log.systemd(f"{u}: Failed with result 'core-dump'.", 4)
    else:
        log.systemd(f"{u}: Main process exited, code=exited, status=1/FAILURE", 5)
        log.systemd(f"{u}: Failed with result 'exit-code'.", 4)
    log.systemd(f"{u}: Consumed {cpu_time(rng, *cpu)} CPU time.")


def restart(log: Log, n: int, desc: str, delay: float) -> None:
    log.wait(delay, 0.0)
    log.systemd(f"{log.unit}: Scheduled restart job, restart counter is at {n}.")
    log.systemd(f"Stopped {log.unit} - {desc}.")


def timed_out(log: Log) -> None:
    log.systemd(f"{log.unit}: start operation timed out. Terminating.", 3)


def failed_to_start(log: Log, desc: str) -> None:
    log.systemd(f"Failed to start {log.unit} - {desc}.", 3)


# -- NVIDIA kernel module --------------------------------------------------
XID_TEXT = {
    13: "Graphics SM Warp Exception on (GPC {g}, TPC {t}, SM 0): Out Of Range Address",
    31: ("Ch 0000000{c}, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC{g} GPCCLIENT_T1_{t} faulted @ "
         "0x7f{a:02x}_{b:04x}0000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE"),
    43: "Ch 0000001{c}",
    45: "Ch 0000001{c}",
    48: ("An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition "
         "{g}, subpartition {t}."),
    62: "Internal micro-controller halt (0x{a:02x}{b:04x})",
    63: "Row Remapper: New row (0x0000000000{a:02x}{b:04x}) marked for remapping, reset gpu to activate.",
    74: "NVLink: fatal error detected on link {t}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    79: "GPU has fallen off the bus.",
    94: "Contained: SM (0x{g}). RST: No, D-RST: No",
    95: "Uncontained: LTC TAG (0x{g},0x0). RST: Yes, D-RST: No",
    119: ("Timeout after 6s of waiting for RPC response from GPU{t} GSP! Expected function 76 (GSP_RM_CONTROL) "
          "(0x20800a4c 0x4)."),
    154: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
}


def xid(log: Log, rng: random.Random, pci: str, code: int, pid: int | None, name: str = "python3") -> None:
    txt = XID_TEXT[code].format(g=rng.randint(0, 7), t=rng.randint(0, 8), c=rng.randint(2, 9),
                                a=rng.randint(16, 250), b=rng.randint(0, 65535))
    who = f"pid={pid}, name={name}, " if pid else "pid='<unknown>', name=<unknown>, "
    log.kernel(f"NVRM: Xid (PCI:{pci}): {code}, {who}{txt}", 3)


def fallen_off(log: Log, pci: str) -> None:
    log.kernel(f"NVRM: GPU {pci}.0: GPU has fallen off the bus.", 3)
    log.kernel("NVRM: A GPU crash dump has been created. If possible, please run", 3)
    log.kernel("NVRM: nvidia-bug-report.sh as root to collect this data before", 3)
    log.kernel("NVRM: the NVIDIA kernel module is unloaded.", 3)


def oom_killer(log: Log, rng: random.Random, comm: str, victim: int, unit: str, anon_gb: float,
               invoker: str | None = None) -> None:
    inv = invoker or comm
    log.kernel(f"{inv} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
               "oom_score_adj=0", 4)
    log.kernel(f"CPU: {rng.randint(0, 95)} PID: {victim + rng.randint(1, 40)} Comm: {inv} Tainted: P           OE"
               f"      6.8.0-{rng.randint(40, 60)}-generic #{rng.randint(41, 70)}-Ubuntu", 4)
    log.kernel("Mem-Info:", 4)
    log.kernel(f"active_anon:{rng.randint(28_000_000, 60_000_000)} inactive_anon:{rng.randint(900, 4000)} "
               f"isolated_anon:0 active_file:{rng.randint(100, 900)} inactive_file:{rng.randint(50, 600)} "
               "isolated_file:0", 4)
    log.kernel(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0-1,global_oom,"
               f"task_memcg=/system.slice/{unit},task={comm},pid={victim},uid=0", 4)
    log.kernel(f"Out of memory: Killed process {victim} ({comm}) total-vm:{int(anon_gb * 1.9e6)}kB, "
               f"anon-rss:{int(anon_gb * 1.0e6)}kB, file-rss:{rng.randint(60000, 140000)}kB, "
               f"shmem-rss:{rng.randint(4000, 40000)}kB, UID:0 pgtables:{rng.randint(40000, 160000)}kB "
               "oom_score_adj:0", 3)
    log.kernel(f"oom_reaper: reaped process {victim} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB", 4)
