"""Triage outputs: terminal summary, csv / json / parquet, markdown (for a ticket), and one self-contained HTML file.

The HTML report opens offline: plots are matplotlib SVG inlined, the table sorter is a few lines of our own script
allowed by a per-report nonce in the Content-Security-Policy (so a `<script>` that came from a log, even if it got
past the escaping, would not run); every piece of log text goes through html.escape.

It reads like an issue list (Sentry, Dr. CI): the first screen is the signature table — count, hosts, first and last
seen, the first fix or action, new/regressed against `--baseline` — then the suspect hosts; each signature links to
its attempts and their evidence (with the command that reproduces the verdict); compact plots come after, one
colour per cause in every plot, on a real time axis.
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
    df = views.dedupe(df)  # the same log given twice is counted once
    a = views.attempts(df)
    f = views.failures(df)
    inputs = df.attrs.get("inputs", [])
    st: dict[str, int] = {}
    for i in inputs:
        st[i["status"]] = st.get(i["status"], 0) + 1
    lines = [
        f"triage: {len(inputs)} logs read ({', '.join(f'{v} {k}' for k, v in sorted(st.items()))}); "
        f"{len(a)} attempts, {len(f)} failed, {a['host'].nunique()} hosts"
    ]
    if run is not None and run.seconds:
        lines.append(
            f"        {run.bytes / 1e6:.1f} MB, {run.lines} lines in {run.seconds:.1f} s "
            f"({run.bytes / 1e6 / run.seconds:.1f} MB/s)"
        )
    if df.attrs.get("duplicates"):
        lines.append(f"        {df.attrs['duplicates']} attempts seen in two inputs (the same log twice) counted once")
    counts = views.cause_counts(df)
    if len(counts):
        lines += ["", "top causes"]
        for cause, n in counts.head(top).items():
            lines.append(f"  {n:6d}  {cause}")
    sig = views.signature_table(df)
    base = df.attrs.get("baseline")
    marks = views.compare(sig, base)
    if len(sig):
        lines += ["", "top signatures" + (f" (against {base.path})" if base else "")]
        for (_, s), mark in list(zip(sig.iterrows(), marks))[:top]:
            hosts = s["hosts"] or "-"
            lines.append(
                f"  {s['count']:6d}  {s['signature']}"
                + (f"  [{mark.upper()}]" if mark and mark != "seen" else "")
                + f"  {_ts(s['first_seen'])} .. {_ts(s['last_seen'])}"
            )
            lines.append(f"          hosts: {_cut(hosts, width - 17)}")
            lines.append(f"          {_cut(str(s['error_template'] or ''), width - 10)}")
            if not _na(s["first_fix"]):
                lines.append(f"          next: {_cut(str(s['first_fix']), width - 16)}")
        for g in views.gone(sig, base):
            lines.append(f"  {'gone':>6}  {g}  (in the baseline, not in this run)")
    sus = views.host_suspects(df)
    if sus:
        lines += ["", "suspect hosts"]
        for s in sus:
            lines.append(
                "  " + _cut(f"{s.host}: {s.failed}/{s.attempts} attempts failed; " + "; ".join(s.reasons), width - 2)
            )
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
    return str(source) if _na(member) or not member else f"{source}:{member}"


# --- tables ----------------------------------------------------------------------------------------------------

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(v):
    """A cell a spreadsheet would run as a formula (= + - @ first) gets a leading ' (OWASP's advice); newlines
    inside a cell become " | " so `cut`/`grep` see one attempt per line."""
    if not isinstance(v, str):
        return v
    v = v.replace("\r\n", "\n").replace("\n", " | ")
    return "'" + v if v.startswith(_FORMULA) else v


def to_csv(df, out) -> None:
    import pandas as pd

    d = df.copy()
    for c in d.columns:
        if pd.api.types.is_object_dtype(d[c]) or pd.api.types.is_string_dtype(d[c]):
            d[c] = d[c].astype(object).map(csv_safe)
    if "evidence_line" in d.columns:
        d["evidence_line"] = d["evidence_line"].astype("Int64")
    d.to_csv(out, index=False)


# the frame's typed columns (triage.run casts them); every other column is text or None
_INT_COLUMNS = ("attempt", "evidence_line", "lines")
_FLOAT_COLUMNS = ("confidence",)
_TIME_COLUMNS = ("start_time",)


def rows_csv(rows: list[dict], columns) -> str | None:
    """The text `to_csv` writes for the frame `triage.run` builds of these rows, written from the rows themselves:
    a csv export needs no pandas (its import is ~0.7 s of every triage start). It follows pandas' own rules (a
    missing value is an empty cell, an Int64 cell its digits, a float64 cell its shortest repr, a time column at
    the finest precision any of its values needs) and writes through the same csv module with the same dialect;
    None when a cell holds a type whose formatting only pandas can say (the caller then goes through the frame).
    tests/test_triage_csv.py compares the two on every fixture and on generated archives."""
    import csv

    times: dict[str, str] = {}
    for c in _TIME_COLUMNS:
        precision = _time_format([r.get(c) for r in rows])
        if precision is None:
            return None
        times[c] = precision
    table: list[list[str]] = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            if v is None:
                cells.append("")
            elif c in times:
                cells.append(_time_cell(v, times[c]))
            elif c in _INT_COLUMNS:
                if type(v) is not int:
                    return None
                cells.append(str(v))
            elif c in _FLOAT_COLUMNS:
                if type(v) not in (float, int) or v != v:
                    return None
                cells.append(repr(float(v)))
            elif isinstance(v, str):
                cells.append(csv_safe(v))
            else:
                return None
        table.append(cells)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", delimiter=",", quotechar='"', quoting=csv.QUOTE_MINIMAL, doublequote=True)
    w.writerow(list(columns))
    w.writerows(table)
    return buf.getvalue()


def _time_format(values: list) -> str | None:
    """pandas' precision for a datetime64 column in csv: "date" when every value is a midnight, else "s", "ms" or
    "us", whichever the finest value needs. None: a value this cannot format as pandas does (not a naive datetime,
    a year outside 1000..9999)."""
    from datetime import datetime

    seen = [v for v in values if v is not None]
    if any(type(v) is not datetime or v.tzinfo is not None or not 1000 <= v.year <= 9999 for v in seen):
        return None
    if any(v.microsecond % 1000 for v in seen):
        return "us"
    if any(v.microsecond for v in seen):
        return "ms"
    if all(v.hour == v.minute == v.second == 0 for v in seen):
        return "date"
    return "s"


def _time_cell(v, precision: str) -> str:
    day = f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
    if precision == "date":
        return day
    clock = f"{day} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if precision == "us":
        return f"{clock}.{v.microsecond:06d}"
    if precision == "ms":
        return f"{clock}.{v.microsecond // 1000:03d}"
    return clock


def to_json(df, out) -> None:
    recs = json.loads(df.to_json(orient="records", date_format="iso"))
    doc = {"schema": "logdoctor.triage/v1", "attempts": recs, "inputs": df.attrs.get("inputs", [])}
    out.write(json.dumps(doc, indent=1, default=str))


def to_parquet(df, path) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        from logdoctor.core.errors import UsageError

        raise UsageError("--format parquet needs pyarrow: pip install 'logdoctor[parquet]'") from None
    d = df.copy()
    d.attrs = {}
    import io

    from logdoctor.core.atomic import write_bytes

    buf = io.BytesIO()
    d.to_parquet(buf, index=False)
    write_bytes(path, buf.getvalue())  # atomically, like every file logdoctor writes


# --- markdown --------------------------------------------------------------------------------------------------


def _md(s) -> str:
    """Text for a markdown cell: no HTML entities (it is pasted into Slack, Jira, a terminal); only what would
    break the table (|) or a code span (`) is changed."""
    s = "" if _na(s) else str(s)
    return " ".join(s.split()).replace("|", "\\|").replace("`", "'")


def _mdcode(s) -> str:
    """Log text as a code span: read as written, and a renderer shows a <tag> from a log as text, never as HTML."""
    t = _md(s)
    return f"`{t}`" if t else ""


def markdown(df, *, top: int = 15) -> str:
    df = views.dedupe(df)  # the same log given twice is counted once
    a, f = views.attempts(df), views.failures(df)
    inputs = df.attrs.get("inputs", [])
    out = [
        "# logdoctor triage",
        "",
        f"{len(inputs)} logs, {len(a)} attempts, {len(f)} failed, {a['host'].nunique()} hosts.",
        "",
    ]
    counts = views.cause_counts(df)
    if len(counts):
        out += ["## Top causes", "", "| cause | failed attempts |", "|---|---:|"]
        out += [f"| {_md(c)} | {n} |" for c, n in counts.head(top).items()] + [""]
    sig = views.signature_table(df)
    marks = views.compare(sig, df.attrs.get("baseline"))
    if len(sig):
        out += [
            "## Signatures",
            "",
            "| count | signature | hosts | first seen | last seen | first fix or action | example |",
            "|---:|---|---|---|---|---|---|",
        ]
        for (_, s), mark in list(zip(sig.iterrows(), marks))[:top]:
            tag = f" **{mark}**" if mark in ("new", "regressed") else ""
            out.append(
                f"| {s['count']} | `{_md(s['signature'])}`{tag} | {_md(s['hosts'])} | {_ts(s['first_seen'])} | "
                f"{_ts(s['last_seen'])} | {_md(s['first_fix'])} | "
                f"{_md(_where(s['example_source'], s['example_member']))}"
                f":{_md(s['example_line'])} {_mdcode(s['example_evidence'])} |"
            )
        out.append("")
    sus = views.host_suspects(df)
    if sus:
        out += ["## Suspect hosts", ""]
        for s in sus:
            out.append(f"- **{_md(s.host)}** ({s.failed}/{s.attempts} failed): {_md('; '.join(s.reasons))}")
            out += [f"  - {_mdcode(e)}" for e in s.evidence[:5]]
        out.append("")
    bad = [i for i in inputs if i["status"] == "unreadable"]
    if bad:
        out += (
            ["## Unreadable inputs", ""]
            + [f"- {_md(_where(i['source'], i['member']))}: {_mdcode(i['reason'])}" for i in bad]
            + [""]
        )
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
// where the headline landed (read by tests/test_triage_html.py through --dump-dom: the first screen holds it)
['signatures', 'suspects', 'plot-time'].forEach(function (id) {
  var el = document.getElementById(id);
  if (el) { document.body.setAttribute('data-top-' + id, Math.round(el.getBoundingClientRect().top)); }
});
"""

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1400px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #ddd}
#summary{margin:0 0 8px;color:#444}
table{border-collapse:collapse;font-size:12px;margin:4px 0}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none;position:sticky;top:0}th[data-dir=asc]::after{content:" \\25B2"}th[data-dir=desc]::after{content:" \\25BC"}
.scroll{overflow:auto;max-height:70vh;max-width:100%;border:1px solid #eee}
td.num{text-align:right}td.when{white-space:nowrap}td.sig,td.sig code{white-space:nowrap}td.ev{max-width:420px}td.fix{max-width:320px}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.tag{display:inline-block;padding:0 5px;border-radius:3px;font-size:11px;font-weight:600;color:#fff}
.tag.new{background:#c62828}.tag.regressed{background:#ef6c00}.tag.seen{background:#9e9e9e}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:8px}.plot{border:1px solid #eee;padding:4px;margin:0}
.plot svg{width:100%;height:auto;max-height:300px}
.bad{color:#a00}.sus{background:#fff4f4}details{margin:2px 0}summary{cursor:pointer}
details table{margin-left:16px}
#attempts td{white-space:nowrap}#attempts td.ev{white-space:normal;min-width:380px;max-width:600px}
"""


def _slug(sig: str) -> str:
    return "sig-" + re.sub(r"[^A-Za-z0-9_-]", "-", str(sig))


def _line(v) -> str:
    n = views.line_no(v)
    return "" if n is None else str(n)


def html_report(df, *, title: str = "logdoctor triage", max_rows: int = 5000) -> str:
    df = views.dedupe(df)  # the same log given twice is counted once
    nonce = secrets.token_urlsafe(16)
    a, f = views.attempts(df), views.failures(df)
    inputs = df.attrs.get("inputs", [])
    base = df.attrs.get("baseline")
    e = html.escape
    sig = views.signature_table(df)
    marks = views.compare(sig, base)
    sus = views.host_suspects(df)
    dup = df.attrs.get("duplicates") or 0
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
        f"style-src 'unsafe-inline'; script-src 'nonce-{nonce}'; base-uri 'none'; form-action 'none'\">",
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f'<p id="summary"><b>{"; ".join(_headline(sig, marks, sus, base))}.</b> {len(inputs)} logs read, '
        f"{len(a)} attempts, {len(f)} failed, "
        f"{views.with_hosts(a)['host'].nunique()} hosts"
        + (f"; {dup} attempts found in two inputs (the same log twice) counted once" if dup else "")
        + f"; generated {datetime.now().strftime('%Y-%m-%d %H:%M')}.</p>",
    ]
    parts += _signatures_html(sig, marks, base)
    parts += _suspects_html(sus)
    parts += _details_html(views.with_hosts(f), sig, marks)
    parts.append('<h2>Plots</h2><div class="plots">')
    for pid, caption, svg in _plots(df):
        parts.append(f'<figure class="plot" id="{pid}">{svg}<figcaption>{e(caption)}</figcaption></figure>')
    parts.append("</div>")
    parts += _inputs_html(inputs, max_rows)
    parts += _attempts_html(a, max_rows)
    parts.append(f'<script nonce="{nonce}">{_SORTER}</script></body></html>')
    return "\n".join(parts)


def _headline(sig, marks: list[str], sus: list, base) -> list[str]:
    """The first line's counts: signatures, new and regressed against the baseline, suspect hosts (those to check
    for hardware) and the failed attempts a config or environment change can fix (all but hardware faults)."""
    hw_hosts = [s.host for s in sus if any("hardware" in r for r in s.reasons)]
    with_fix = sig[sig["cause"] != "hardware_fault"] if len(sig) else sig
    headline = [f"{len(sig)} failure signatures"]
    if base is not None:
        headline.append(
            f"{marks.count('new')} new, {marks.count('regressed')} regressed since {html.escape(base.path)}"
        )
    headline.append(f"{len(sus)} suspect hosts" + (f" ({len(hw_hosts)} to check for hardware)" if hw_hosts else ""))
    headline.append(
        f"{int(with_fix['count'].sum()) if len(with_fix) else 0} failed attempts with a config or "
        "environment change to make"
    )
    return headline


def _signatures_html(sig, marks: list[str], base) -> list[str]:
    """The signature table (a status column only against a baseline), then the signatures that went away."""
    e = html.escape
    parts = [
        '<h2>Signatures</h2><div class="scroll"><table class="sortable" id="signatures"><thead><tr>'
        "<th>count</th><th>signature</th>"
        + ("<th>status</th>" if base is not None else "")
        + "<th>cause</th><th>hosts</th><th>first seen</th>"
        "<th>last seen</th><th>first fix or action</th><th>error</th></tr></thead><tbody>"
    ]
    for (_, s), mark in zip(sig.iterrows(), marks):
        tag = f'<span class="tag {mark}">{mark}</span>' if mark else ""
        parts.append(
            f'<tr data-signature="{e(str(s["signature"]))}"><td class="num">{s["count"]}</td>'
            f'<td class="sig"><a href="#{_slug(s["signature"])}"><code>{e(str(s["signature"]))}</code></a></td>'
            + (f"<td>{tag}</td>" if base is not None else "")
            + f'<td>{e(str(s["cause"]))}</td><td>{e(_str(s["hosts"]))}</td><td class="when">{_ts(s["first_seen"])}</td>'
            f'<td class="when">{_ts(s["last_seen"])}</td><td class="fix">{e(_str(s["first_fix"]))}</td>'
            f'<td class="ev"><code>{e(_cut(_str(s["error_template"]), 120))}</code></td></tr>'
        )
    parts.append("</tbody></table></div>")
    if not len(sig):
        parts.append("<p>No failed attempt.</p>")
    gone = views.gone(sig, base)
    if gone:
        parts.append(
            '<p id="gone">In the baseline but not in this run: '
            + ", ".join(f"<code>{e(g)}</code>" for g in gone)
            + "</p>"
        )
    return parts


def _suspects_html(sus: list) -> list[str]:
    """The suspect hosts table, or a line saying none stands out."""
    e = html.escape
    parts = ["<h2>Suspect hosts</h2>"]
    if not sus:
        return parts + ["<p>No host stands out.</p>"]
    parts.append(
        '<div class="scroll"><table class="sortable" id="suspects"><thead><tr><th>host</th>'
        "<th>failed</th><th>attempts</th><th>why</th><th>evidence</th></tr></thead><tbody>"
    )
    for s in sus:
        ev = "<br>".join(f"<code>{e(x)}</code>" for x in s.evidence)
        parts.append(
            f'<tr class="sus"><td>{e(s.host)}</td><td class="num">{s.failed}</td>'
            f'<td class="num">{s.attempts}</td><td>{e("; ".join(s.reasons))}</td>'
            f'<td class="ev">{ev}</td></tr>'
        )
    parts.append("</tbody></table></div>")
    return parts


def _details_html(fh, sig, marks: list[str]) -> list[str]:
    """One folded section per signature (the table links to it): its error and frames, and its first 50 attempts
    with their evidence and the command that reproduces each verdict."""
    e = html.escape
    parts = ['<h2>Signatures in detail</h2><div id="details">']
    for (_, s), mark in zip(sig.iterrows(), marks):
        g = fh[fh["signature"] == s["signature"]].sort_values("start_time", na_position="last")
        parts.append(
            f'<details id="{_slug(s["signature"])}"><summary><code>{e(str(s["signature"]))}</code> — '
            f"{s['count']} attempts, {e(str(s['cause']))}"
            + (f" ({mark})" if mark else "")
            + f"</summary><p><code>{e(_str(s['error_template']))}</code>"
            + (f"<br><small>{e(_str(s['frames']))}</small>" if not _na(s["frames"]) else "")
            + "</p><table><thead><tr><th>start</th><th>host</th><th>where</th><th>evidence</th>"
            "<th>reproduce</th></tr></thead><tbody>"
        )
        for _, r in g.head(50).iterrows():
            where = _where(r["source"], r["member"])
            repro = (
                f"logdoctor explain {where}"
                if _na(r["member"])
                else f"tar -xOf {r['source']} {r['member']} | logdoctor explain"
            )
            parts.append(
                f"<tr><td>{_ts(r['start_time'])}</td><td>{e(_str(r['host']))}</td>"
                f'<td>{e(where)}:{_line(r["evidence_line"])}</td><td class="ev"><code>{e(_str(r["evidence"]))}'
                f"</code></td><td><code>{e(repro)}</code></td></tr>"
            )
        parts.append(
            "</tbody></table>"
            + (f"<p>{len(g) - 50} more in the attempts table.</p>" if len(g) > 50 else "")
            + "</details>"
        )
    parts.append("</div>")
    return parts


def _inputs_html(inputs: list[dict], max_rows: int) -> list[str]:
    """The inputs that gave no attempt (unreadable or empty), at most max_rows of them."""
    e = html.escape
    bad = [i for i in inputs if i["status"] in ("unreadable", "empty")]
    parts = ["<h2>Inputs not diagnosed</h2>"]
    if not bad:
        return parts + ["<p>Every input was read.</p>"]
    parts.append(
        '<div class="scroll"><table class="sortable" id="inputs"><thead><tr><th>status</th>'
        "<th>input</th><th>reason</th></tr></thead><tbody>"
    )
    for i in bad[:max_rows]:
        parts.append(
            f'<tr><td class="{"bad" if i["status"] == "unreadable" else ""}">{e(i["status"])}</td>'
            f"<td>{e(_where(i['source'], i['member']))}</td><td>{e(str(i['reason']))}</td></tr>"
        )
    parts.append("</tbody></table></div>")
    if len(bad) > max_rows:
        parts.append(f"<p>{len(bad) - max_rows} more inputs not shown: use --format json for all of them.</p>")
    return parts


_ATTEMPT_COLUMNS = [
    "start_time",
    "host",
    "unit",
    "engine",
    "engine_version",
    "attempt",
    "phase",
    "outcome",
    "cause",
    "confidence",
    "rule",
    "first_fix",
    "signature",
    "source",
    "member",
    "evidence_line",
    "evidence",
]


def _attempts_html(a, max_rows: int) -> list[str]:
    """The attempts table, first max_rows attempts by start time."""
    parts = [
        '<h2>Attempts</h2><div class="scroll"><table class="sortable" id="attempts"><thead><tr>'
        + "".join(f"<th>{c}</th>" for c in _ATTEMPT_COLUMNS)
        + "</tr></thead><tbody>"
    ]
    shown = views.with_hosts(a).sort_values("start_time", na_position="last").head(max_rows)
    for _, r in shown.iterrows():
        parts.append("<tr>" + "".join(_attempt_cell(c, r[c]) for c in _ATTEMPT_COLUMNS) + "</tr>")
    parts.append("</tbody></table></div>")
    if len(a) > max_rows:
        parts.append(f"<p>{len(a) - max_rows} more attempts not shown: use --format csv for all of them.</p>")
    return parts


def _attempt_cell(c: str, v) -> str:
    """One cell of the attempts table: evidence cut to 300 characters, a signature linked to its section."""
    e = html.escape
    if c == "evidence_line":
        v = _line(v)
    v = "" if _na(v) else (_ts(v) if c == "start_time" else v)
    if c == "evidence":
        return f'<td class="ev"><code>{e(_cut(str(v), 300))}</code></td>'
    if c == "signature" and v:
        return f'<td class="sig"><a href="#{_slug(v)}">{e(str(v))}</a></td>'
    return f"<td>{e(str(v))}</td>"


# one colour per cause, the same in every plot and every report (vocab order); 13 causes + unknown + other
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#393b79",
    "#637939",
    "#ad494a",
    "#7b4173",
    "#7f7f7f",
    "#c7c7c7",
    "#aec7e8",
    "#ffbb78",
    "#98df8a",
)


def cause_colours() -> dict[str, str]:
    from logdoctor.core.vocab import CAUSES

    names = [*CAUSES, "unknown", "other"]
    return {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(names)}


def _label(s) -> str:
    """Text for a matplotlib label, as is: text.parse_math is off in _plots, so "$...$" in a host name is text, not
    mathtext (it crashed the whole report, F11)."""
    return str(s)


def _plots(df) -> list[tuple[str, str, str]]:
    """Causes over time (a real time axis: empty days stay empty), by host, by engine version, and a host × cause
    heat map, as compact inline SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, and searchable in the page
    plt.rcParams["text.parse_math"] = False  # a '$' from a log is a dollar sign (F11)
    f = views.with_hosts(views.failures(df))
    out: list[tuple[str, str, str]] = []
    if f.empty:
        return out
    f["cause"] = f["cause"].fillna("unknown")
    colours = cause_colours()
    f.loc[~f["cause"].isin(list(colours)), "cause"] = "other"
    order = [c for c in colours if c in set(f["cause"])]

    def svg(fig) -> str:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight")
        plt.close(fig)
        text = buf.getvalue()
        text = re.sub(r"<metadata>.*?</metadata>", "", text[text.find("<svg") :], flags=re.S)
        return text

    def legend(ax) -> None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1), frameon=False)

    def stacked_barh(tab, ax) -> None:
        left = None
        labels = [_label(x) for x in tab.index]
        for c in [c for c in order if c in tab.columns]:
            ax.barh(labels, tab[c].values, left=left, color=colours[c], label=c, height=0.75)
            left = tab[c].values if left is None else left + tab[c].values
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.invert_yaxis()

    t = f.dropna(subset=["start_time"])
    if not t.empty:
        import pandas as pd

        span = t["start_time"].max() - t["start_time"].min()
        freq = "h" if span <= pd.Timedelta(days=2) else "D"
        tab = t.groupby([t["start_time"].dt.floor(freq), "cause"]).size().unstack(fill_value=0)
        width = (1 / 24 if freq == "h" else 1) * 0.9
        fig, ax = plt.subplots(figsize=(6.4, 2.4))
        bottom = None
        for c in [c for c in order if c in tab.columns]:
            x = mdates.date2num(tab.index.to_pydatetime())
            ax.bar(x, tab[c].values, bottom=bottom, width=width, color=colours[c], label=c, align="edge")
            bottom = tab[c].values if bottom is None else bottom + tab[c].values
        ax.xaxis_date()
        loc = mdates.AutoDateLocator(maxticks=8)
        ax.xaxis.set_major_locator(loc)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("failed attempts", fontsize=8)
        ax.tick_params(labelsize=7)
        legend(ax)
        ax.set_title("Causes over time", fontsize=9)
        out.append(
            (
                "plot-time",
                "Failed attempts per " + ("hour" if freq == "h" else "day") + " on a real time axis "
                "(days without a failure stay empty)",
                svg(fig),
            )
        )
    tab = f.groupby(["host", "cause"]).size().unstack(fill_value=0)
    tab = tab.loc[tab.sum(axis=1).sort_values(ascending=False).index[:20]]
    fig, ax = plt.subplots(figsize=(6.4, min(4.0, max(1.6, 0.22 * len(tab) + 0.8))))
    stacked_barh(tab, ax)
    ax.set_xlabel("failed attempts", fontsize=8)
    ax.tick_params(labelsize=7)
    legend(ax)
    ax.set_title("Causes by host (or file, where the log names no host)", fontsize=9)
    out.append(("plot-host", "Failed attempts by host and cause (top 20)", svg(fig)))
    v = f.assign(ver=f["engine"].fillna("?") + " " + f["engine_version"].fillna("?"))
    tab = v.groupby(["ver", "cause"]).size().unstack(fill_value=0)
    tab = tab.loc[tab.sum(axis=1).sort_values(ascending=False).index[:15]]
    fig, ax = plt.subplots(figsize=(6.4, min(3.5, max(1.4, 0.22 * len(tab) + 0.8))))
    stacked_barh(tab, ax)
    ax.set_xlabel("failed attempts", fontsize=8)
    ax.tick_params(labelsize=7)
    legend(ax)
    ax.set_title("Causes by engine version", fontsize=9)
    out.append(("plot-version", "Failed attempts by engine and version", svg(fig)))
    hm = f.groupby(["host", "cause"]).size().unstack(fill_value=0)
    hm = hm.loc[hm.sum(axis=1).sort_values(ascending=False).index[:20], [c for c in order if c in hm.columns]]
    fig, ax = plt.subplots(figsize=(min(6.4, 1.4 + 0.55 * hm.shape[1]), min(4.5, 1.0 + 0.22 * hm.shape[0])))
    im = ax.imshow(hm.values, aspect="auto", cmap="Reds", vmin=0)
    ax.set_xticks(range(hm.shape[1]), list(hm.columns), rotation=40, ha="right", fontsize=7)
    ax.set_yticks(range(hm.shape[0]), [_label(x) for x in hm.index], fontsize=7)
    top = hm.values.max() or 1
    for i in range(hm.shape[0]):
        for j in range(hm.shape[1]):
            if hm.values[i, j]:
                ax.text(
                    j,
                    i,
                    str(hm.values[i, j]),
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if hm.values[i, j] > top / 2 else "black",
                )
    fig.colorbar(im, ax=ax, shrink=0.8).ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Host × cause", fontsize=9)
    out.append(("plot-heatmap", "Host × cause heat map (failed attempts)", svg(fig)))
    return out
