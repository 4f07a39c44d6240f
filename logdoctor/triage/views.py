"""Derived views of the triage frame: signature groups, host suspects, cause counts, the same attempt seen twice,
a comparison with an earlier report (pure pandas, no plotting)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath

HARDWARE_CAUSES = ("hardware_fault",)
# what makes two rows the same attempt: everything the log said, nothing about where the file was found
CONTENT_COLUMNS = (
    "host",
    "unit",
    "engine",
    "engine_version",
    "attempt",
    "start_time",
    "phase",
    "outcome",
    "cause",
    "rule",
    "rank",
    "signature",
    "evidence_line",
    "evidence",
    "config_id",
    "hardware_evidence",
    "lines",
)


def dedupe(df):
    """The same log given twice (a folder and its tarball, a copy in two places) is counted once.

    Rows of attempts are the same when a hash of everything the log said about the attempt (CONTENT_COLUMNS) is;
    the first source keeps them, and `df.attrs["duplicates"]` says how many rows were dropped. Rows of empty and
    unreadable inputs are never dropped (each input is still listed). The summaries (table, markdown, HTML) count
    this frame; the row exports (csv, json, parquet) keep one row per attempt per input."""
    import pandas as pd

    if "duplicates" in df.attrs:
        return df
    att = df["status"].isin(["diagnosed", "healthy"])
    cols = [c for c in CONTENT_COLUMNS if c in df.columns]
    h = pd.util.hash_pandas_object(df[cols].astype(str), index=False)
    dup = att & h.duplicated(keep="first")
    out = df[~dup].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    out.attrs["duplicates"] = int(dup.sum())
    return out


def file_label(source, member) -> str:
    """A short name for a log that names no host: its last two path parts ("node13/server.log")."""

    def given(v) -> bool:
        return v is not None and v == v and str(v) != ""  # not None / NaN / empty

    path = PurePosixPath(str(member if given(member) else source))
    return "/".join(path.parts[-2:]) if path.parts else "?"


def with_hosts(df):
    """`host` filled with the file's name where the log names none, so no "(no host)" bucket swallows them."""
    d = df.copy()
    miss = d["host"].isna() | (d["host"].astype(str).str.strip() == "")
    if miss.any():
        d.loc[miss, "host"] = [file_label(s, m) for s, m in zip(d.loc[miss, "source"], d.loc[miss, "member"])]
    return d


def attempts(df):
    return df[df["status"].isin(["diagnosed", "healthy"])]


def failures(df):
    return df[df["outcome"] == "failed"]


def signature_table(df):
    """Per signature: count, hosts, first/last seen, an example source and its evidence."""
    import pandas as pd

    f = failures(df)
    if f.empty:
        return pd.DataFrame(
            columns=[
                "signature",
                "cause",
                "rule",
                "count",
                "hosts",
                "n_hosts",
                "first_seen",
                "last_seen",
                "first_fix",
                "error_template",
                "frames",
                "example_source",
                "example_member",
                "example_line",
                "example_evidence",
            ]
        )
    out = []
    f = with_hosts(f)
    for sig, g in f.groupby("signature", sort=False, dropna=True):
        ex = g.iloc[0].astype(object).where(g.iloc[0].notna(), None)
        hosts = sorted(h for h in g["host"].dropna().unique())
        fixes = g["first_fix"].dropna()
        out.append(
            {
                "signature": sig,
                "cause": ex["cause"],
                "rule": ex["rule"],
                "count": len(g),
                "hosts": ", ".join(hosts),
                "n_hosts": len(hosts),
                "first_seen": g["start_time"].min(),
                "last_seen": g["start_time"].max(),
                "first_fix": fixes.mode().iloc[0] if len(fixes) else None,
                "error_template": ex["error_template"],
                "frames": ex["frames"],
                "example_source": ex["source"],
                "example_member": ex["member"],
                "example_line": line_no(ex["evidence_line"]),
                "example_evidence": ex["evidence"],
            }
        )
    return pd.DataFrame(out).sort_values(["count", "signature"], ascending=[False, True]).reset_index(drop=True)


def line_no(v) -> int | None:
    """A line number as an int (a column with a missing value is float in pandas: 34.0)."""
    try:
        return None if v is None or v != v else int(v)
    except (TypeError, ValueError):
        return None


# ---- an earlier report ----


@dataclass
class Baseline:
    """Per signature, how many failed attempts and which hosts an earlier `--format json` report had."""

    path: str
    counts: dict[str, int] = field(default_factory=dict)
    hosts: dict[str, set] = field(default_factory=dict)


def load_baseline(path: str) -> Baseline:
    from logdoctor.core.errors import InputError

    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"--baseline {path}: not a triage JSON report ({type(exc).__name__})") from None
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != "logdoctor.triage/v1"
        or not isinstance(doc.get("attempts"), list)
    ):
        raise InputError(
            f"--baseline {path}: not a `logdoctor triage --format json` report (schema logdoctor.triage/v1)"
        )
    b = Baseline(path=path)
    seen = set()
    for r in doc["attempts"]:
        if not isinstance(r, dict):
            continue
        key = json.dumps([r.get(c) for c in CONTENT_COLUMNS], default=str)
        if key in seen:  # the same attempt through two inputs counts once, as in the report itself
            continue
        seen.add(key)
        if r.get("outcome") == "failed" and r.get("signature"):
            b.counts[r["signature"]] = b.counts.get(r["signature"], 0) + 1
            if r.get("host"):
                b.hosts.setdefault(r["signature"], set()).add(str(r["host"]))
    return b


def compare(sig, base: Baseline | None) -> list[str]:
    """For each row of the signature table: new (not in the baseline), regressed (more attempts, or on hosts it was
    not seen on before), or seen (as before or fewer); "" without a baseline."""
    if base is None:
        return [""] * len(sig)
    out = []
    for _, s in sig.iterrows():
        before = base.counts.get(s["signature"])
        hosts = {h for h in str(s["hosts"] or "").split(", ") if h}
        if before is None:
            out.append("new")
        elif s["count"] > before or hosts - base.hosts.get(s["signature"], set()):
            out.append("regressed")
        else:
            out.append("seen")
    return out


def gone(sig, base: Baseline | None) -> list[str]:
    """Signatures the baseline had and this run does not."""
    if base is None:
        return []
    now = set(sig["signature"]) if len(sig) else set()
    return sorted(s for s in base.counts if s not in now)


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
    a = a[a["host"].notna() & (a["host"].astype(str).str.strip() != "")]
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
            s.reasons.append(
                f"failed under {len(cfgs)} different configurations; {len(elsewhere)} of them came up "
                f"on other hosts ({', '.join(sorted(set().union(*(ready_cfg_hosts[c] - {host} for c in elsewhere))))})"
            )
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
