"""Two perturbation checks from issue 10: what real `journalctl` windows add to a failing log, and whether the
verdict survives it.

restart:  after the failure, systemd schedules a restart and the next start begins (Scheduled restart job / Stopped /
          Started, then the first 13 lines of the same start, under a new PID). The verdict must stay "failed": it is
          about the most recent failed attempt, and the new one is only loading.
sshd:     one line of another program (sshd) after the death. It is evidence of nothing and no attempt of the service.

Run: python tools/window_checks.py [FIXTURES_DIR] [-v]   prints how many failing fixtures say OK after each change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
_SHORT = re.compile(
    r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) (?P<host>\S+) (?P<ident>[^\s\[:]+)"
    r"(?:\[(?P<pid>\d+)\])?: (?P<msg>.*)$"
)


def failing_cases(root: Path) -> list[Path]:
    out = []
    for d in sorted(p for p in root.iterdir() if (p / "label.yaml").exists() and (p / "journal.log").exists()):
        lab = yaml.safe_load((d / "label.yaml").read_text())
        if lab.get("failed", True) is not False:
            out.append(d)
    return out


def _last_header(lines: list[str]) -> tuple[str, str] | None:
    for line in reversed(lines):
        m = _SHORT.match(line)
        if m:
            return m.group("ts"), m.group("host")
    return None


def with_restart(text: str, keep: int = 13) -> str | None:
    """Append systemd's restart sequence and the first `keep` lines after the window's first `Started` line (the
    same start again, new PID, timestamps of the end of the window). None when the log has no `Started` line."""
    lines = text.splitlines()
    idx = next((i for i, l in enumerate(lines) if "systemd[1]: Started " in l), None)
    head = _last_header(lines)
    if idx is None or head is None:
        return None
    ts, host = head
    started = _SHORT.match(lines[idx])
    unit_msg = started.group("msg")[len("Started ") :]
    unit = unit_msg.split(" - ")[0].rstrip(".")
    extra = [
        f"{ts} {host} systemd[1]: {unit}: Scheduled restart job, restart counter is at 1.",
        f"{ts} {host} systemd[1]: Stopped {unit_msg}",
        f"{ts} {host} systemd[1]: Started {unit_msg}",
    ]
    for line in lines[idx + 1 : idx + 1 + keep]:
        m = _SHORT.match(line)
        if m:
            pid = (
                f"[{int(m.group('pid')) + 1000}]"
                if m.group("pid") and m.group("ident") != "kernel"
                else (f"[{m.group('pid')}]" if m.group("pid") else "")
            )
            extra.append(f"{ts} {host} {m.group('ident')}{pid}: {m.group('msg')}")
        else:
            extra.append(line)
    return "\n".join(lines + extra) + "\n"


def with_sshd(text: str) -> str:
    lines = text.splitlines()
    head = _last_header(lines)
    ts, host = head if head else ("Jan 01 00:00:00", "host")
    return (
        "\n".join(
            lines
            + [
                f"{ts} {host} sshd[40213]: Accepted publickey for ops from 192.0.2.7 port 52214 ssh2: "
                "ED25519 SHA256:q3cZr0AbCdEf"
            ]
        )
        + "\n"
    )


def run(root: Path = ROOT / "fixtures" / "journals", verbose: bool = False) -> dict:
    """Counts over the failing fixtures that the unchanged log already diagnoses as failed."""
    from logdoctor.classify.runtime import load_default
    from logdoctor.matching.loader import load_rules
    from logdoctor.verdict.api import diagnose

    rules, clf = load_rules(()), load_default()
    res = {"restart_cases": 0, "restart_ok": [], "sshd_cases": 0, "sshd_ok": []}
    for d in failing_cases(root):
        text = (d / "journal.log").read_text()
        base = diagnose(text, loaded_rules=rules, classifier=clf)
        if not base.failed:
            continue
        r = with_restart(text)
        if r is not None:
            res["restart_cases"] += 1
            if not diagnose(r, loaded_rules=rules, classifier=clf).failed:
                res["restart_ok"].append(d.name)
        res["sshd_cases"] += 1
        if not diagnose(with_sshd(text), loaded_rules=rules, classifier=clf).failed:
            res["sshd_ok"].append(d.name)
    if verbose:
        for k in ("restart_ok", "sshd_ok"):
            for n in res[k]:
                print(f"  {k}: {n}")
    return res


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    root = Path(args[0]) if args else ROOT / "fixtures" / "journals"
    r = run(root, verbose="-v" in sys.argv)
    print(
        f"restart appended: {len(r['restart_ok'])} of {r['restart_cases']} failing fixtures with a Started line say OK"
    )
    print(f"sshd line appended: {len(r['sshd_ok'])} of {r['sshd_cases']} failing fixtures say OK")


if __name__ == "__main__":
    main()
