"""Derived views of the triage frame: signature groups, host suspects, cause counts (pure pandas, no plotting)."""
from __future__ import annotations

from dataclasses import dataclass, field

HARDWARE_CAUSES = ("hardware_fault",)


def attempts(df):
    return df[df["status"].isin(["diagnosed", "healthy"])]


def failures(df):
    return df[df["outcome"] == "failed"]


def signature_table(df):
    """Per signature: count, hosts, first/last seen, an example source and its evidence."""
    import pandas as pd
    f = failures(df)
    if f.empty:
        return pd.DataFrame(columns=["signature", "cause", "rule", "count", "hosts", "first_seen", "last_seen",
                                     "error_template", "frames", "example_source", "example_member",
                                     "example_line", "example_evidence"])
    out = []
    for sig, g in f.groupby("signature", sort=False, dropna=True):
        ex = g.iloc[0].astype(object).where(g.iloc[0].notna(), None)
        hosts = sorted(h for h in g["host"].dropna().unique())
        out.append({"signature": sig, "cause": ex["cause"], "rule": ex["rule"], "count": len(g),
                    "hosts": ", ".join(hosts), "first_seen": g["start_time"].min(), "last_seen": g["start_time"].max(),
                    "error_template": ex["error_template"], "frames": ex["frames"], "example_source": ex["source"],
                    "example_member": ex["member"], "example_line": ex["evidence_line"],
                    "example_evidence": ex["evidence"]})
    return pd.DataFrame(out).sort_values(["count", "signature"], ascending=[False, True]).reset_index(drop=True)


@dataclass
class Suspect:
    host: str
    reasons: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    failed: int = 0
    attempts: int = 0


def host_suspects(df) -> list[Suspect]:
    """A host is a suspect when
      - its attempts fail under two or more different configurations while one of those configurations comes up
        (ready) on another host: the config is not what fails, the host is; or
      - hardware evidence appears in its attempts (kernel Xid, ECC, GPU fallen off the bus), listed."""
    a = attempts(df)
    a = a[a["host"].notna()]
    ready_cfg_hosts: dict[str, set] = {}
    # an attempt stopped by the operator while serving came up too (attempts.outcome says "stopped", not "ready")
    stopped_up = (a["outcome"] == "stopped") & (a["phase"] == "serving") if "phase" in a else False
    came_up = (a["outcome"] == "ready") | stopped_up
    for _, r in a[came_up & a["config_id"].notna()].iterrows():
        ready_cfg_hosts.setdefault(r["config_id"], set()).add(r["host"])
    out = []
    for host, g in a.groupby("host", sort=True):
        s = Suspect(host=str(host), attempts=len(g))
        fails = g[g["outcome"] == "failed"]
        s.failed = len(fails)
        cfgs = sorted(fails["config_id"].dropna().unique())
        elsewhere = [c for c in cfgs if ready_cfg_hosts.get(c, set()) - {host}]
        if len(cfgs) >= 2 and elsewhere:
            s.reasons.append(f"failed under {len(cfgs)} different configurations; {len(elsewhere)} of them came up "
                             f"on other hosts ({', '.join(sorted(set().union(*(ready_cfg_hosts[c] - {host} for c in elsewhere))))})")
        hw = [e for e in g["hardware_evidence"].dropna() for e in str(e).split("\n") if e]
        if hw:
            s.reasons.append("hardware evidence in the logs (Xid / ECC / fallen off the bus)")
            s.evidence = list(dict.fromkeys(hw))[:8]
        elif (fails["cause"] == "hardware_fault").any():
            s.reasons.append("attempts diagnosed as hardware_fault")
            s.evidence = list(dict.fromkeys(fails.loc[fails["cause"] == "hardware_fault", "evidence"].dropna()))[:8]
        if s.reasons:
            out.append(s)
    return out


def cause_counts(df):
    f = failures(df)
    return f["cause"].fillna("unknown").value_counts()
