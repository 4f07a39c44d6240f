"""Triage outputs: terminal summary, csv / json / parquet, markdown (for a ticket), and one self-contained HTML file.

The HTML report opens offline: plots are matplotlib SVG inlined, the table sorter is a few lines of our own script
allowed by a per-report nonce in the Content-Security-Policy (so a `<script>` that came from a log, even if it got
past the escaping, would not run); every piece of log text goes through html.escape.
"""
from __future__ import annotations

import html
import io
import json
import re
import secrets
from datetime import datetime

from logdoctor.triage import views

# --- terminal --------------------------------------------------------------------------------------------------

def terminal(df, run=None, *, top: int = 10, width: int = 110) -> str:
    a = views.attempts(df)
    f = views.failures(df)
    inputs = df.attrs.get("inputs", [])
    st: dict[str, int] = {}
    for i in inputs:
        st[i["status"]] = st.get(i["status"], 0) + 1
    lines = [f"triage: {len(inputs)} logs read ({', '.join(f'{v} {k}' for k, v in sorted(st.items()))}); "
             f"{len(a)} attempts, {len(f)} failed, {a['host'].nunique()} hosts"]
    if run is not None and run.seconds:
        lines.append(f"        {run.bytes / 1e6:.1f} MB, {run.lines} lines in {run.seconds:.1f} s "
                     f"({run.bytes / 1e6 / run.seconds:.1f} MB/s)")
    counts = views.cause_counts(df)
    if len(counts):
        lines += ["", "top causes"]
        for cause, n in counts.head(top).items():
            lines.append(f"  {n:6d}  {cause}")
    sig = views.signature_table(df)
    if len(sig):
        lines += ["", "top signatures"]
        for _, s in sig.head(top).iterrows():
            hosts = s["hosts"] or "-"
            lines.append(f"  {s['count']:6d}  {s['signature']}  hosts: {_cut(hosts, 40)}  "
                         f"{_ts(s['first_seen'])} .. {_ts(s['last_seen'])}")
            lines.append(f"          {_cut(str(s['error_template'] or ''), width - 10)}")
    sus = views.host_suspects(df)
    if sus:
        lines += ["", "suspect hosts"]
        for s in sus:
            lines.append(f"  {s.host}: {s.failed}/{s.attempts} attempts failed; " + "; ".join(s.reasons))
            for e in s.evidence[:3]:
                lines.append(f"      {_cut(e, width - 6)}")
    bad = [i for i in inputs if i["status"] == "unreadable"]
    if bad:
        lines += ["", f"unreadable inputs ({len(bad)})"]
        for i in bad:
            lines.append(f"  {_where(i['source'], i['member'])}: {i['reason']}")
    return "\n".join(lines) + "\n"


def _na(v) -> bool:
    import pandas as pd
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _str(v) -> str:
    return "" if _na(v) else str(v)


def _cut(s: str, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _ts(t) -> str:
    try:
        return "-" if _na(t) else t.strftime("%Y-%m-%d %H:%M")
    except (AttributeError, ValueError):
        return "-"


def _where(source, member) -> str:
    return f"{source}:{member}" if member else str(source)


# --- tables ----------------------------------------------------------------------------------------------------

def to_csv(df, out) -> None:
    df.to_csv(out, index=False)


def to_json(df, out) -> None:
    recs = json.loads(df.to_json(orient="records", date_format="iso"))
    doc = {"schema": "logdoctor.triage/v1", "attempts": recs, "inputs": df.attrs.get("inputs", [])}
    out.write(json.dumps(doc, indent=1, default=str))


def to_parquet(df, path) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from logdoctor.errors import UsageError
        raise UsageError("--format parquet needs pyarrow: pip install 'logdoctor[parquet]'") from None
    d = df.copy()
    d.attrs = {}
    import io

    from logdoctor.atomic import write_bytes
    buf = io.BytesIO()
    d.to_parquet(buf, index=False)
    write_bytes(path, buf.getvalue())   # atomically, like every file logdoctor writes


# --- markdown --------------------------------------------------------------------------------------------------

def _md(s) -> str:
    s = "" if _na(s) else str(s)
    return html.escape(" ".join(s.split())).replace("|", "\\|").replace("`", "'")


def markdown(df, *, top: int = 15) -> str:
    a, f = views.attempts(df), views.failures(df)
    inputs = df.attrs.get("inputs", [])
    out = ["# logdoctor triage", "",
           f"{len(inputs)} logs, {len(a)} attempts, {len(f)} failed, {a['host'].nunique()} hosts.", ""]
    counts = views.cause_counts(df)
    if len(counts):
        out += ["## Top causes", "", "| cause | failed attempts |", "|---|---:|"]
        out += [f"| {_md(c)} | {n} |" for c, n in counts.head(top).items()] + [""]
    sig = views.signature_table(df)
    if len(sig):
        out += ["## Signatures", "", "| count | signature | hosts | first seen | last seen | example |", "|---:|---|---|---|---|---|"]
        for _, s in sig.head(top).iterrows():
            out.append(f"| {s['count']} | `{_md(s['signature'])}` | {_md(s['hosts'])} | {_ts(s['first_seen'])} | "
                       f"{_ts(s['last_seen'])} | {_md(_where(s['example_source'], s['example_member']))}"
                       f":{_md(s['example_line'])} {_md(s['example_evidence'])} |")
        out.append("")
    sus = views.host_suspects(df)
    if sus:
        out += ["## Suspect hosts", ""]
        for s in sus:
            out.append(f"- **{_md(s.host)}** ({s.failed}/{s.attempts} failed): {_md('; '.join(s.reasons))}")
            out += [f"  - `{_md(e)}`" for e in s.evidence[:5]]
        out.append("")
    bad = [i for i in inputs if i["status"] == "unreadable"]
    if bad:
        out += ["## Unreadable inputs", ""] + [f"- {_md(_where(i['source'], i['member']))}: {_md(i['reason'])}"
                                                for i in bad] + [""]
    return "\n".join(out)


# --- html ------------------------------------------------------------------------------------------------------

_SORTER = """
document.querySelectorAll('table.sortable th').forEach(function (th) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0], idx = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('data-dir') !== 'asc';
    th.parentNode.querySelectorAll('th').forEach(function (x) { x.removeAttribute('data-dir'); });
    th.setAttribute('data-dir', asc ? 'asc' : 'desc');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[idx].textContent.trim(), y = b.cells[idx].textContent.trim();
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny) && String(nx) === x.replace(/\\.0+$/, '') ) ? nx - ny : x.localeCompare(y);
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
document.body.setAttribute('data-sorter', 'ready');
"""

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none}th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plot{border:1px solid #eee;padding:4px}.plot svg{max-width:640px;height:auto}
.bad{color:#a00}.sus{background:#fff4f4}
"""


def html_report(df, *, title: str = "logdoctor triage", max_rows: int = 5000) -> str:
    nonce = secrets.token_urlsafe(16)
    a, f = views.attempts(df), views.failures(df)
    inputs = df.attrs.get("inputs", [])
    e = html.escape
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
        f"style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'\">",
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p id=\"summary\">{len(inputs)} logs read, {len(a)} attempts, {len(f)} failed, {a['host'].nunique()} hosts; "
        f"generated {datetime.now().strftime('%Y-%m-%d %H:%M')}.</p>",
    ]
    parts.append("<h2>Plots</h2><div class=\"plots\">")
    for pid, caption, svg in _plots(df):
        parts.append(f"<figure class=\"plot\" id=\"{pid}\">{svg}<figcaption>{e(caption)}</figcaption></figure>")
    parts.append("</div>")
    sus = views.host_suspects(df)
    parts.append("<h2>Suspect hosts</h2>")
    if sus:
        parts.append("<table class=\"sortable\" id=\"suspects\"><thead><tr><th>host</th><th>failed</th><th>attempts</th>"
                     "<th>why</th><th>evidence</th></tr></thead><tbody>")
        for s in sus:
            ev = "<br>".join(f"<code>{e(x)}</code>" for x in s.evidence)
            parts.append(f"<tr class=\"sus\"><td>{e(s.host)}</td><td>{s.failed}</td><td>{s.attempts}</td>"
                         f"<td>{e('; '.join(s.reasons))}</td><td>{ev}</td></tr>")
        parts.append("</tbody></table>")
    else:
        parts.append("<p>No host stands out.</p>")
    sig = views.signature_table(df)
    parts.append("<h2>Signatures</h2><table class=\"sortable\" id=\"signatures\"><thead><tr><th>count</th>"
                 "<th>signature</th><th>cause</th><th>rule</th><th>hosts</th><th>first seen</th><th>last seen</th>"
                 "<th>error template</th><th>example evidence</th></tr></thead><tbody>")
    for _, s in sig.iterrows():
        parts.append(
            f"<tr><td>{s['count']}</td><td><code>{e(str(s['signature']))}</code></td><td>{e(str(s['cause']))}</td>"
            f"<td>{e(_str(s['rule']))}</td><td>{e(_str(s['hosts']))}</td><td>{_ts(s['first_seen'])}</td>"
            f"<td>{_ts(s['last_seen'])}</td><td><code>{e(_str(s['error_template']))}</code><br>"
            f"<small>{e(_str(s['frames']))}</small></td>"
            f"<td>{e(_where(s['example_source'], s['example_member']))}:{e('' if _na(s['example_line']) else str(s['example_line']))}<br>"
            f"<code>{e(_str(s['example_evidence']))}</code></td></tr>")
    parts.append("</tbody></table>")
    bad = [i for i in inputs if i["status"] in ("unreadable", "empty")]
    parts.append("<h2>Inputs not diagnosed</h2>")
    if bad:
        parts.append("<table class=\"sortable\" id=\"inputs\"><thead><tr><th>status</th><th>input</th><th>reason</th>"
                     "</tr></thead><tbody>")
        for i in bad:
            parts.append(f"<tr><td class=\"{'bad' if i['status'] == 'unreadable' else ''}\">{e(i['status'])}</td>"
                         f"<td>{e(_where(i['source'], i['member']))}</td><td>{e(str(i['reason']))}</td></tr>")
        parts.append("</tbody></table>")
    else:
        parts.append("<p>Every input was read.</p>")
    cols = ["start_time", "host", "unit", "engine", "engine_version", "attempt", "phase", "outcome", "cause",
            "confidence", "rule", "first_fix", "signature", "source", "member", "evidence_line", "evidence"]
    parts.append("<h2>Attempts</h2><table class=\"sortable\" id=\"attempts\"><thead><tr>"
                 + "".join(f"<th>{c}</th>" for c in cols) + "</tr></thead><tbody>")
    shown = a.sort_values("start_time", na_position="last").head(max_rows)
    for _, r in shown.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            v = "" if _na(v) else (_ts(v) if c == "start_time" else v)
            cells.append(f"<td><code>{e(str(v))}</code></td>" if c == "evidence" else f"<td>{e(str(v))}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table>")
    if len(a) > max_rows:
        parts.append(f"<p>{len(a) - max_rows} more attempts not shown: use --format csv for all of them.</p>")
    parts.append(f"<script nonce=\"{nonce}\">{_SORTER}</script></body></html>")
    return "\n".join(parts)


def _plots(df) -> list[tuple[str, str, str]]:
    """Causes over time, by host, by engine version, and a host × cause heat map, as inline SVG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    plt.rcParams["svg.fonttype"] = "none"     # text stays text: smaller, and searchable in the page
    f = views.failures(df).copy()
    out: list[tuple[str, str, str]] = []
    if f.empty:
        return out
    f["cause"] = f["cause"].fillna("unknown")
    causes = list(views.cause_counts(df).index[:10])
    f.loc[~f["cause"].isin(causes), "cause"] = "other"

    def svg(fig) -> str:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
        plt.close(fig)
        text = buf.getvalue()
        text = re.sub(r"<metadata>.*?</metadata>", "", text[text.find("<svg"):], flags=re.S)
        return text

    t = f.dropna(subset=["start_time"])
    if not t.empty:
        span = (t["start_time"].max() - t["start_time"].min())
        freq = "h" if span <= pd.Timedelta(days=2) else "D"
        tab = t.groupby([t["start_time"].dt.floor(freq), "cause"]).size().unstack(fill_value=0)
        fig, ax = plt.subplots(figsize=(7, 3.2))
        tab.index = [x.strftime("%m-%d %H:%M" if freq == "h" else "%Y-%m-%d") for x in tab.index]
        tab.plot(kind="bar", stacked=True, ax=ax, width=0.85)
        ax.set_ylabel("failed attempts")
        ax.set_xlabel("")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        ax.set_title("Causes over time")
        out.append(("plot-time", "Failed attempts per " + ("hour" if freq == "h" else "day") + ", by cause", svg(fig)))
    h = f.assign(host=f["host"].fillna("(no host)"))
    tab = h.groupby(["host", "cause"]).size().unstack(fill_value=0)
    tab = tab.loc[tab.sum(axis=1).sort_values(ascending=False).index[:25]]
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.28 * len(tab) + 1)))
    tab.iloc[::-1].plot(kind="barh", stacked=True, ax=ax, width=0.8)
    ax.set_xlabel("failed attempts")
    ax.set_ylabel("")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title("Causes by host")
    out.append(("plot-host", "Failed attempts by host and cause (top 25 hosts)", svg(fig)))
    v = f.assign(ver=f["engine"].fillna("?") + " " + f["engine_version"].fillna("?"))
    tab = v.groupby(["ver", "cause"]).size().unstack(fill_value=0)
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.3 * len(tab) + 1)))
    tab.plot(kind="barh", stacked=True, ax=ax, width=0.8)
    ax.set_xlabel("failed attempts")
    ax.set_ylabel("")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    ax.set_title("Causes by engine version")
    out.append(("plot-version", "Failed attempts by engine and version", svg(fig)))
    hm = h.groupby(["host", "cause"]).size().unstack(fill_value=0)
    hm = hm.loc[hm.sum(axis=1).sort_values(ascending=False).index[:30]]
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * hm.shape[1], 1.2 + 0.3 * hm.shape[0]))
    im = ax.imshow(hm.values, aspect="auto", cmap="Reds")
    ax.set_xticks(range(hm.shape[1]), list(hm.columns), rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(hm.shape[0]), list(hm.index), fontsize=8)
    for i in range(hm.shape[0]):
        for j in range(hm.shape[1]):
            if hm.values[i, j]:
                ax.text(j, i, str(hm.values[i, j]), ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title("Host × cause")
    out.append(("plot-heatmap", "Host × cause heat map (failed attempts)", svg(fig)))
    return out
