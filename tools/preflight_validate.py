"""Validate preflight's budget against the numbers the engines printed at start-up (issue 21, item 4).

For every case (a folder with journal.log + label.yaml) whose log prints SGLang's `Load weight end ... mem usage=`,
`KV Cache is allocated. #tokens:` / `max_total_num_tokens=`, or vLLM's `Model loading took ... GiB`,
`Available KV cache memory:`, `GPU KV cache size: ... tokens`, and names a model in the config catalogue
(tests/data/preflight/models/), predict from the logged flags and the labelled GPU and compare:
weights (target: within 2 %), KV pool (within 5 %), and the verdict (a logged pool failure must be no-go, a healthy
start go or risky).

Run: python tools/preflight_validate.py [CASE_ROOT ...] [--markdown]
     (default: fixtures/journals; the dev corpus may be measured, never copied)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "tests" / "data" / "preflight" / "models"
sys.path.insert(0, str(ROOT))

# nvidia-smi's framebuffer total (MiB) per card, from the cards' `nvidia-smi -q` (what --gpu-memory would be given)
GPU_MIB = [
    ("H200", 143771),
    ("H100", 81559),
    ("A100", 81920),
    ("L40S", 46068),
    ("RTX PRO 6000", 97887),
    ("H20", 97871),
    ("B200", 183359),
    ("A10G", 23028),
    ("L4", 23034),
    ("4090", 24564),
]

_WEND = re.compile(r"Load weight end\..*?mem usage=([\d.]+) GB")
_WBEGIN = re.compile(r"Load weight begin\. avail mem=([\d.]+) GB")
_KVTOK = re.compile(r"(?:KV Cache is allocated\. (?:dtype: \S+, )?#tokens: |max_total_num_tokens=)(\d+)")
_VLOAD = re.compile(r"Model loading took ([\d.]+) GiB")
_VAVAIL = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
_VTOK = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_POOLFAIL = re.compile(
    r"Not enough memory\. Please try to increase --mem-fraction-static|No available memory for "
    r"the cache blocks|KV cache is needed, which is larger than"
)
_CAPOOM = re.compile(
    r"(?:Capture cuda graph failed|capture_one_batch_size|Capturing CUDA graph)[\s\S]*out of memory", re.I
)
_VMODEL = re.compile(r"serving model (\S+)|Starting to load model (\S+)")


@dataclass
class Row:
    case: str
    engine: str
    model: str
    gpu: str
    tp: int
    weights_logged: float | None = None
    weights_pred: float | None = None
    pool_logged: float | None = None  # SGLang: tokens; vLLM: GiB available
    pool_pred: float | None = None
    pool_unit: str = ""
    pool_from_readings: float | None = None  # SGLang: the engine's formula applied to the log's own avail-mem readings
    readings_verdict: str = ""  # the verdict of that formula over the log's own readings
    logged_outcome: str = ""  # pool_fail | healthy | other
    verdict: str = ""
    cause: str | None = None
    label_cause: str | None = None
    synthetic: bool = False

    @property
    def weights_err(self) -> float | None:
        if self.weights_logged and self.weights_pred is not None:
            return (self.weights_pred - self.weights_logged) / self.weights_logged
        return None

    @property
    def pool_err(self) -> float | None:
        if self.pool_logged and self.pool_pred is not None:
            return (self.pool_pred - self.pool_logged) / self.pool_logged
        return None

    @property
    def readings_err(self) -> float | None:
        """How far the log's own tokens are from SGLang's formula over its own readings: a self-consistency check of
        the case (a recorded log is near 0; a composed one may not be)."""
        if self.pool_logged and self.pool_from_readings:
            return (self.pool_from_readings - self.pool_logged) / self.pool_logged
        return None

    @property
    def consistent(self) -> bool:
        """False when the engine's formula over the log's own readings contradicts the logged outcome: a composed
        log whose numbers could not have produced it (such cases are listed, not counted)."""
        if not self.readings_verdict:
            return True
        if self.logged_outcome == "pool_fail":
            return self.readings_verdict == "no-go"
        if self.logged_outcome == "healthy":
            return self.readings_verdict in ("go", "risky")
        return True

    @property
    def verdict_ok(self) -> bool | None:
        if self.logged_outcome == "pool_fail":
            return self.verdict == "no-go" and self.cause == "kv_cache_oom"
        if self.logged_outcome == "healthy":
            return self.verdict in ("go", "risky")
        if self.logged_outcome == "capture_oom":
            return self.verdict in ("no-go", "risky") and self.cause == "graph_capture_fault"
        return None


def gpu_bytes(label_gpu: str) -> tuple[int, int] | None:
    """'2x H200 141GB' -> (2, bytes per GPU)."""
    m = re.match(r"\s*(\d+)\s*x\s*(.*)", label_gpu or "")
    if not m:
        return None
    for name, mib in GPU_MIB:
        if name.lower() in m.group(2).lower():
            return int(m.group(1)), mib << 20
    return None


def _catalogue_dir(model: str) -> Path | None:
    base = model.rstrip("/").rsplit("/", 1)[-1].lower()
    for d in CATALOGUE.iterdir():
        if d.name.lower() == base:
            return d
    return None


# labels of composed logs (fixturegen) and of red-team logs: their numbers are written, not measured on a GPU
_COMPOSED = ("fixturegen", "red-team", "red team")


def _synthetic(label: dict) -> bool:
    text = f"{label.get('source') or ''} {label.get('generator') or ''}"
    return any(w in text for w in _COMPOSED)


def case_row(d: Path) -> Row | None:
    import yaml

    from logdoctor.preflight import budget as bud
    from logdoctor.preflight import model as mdl
    from logdoctor.preflight.health import Sign  # noqa: F401 - same import path as the CLI
    from logdoctor.preflight.verdict import decide
    from logdoctor.scan.sources import read_any
    from logdoctor.timeline.build import build

    log = d / "journal.log"
    if not log.is_file() or not (d / "label.yaml").is_file():
        return None
    text = log.read_text(encoding="utf-8", errors="replace")
    if not (_WEND.search(text) or _KVTOK.search(text) or _VLOAD.search(text) or _VAVAIL.search(text)):
        return None
    label = yaml.safe_load((d / "label.yaml").read_text()) or {}
    gb = gpu_bytes(str(label.get("gpu") or ""))
    if gb is None:
        return None
    tl = build(read_any(log).records)
    if tl.engine not in ("sglang", "vllm") or not tl.attempts:
        return None
    a = tl.attempts[0]  # the first attempt: its own flags, its own numbers
    from logdoctor.timeline.config import _merge

    raw = _merge([ly for ly in a.config.layers if ly[1] != "resolved"])  # the flags, not what the engine computed
    lo, hi = a.start_line, a.end_line
    msgs = [r.msg for r in a.records if r.msg] or [ln for ln in text.splitlines()[lo:hi]]
    body = "\n".join(msgs)
    model = str(raw.get("model_path") or raw.get("model") or "")
    if not model and (m := _VMODEL.search(body)):
        model = m.group(1) or m.group(2)
    cdir = _catalogue_dir(model) if model else None
    if cdir is None:
        return None
    spec, _ = mdl.load(cdir)
    tp = int(raw.get("tp_size") or raw.get("tensor_parallel_size") or 1)
    row = Row(
        d.name,
        tl.engine,
        cdir.name,
        str(label.get("gpu")),
        tp,
        label_cause=label.get("cause"),
        synthetic=_synthetic(label),
    )
    b = bud.compute(tl.engine, spec, raw, gb[1], version=tl.engine_version)
    row.weights_pred = b.values.get("weights")
    if tl.engine == "sglang":
        if m := _WEND.search(body):
            row.weights_logged = float(m.group(1))
        if m := _KVTOK.search(body):
            row.pool_logged = float(m.group(1))
        row.pool_pred, row.pool_unit = b.values.get("pool_tokens"), "tokens"
        ends = re.findall(r"Load weight end\..*?avail mem=([\d.]+) GB", body)
        if (wb := _WBEGIN.search(body)) and ends:
            before = float(wb.group(1)) * (1 << 30)
            # the last reading after the last load (a draft model loads after the target)
            used = before - min(float(x) for x in ends) * (1 << 30)
            rb = bud.compute(
                "sglang",
                spec,
                raw,
                gb[1],
                version=tl.engine_version,
                size=False,
                readings={"avail_before": before, "weights": used},
            )
            row.pool_from_readings = rb.values.get("pool_tokens")
            row.readings_verdict = decide("sglang", rb, [], raw, a.config.levers, {}).verdict
    else:
        if m := _VLOAD.search(body):
            row.weights_logged = float(m.group(1))
        if m := _VAVAIL.search(body):
            row.pool_logged = float(m.group(1))
        row.pool_pred, row.pool_unit = b.values.get("kv_memory"), "GiB"
    if _POOLFAIL.search(body):
        row.logged_outcome = "pool_fail"
    elif label.get("cause") == "graph_capture_fault" and _CAPOOM.search(body):
        row.logged_outcome = "capture_oom"
    elif label.get("failed") is False:
        row.logged_outcome = "healthy"
    else:
        row.logged_outcome = "other"
    rep = decide(tl.engine, b, [], raw, a.config.levers, {}, tl.engine_version)
    row.verdict, row.cause = rep.verdict, rep.cause
    return row


def _cases(root: Path) -> list[Path]:
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        out.extend([d] if (d / "journal.log").is_file() else _cases(d))
    return out


def rows(roots: list[Path]) -> list[Row]:
    out = []
    for root in roots:
        for d in _cases(root):
            try:
                r = case_row(d)
            except Exception as e:  # noqa: BLE001 - one unreadable case must not hide the table
                print(f"{d.name}: skipped ({type(e).__name__}: {e})", file=sys.stderr)
                continue
            if r is not None:
                out.append(r)
    return out


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x * 100:+.1f}%"


def table(rs: list[Row]) -> str:
    head = (
        "| case | engine | model | GPU | TP | weights logged → predicted (GiB) | err | pool logged → predicted | err "
        "| formula over the log's readings | logged | verdict | ok |"
    )
    out = [head, "|" + "---|" * 13]
    for r in rs:
        wl = "" if r.weights_logged is None else f"{r.weights_logged:.2f}"
        wp = "" if r.weights_pred is None else f"{r.weights_pred:.2f}"
        fmt = (lambda v: f"{v:,.0f}") if r.pool_unit == "tokens" else (lambda v: f"{v:.2f}")
        pl = "" if r.pool_logged is None else fmt(r.pool_logged)
        pp = "" if r.pool_pred is None else fmt(r.pool_pred)
        ok = {True: "yes", False: "NO", None: ""}[r.verdict_ok]
        if not r.consistent:
            ok += " (the log's own readings contradict its outcome)"
        out.append(
            f"| {r.case}{' (synthetic)' if r.synthetic else ''} | {r.engine} | {r.model} | {r.gpu} | {r.tp} | "
            f"{wl} → {wp} | {_pct(r.weights_err)} | {pl} → {pp} {r.pool_unit} | {_pct(r.pool_err)} | "
            f"{_pct(r.readings_err)} | {r.logged_outcome} | {r.verdict}{' ' + r.cause if r.cause else ''} | {ok} |"
        )
    return "\n".join(out)


def summary(rs: list[Row]) -> str:
    def within(errs: list[float], lim: float) -> str:
        return f"{sum(abs(e) <= lim for e in errs)}/{len(errs)}"

    we = [r.weights_err for r in rs if r.weights_err is not None]
    pe = [r.pool_err for r in rs if r.pool_err is not None]
    vo = [r.verdict_ok for r in rs if r.verdict_ok is not None and r.consistent]
    bad = [r.case for r in rs if not r.consistent]
    re_ = [r.readings_err for r in rs if r.readings_err is not None]
    med = lambda xs: sorted(abs(x) for x in xs)[len(xs) // 2] if xs else float("nan")
    rec = [r for r in rs if not r.synthetic]
    rw = [r.weights_err for r in rec if r.weights_err is not None]
    rp = [r.pool_err for r in rec if r.pool_err is not None]
    head = (
        f"not composed by fixturegen: {len(rec)} cases; weights within 2 %: {within(rw, 0.02)}, KV pool within 5 %: "
        f"{within(rp, 0.05)}, max |err| weights {max(map(abs, rw), default=0) * 100:.2f} %, pool "
        f"{max(map(abs, rp), default=0) * 100:.2f} %\nall: "
    )
    return head + (
        f"{len(rs)} cases; weights within 2 %: {within(we, 0.02)} (median |err| {med(we) * 100:.1f} %); "
        f"KV pool within 5 %: {within(pe, 0.05)} (median |err| {med(pe) * 100:.1f} %); verdicts right: "
        f"{sum(vo)}/{len(vo)} (pool failures no-go, graph-capture OOMs no-go/risky graph_capture_fault, healthy "
        f"starts go/risky); logs whose own readings follow "
        f"SGLang's formula within 1 %: {within(re_, 0.01)}; outcome contradicted by the log's own readings "
        f"(not counted): {', '.join(bad) or 'none'}"
    )


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv if not a.startswith("--")] or [ROOT / "fixtures" / "journals"]
    rs = rows(roots)
    print(table(rs))
    print()
    print(summary(rs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
