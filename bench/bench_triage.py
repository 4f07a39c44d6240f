"""Benchmark `logdoctor triage` on a reproducible generated fleet archive, side by side with `grep -cE` (the same
prefilter patterns: the practical I/O limit) and Drain3 template mining over the same lines (the common log-mining
library; a bench-only extra: pip install drain3).

    python bench/bench_triage.py gen DIR [--size MB] [--seed N] [--failing P]   # the archive (default 1024 MB;
                                                                     --failing 1: failure-dense)
    python bench/bench_triage.py run DIR [--drain-mb MB] [--repeat N] [--skip-dask] [--json OUT]

The archive: hosts/hNN/engine.log[.N][.gz] made of fixture attempts (host names rewritten) separated by long
stretches of serving noise (SGLang decode-batch lines, request logs, vLLM throughput lines), about 1 in 6 files
gzipped, one tar.gz of bug-report snippets. Every run reports MB/s (uncompressed bytes), lines/s and the peak RSS
of the largest process (ru_maxrss over the run's process tree). Drain3 runs over all the same lines by default
(~90 s for the default archive); --drain-mb N stops it after N MB and scales, which flatters it (its cost per line
grows with the templates it has learnt).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "journals"
HEALTHY = (
    "sglang-healthy-llama8b-classic",
    "sglang-healthy-qwen30b-l40s-precise",
    "vllm-healthy-llama8b",
    "sglang-healthy-qwen3next-tp4-nccl",
    "vllm-healthy-b200-eager-precise",
)
FAILING = (
    "seed-attempt1-kv-oom",
    "seed-attempt2-capture-unsafe",
    "seed-attempt3-hardware",
    "sglang-hardware_fault-xid94-serving",
    "sglang-port_in_use-http-attempts",
    "vllm-hardware_fault-attempts",
    "sglang-graph_capture_fault-unsafe-gdn-h100",
    "sglang-kv_cache_oom-llama70b-a100-classic",
)
FILE_MB = 8


def _noise_block(rnd: random.Random, host: str, n: int) -> bytes:
    out = []
    for _ in range(n):
        k = rnd.random()
        ts = f"May 23 {rnd.randrange(24):02d}:{rnd.randrange(60):02d}:{rnd.randrange(60):02d}"
        if k < 0.45:
            out.append(
                f"{ts} {host} python3[2314]: [2026-05-23 10:00:00 TP0] Decode batch. #running-req: "
                f"{rnd.randrange(64)}, #token: {rnd.randrange(200000)}, token usage: 0.{rnd.randrange(99):02d}, "
                f"cuda graph: True, gen throughput (token/s): {rnd.randrange(4000)}.{rnd.randrange(10)}, "
                f"#queue-req: {rnd.randrange(5)}"
            )
        elif k < 0.85:
            out.append(
                f"{ts} {host} python3[2314]: [2026-05-23 10:00:00] INFO:     10.{rnd.randrange(255)}."
                f'{rnd.randrange(255)}.{rnd.randrange(255)}:{rnd.randrange(1024, 65535)} - "POST /v1/chat/completions '
                f'HTTP/1.1" 200 OK'
            )
        else:
            out.append(
                f"{ts} {host} python3[2314]: [2026-05-23 10:00:00 TP0] Prefill batch. #new-seq: "
                f"{rnd.randrange(8)}, #new-token: {rnd.randrange(8192)}, #cached-token: {rnd.randrange(8192)}, "
                f"token usage: 0.{rnd.randrange(99):02d}, #running-req: {rnd.randrange(64)}, #queue-req: 0"
            )
    return ("\n".join(out) + "\n").encode()


def _rehost(text: str, host: str) -> str:
    import re

    # only a journal line's host field: a timestamp, a host, then "ident[pid]: " (a docker timestamp followed by the
    # engine's own "[2026-05-28 05:21:19] ..." has no host to rewrite)
    return re.sub(
        r"^((?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?)|(?:\d{4}-\d\d-\d\dT\S+)) (?!\[)\S+ "
        r"(?=[\w.@/\-]+(?:\[\d+\])?: )",
        lambda m: f"{m.group(1)} {host} ",
        text,
        flags=re.M,
    )


def gen(out: Path, size_mb: int, seed: int, failing: float = 0.3) -> None:
    rnd = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    logs = {c: (FIX / c / "journal.log").read_text() for c in HEALTHY + FAILING if (FIX / c / "journal.log").exists()}
    healthy = [c for c in HEALTHY if c in logs]
    failing_rate, failing = failing, [c for c in FAILING if c in logs]
    written, n = 0, 0
    target = size_mb << 20
    blocks: dict[str, bytes] = {}
    while written < target:
        host = f"h{n % 32:02d}"
        noise = blocks.get(host) or blocks.setdefault(host, _noise_block(random.Random(seed + n % 32), host, 9000))
        parts = []
        size = 0
        while size < FILE_MB << 20:
            parts.append(_rehost(logs[rnd.choice(healthy)], host).encode())
            for _ in range(rnd.randrange(2, 6)):
                parts.append(noise)
            if rnd.random() < failing_rate:
                parts.append(_rehost(logs[rnd.choice(failing)], host).encode())
            size = sum(len(p) for p in parts)
        data = b"".join(parts)
        d = out / "hosts" / host
        d.mkdir(parents=True, exist_ok=True)
        rot = n // 32
        name = "engine.log" + (f".{rot}" if rot else "")
        if n % 6 == 5:
            (d / (name + ".gz")).write_bytes(gzip.compress(data, compresslevel=1))
        else:
            (d / name).write_bytes(data)
        written += len(data)
        n += 1
    tpath = out / "bugreports.tar.gz"
    with tarfile.open(tpath, "w:gz") as tar:
        for c in failing:
            blob = logs[c].encode()
            info = tarfile.TarInfo(f"reports/{c}.log")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    print(f"wrote {written / 1e6:.0f} MB in {n} files under {out}")


def _files(root: Path) -> tuple[list[str], list[str]]:
    plain, gz = [], []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            (gz if p.name.endswith(".gz") else plain).append(str(p))
    return plain, gz


def _measured(cmd: list[str], env=None) -> tuple[float, int, str, float]:
    """Run cmd in a wrapper that reports the peak RSS (KiB) of the whole process tree it waited for."""
    wrap = (
        "import resource,subprocess,sys,time,json;t=time.perf_counter();"
        "p=subprocess.run(sys.argv[1:],stdout=subprocess.PIPE,stderr=subprocess.PIPE);"
        "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
        "print(json.dumps({'s':time.perf_counter()-t,'rss':u.ru_maxrss,'cpu':u.ru_utime+u.ru_stime,"
        "'rc':p.returncode,'out':p.stdout.decode(errors='replace')[-3000:],'err':p.stderr.decode(errors='replace')[-1500:]}))"
    )
    p = subprocess.run([sys.executable, "-c", wrap, *cmd], capture_output=True, text=True, env=env)
    r = json.loads(p.stdout)
    if r["rc"] not in (0, 1, 2):
        raise SystemExit(f"{cmd[:4]} failed rc={r['rc']}: {r['err']}")
    return r["s"], r["rss"], r["out"], r["cpu"]


def _uncompressed(plain: list[str], gz: list[str]) -> tuple[int, int]:
    total, lines = 0, 0
    for p in plain:
        with open(p, "rb") as fh:
            for b in iter(lambda: fh.read(1 << 24), b""):
                total += len(b)
                lines += b.count(b"\n")
    for p in gz:
        with gzip.open(p, "rb") as fh:
            for b in iter(lambda: fh.read(1 << 24), b""):
                total += len(b)
                lines += b.count(b"\n")
    return total, lines


def drain3_rate(plain: list[str], gz: list[str], mb: int) -> tuple[float, int, int]:
    """Drain3 template mining over the archive's lines (gz files decompressed, as triage reads them) → (seconds,
    bytes, lines); `mb` > 0 stops after that many MB. Drain3's cost per line grows as it learns templates (26.8 MB/s
    over the first 32 MB of the default archive, 17.4 over 512 MB, 12.9 over all of it), so only a whole run is a
    fair baseline; a sample is for quick runs and flatters Drain3."""
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    cfg = TemplateMinerConfig()
    cfg.profiling_enabled = False
    tm = TemplateMiner(config=cfg)
    budget, nbytes, nlines = (mb << 20) if mb > 0 else float("inf"), 0, 0
    t = time.perf_counter()
    for p in plain + gz:
        with gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb") as fh:
            for line in fh:
                tm.add_log_message(line.decode("utf-8", "replace").rstrip("\n"))
                nbytes += len(line)
                nlines += 1
                if nbytes >= budget:
                    return time.perf_counter() - t, nbytes, nlines
    return time.perf_counter() - t, nbytes, nlines


def _burn(seconds: float) -> float:
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass
    return time.process_time() - t


def pace(n: int = 5_000_000) -> float:
    """A control of one core's speed on a shared (virtual) machine: CPU seconds of a fixed pure-Python loop. Drain3
    runs for a minute and a half and triage for seconds; if the host's pace changed in between, this shows it."""
    t = time.process_time()
    x = 0
    for i in range(n):
        x += i
    return time.process_time() - t


def cores_available(seconds: float = 1.5) -> float:
    """A control for a shared machine: two processes that each burn `seconds` of CPU at once; CPU seconds done per
    wall second is the number of cores this run actually gets (2.0 on a free 2-core machine). A jobs-2/jobs-1 ratio
    can only be read against it."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2) as ex:
        list(ex.map(_burn, [0.01, 0.01]))  # workers started before the clock
        t = time.perf_counter()
        cpu = sum(ex.map(_burn, [seconds, seconds]))
        return cpu / (time.perf_counter() - t)


def run(root: Path, drain_mb: int, skip_dask: bool, repeat: int = 3) -> dict:
    sys.path.insert(0, str(ROOT))
    from logdoctor.scan.prefilter import best_engine, best_scanner, grep_pattern

    plain, gz = _files(root)
    total, lines = _uncompressed(plain, gz)
    res: dict = {
        "archive": str(root),
        "files": len(plain) + len(gz),
        "gz_files": len(gz),
        "bytes": total,
        "lines": lines,
        "prefilter_engine": best_engine(),
        "scanner": best_scanner(),
        "cpus": os.cpu_count(),
        "rows": {},
    }
    print(
        f"archive {root}: {len(plain) + len(gz)} files ({len(gz)} gz), {total / 1e6:.0f} MB uncompressed, "
        f"{lines} lines; prefilter {best_scanner()}"
        + (" (+ RE2 on its candidate lines)" if best_scanner() == "hyperscan" else "")
    )
    pats = [p for p in grep_pattern().split("\n") if p]
    ok = [p for p in pats if subprocess.run(["grep", "-E", "-e", p, "/dev/null"], capture_output=True).returncode == 1]
    res["grep_patterns"] = {"used": len(ok), "not_ere": len(pats) - len(ok)}
    print(
        f"grep -cE: {len(ok)} of the prefilter's {len(pats)} patterns are valid POSIX ERE (the rest use Python-only syntax)"
    )
    patfile = root.parent / (root.name + ".prefilter.ere")
    patfile.write_text("\n".join(ok) + "\n")
    grep_cmd = [
        "bash",
        "-c",
        f'export LC_ALL=C; grep -cE -f {patfile} "$@" >/dev/null; '
        f'for f in {" ".join(gz)}; do zcat "$f" | grep -cE -f {patfile} >/dev/null; done; true',
        "grep",
        *plain,
    ]
    s, rss, out, cpu = _measured(grep_cmd)
    res["rows"]["grep -cE (same patterns)"] = {"s": s, "rss_kib": rss, "cpu": cpu}
    res["pace_before_drain3"] = pace()
    c0 = time.process_time()
    ds, db, dl = drain3_rate(plain, gz, drain_mb)
    dcpu = time.process_time() - c0
    drain = "Drain3 (all lines)" if db >= total else f"Drain3 (first {db / 1e6:.0f} MB, scaled)"
    res["rows"][drain] = {
        "s": ds * total / db,
        "rss_kib": None,
        "sample_bytes": db,
        "sample_lines": dl,
        "sample_s": ds,
        "cpu": dcpu * total / db,
    }
    res["pace_after_drain3"] = pace()
    py = sys.executable
    res["cores_available_before"] = cores_available()
    samples: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(repeat):  # interleaved: a change of the machine's pace hits both alike
        for jobs in (1, 2):
            s, rss, out, cpu = _measured(
                [
                    py,
                    "-m",
                    "logdoctor",
                    "triage",
                    str(root),
                    "--jobs",
                    str(jobs),
                    "--format",
                    "csv",
                    "--out",
                    os.devnull,
                ]
            )
            samples[jobs].append({"s": s, "rss_kib": rss, "cpu": cpu})
    for jobs, got in samples.items():
        best = sorted(got, key=lambda r: r["s"])[len(got) // 2]  # the median run by wall time
        res["rows"][f"logdoctor triage --jobs {jobs}"] = dict(
            best, samples=[round(r["s"], 2) for r in got], rss_kib=max(r["rss_kib"] for r in got)
        )
    if not skip_dask:
        script = (
            "import sys,logdoctor;from distributed import LocalCluster\n"
            "if __name__=='__main__':\n"
            " with LocalCluster(n_workers=2,threads_per_worker=1,processes=True,dashboard_address=None,"
            "silence_logs=40) as c:\n"
            "  import time;t=time.perf_counter();df=logdoctor.triage([sys.argv[1]],scheduler=c.scheduler_address);"
            "print('ROWS',len(df),'SECONDS',time.perf_counter()-t)\n"
        )
        sp = root.parent / "bench_dask_run.py"
        sp.write_text(script)
        s, rss, out, cpu = _measured([py, str(sp), str(root)])
        inner = float(out.split("SECONDS")[-1].strip()) if "SECONDS" in out else s
        res["rows"]["triage on Dask LocalCluster (2 workers)"] = {
            "s": inner,
            "rss_kib": rss,
            "with_startup_s": s,
            "cpu": cpu,
        }
    res["cores_available_after"] = cores_available()
    res["pace_end"] = pace()
    print(
        f"cores this run got (control: two busy processes, before/after the triage runs): "
        f"{res['cores_available_before']:.2f} / {res['cores_available_after']:.2f} of {os.cpu_count()}"
    )
    print(
        f"pace of one core (CPU s of a fixed loop; lower is faster) before Drain3 / after it / at the end: "
        f"{res['pace_before_drain3']:.2f} / {res['pace_after_drain3']:.2f} / {res['pace_end']:.2f}; triage runs "
        f"(wall s, {repeat} each, interleaved, the median is the table's): jobs 1 {samples[1] and [round(r['s'], 2) for r in samples[1]]}, "
        f"jobs 2 {[round(r['s'], 2) for r in samples[2]]}"
    )
    # the machine may be shared: CPU seconds (user+sys of the whole process tree) say what the work cost,
    # wall seconds what it took; both are printed
    print(f"{'':44s} {'wall s':>8s} {'MB/s':>8s} {'lines/s':>11s} {'CPU s':>8s} {'MB/CPU-s':>9s} {'peak RSS':>9s}")
    for name, r in res["rows"].items():
        r["mb_s"] = total / 1e6 / r["s"]
        r["lines_s"] = lines / r["s"]
        r["mb_cpu_s"] = total / 1e6 / r["cpu"] if r.get("cpu") else None
        rss = f"{r['rss_kib'] / 1024:.0f} MB" if r.get("rss_kib") else "-"
        print(
            f"{name:44s} {r['s']:8.1f} {r['mb_s']:8.1f} {r['lines_s']:11.0f} {r.get('cpu') or 0:8.1f} "
            f"{r['mb_cpu_s'] or 0:9.1f} {rss:>9s}"
        )
    t1 = res["rows"]["logdoctor triage --jobs 1"]["s"]
    t2 = res["rows"]["logdoctor triage --jobs 2"]["s"]
    dr = res["rows"][drain]["s"]
    g = res["rows"]["grep -cE (same patterns)"]["s"]
    res["ratios"] = {"jobs2_vs_jobs1": t1 / t2, "jobs2_vs_drain3": dr / t2, "jobs2_vs_grep": g / t2}
    b1, b2 = min(r["s"] for r in samples[1]), min(r["s"] for r in samples[2])
    res["ratios_best"] = {"jobs2_vs_jobs1": b1 / b2, "jobs2_vs_drain3": dr / b2}
    pairs = sorted(a["s"] / b["s"] for a, b in zip(samples[1], samples[2]))
    res["ratios"]["jobs2_vs_jobs1_pairwise_median"] = pairs[len(pairs) // 2]
    print(
        f"--jobs 2 vs --jobs 1, run by run (each pair back to back): {[round(x, 2) for x in pairs]}, median "
        f"{pairs[len(pairs) // 2]:.2f}x"
    )
    print(
        f"best of {repeat} (the least disturbed run of each): --jobs 1 {b1:.2f} s, --jobs 2 {b2:.2f} s "
        f"({total / 1e6 / b2:.0f} MB/s): {b1 / b2:.2f}x, {dr / b2:.1f}x Drain3"
    )
    print(
        f"ratios (medians): --jobs 2 is {t1 / t2:.2f}x --jobs 1, {dr / t2:.1f}x Drain3, {g / t2:.2f}x grep -cE "
        f"(>1 = faster than grep)"
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir", type=Path)
    g.add_argument("--size", type=int, default=1024, help="MB of uncompressed logs (default 1024)")
    g.add_argument("--seed", type=int, default=13)
    g.add_argument(
        "--failing",
        type=float,
        default=0.3,
        help="chance that a serving stretch ends in a failing "
        "attempt (default 0.3; 1.0: a failure-dense archive, every stretch of serving ends in a failure)",
    )
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument(
        "--drain-mb",
        type=int,
        default=0,
        help="Drain3 over the first MB only, scaled (default 0: all "
        "lines; a sample flatters Drain3, whose cost per line grows with what it has learnt)",
    )
    r.add_argument("--skip-dask", action="store_true")
    r.add_argument("--repeat", type=int, default=5, help="triage runs per job count, interleaved (median reported)")
    r.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.cmd == "gen":
        gen(a.dir, a.size, a.seed, a.failing)
    else:
        res = run(a.dir, a.drain_mb, a.skip_dask, a.repeat)
        if a.json:
            a.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
