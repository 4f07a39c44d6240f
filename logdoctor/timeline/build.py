"""records → events → per-rank phases → attempts, with the effective config of each attempt.

The phase a service died in is the phase its failing rank was in at the first fatal line: the last marker seen
(a begin/point marker puts the rank in that phase; an end marker moves it to the phase that follows). With no
marker at all (a pasted excerpt) the traceback frames decide (`FRAME_PHASES`).
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import TypedDict

from logdoctor.core import rxcache
from logdoctor.core.lean import dataclass, field
from logdoctor.core.records import KERNEL, KERNEL_WORDS, SERVICE, SYSTEMD, Record, kernel_sourced
from logdoctor.core.vocab import EventKind, PhaseSource
from logdoctor.engines import ENGINES, each
from logdoctor.engines import detect as engine_detect
from logdoctor.engines import markers as mk
from logdoctor.timeline import attempts as att
from logdoctor.timeline import decisive as dcs
from logdoctor.timeline import phases, serving, units
from logdoctor.timeline.blocks import Block, assemble
from logdoctor.timeline.config import Config, extract_config

PHASES = mk.PHASES
PHASE_INDEX = mk.PHASE_INDEX
_TABLES = {e.name: (e.markers, e.deaths) for e in ENGINES.values()}
# an engine that cannot be told: the markers of the engines registered as `unknown_fallback`, in registry order
_FALLBACK = (
    tuple(m for e in ENGINES.values() if e.unknown_fallback for m in e.markers),
    tuple(m for e in ENGINES.values() if e.unknown_fallback for m in e.deaths),
)

# traceback function names → the phase they run in (for excerpts without phase markers); first match wins,
# searched from the innermost frame outwards
FRAME_PHASES: tuple[tuple[str, str], ...] = (
    (
        r"^(capture|capture_one_batch_size|capture_model|_capture_cudagraphs|capture_graph|init_cuda_graphs|_capture|cuda_graph_capture|init_device_graphs)$",
        "graph_capture",
    ),
    (
        r"^(_dummy_sampler_run|_dummy_pooler_run|compile_or_warm_up_model|warmup|_warmup|_execute_warmup|warm_up_model|profile_run|_dummy_run|dummy_run)$",
        "warmup",
    ),
    (
        r"^(init_memory_pool|profile_max_num_token|determine_available_memory|_initialize_kv_caches|initialize_kv_cache|init_cache_engine|_init_cache|determine_num_available_blocks|allocate_kv_cache|_allocate_kv_cache_tensors|get_kv_cache_spec|handle_max_mamba_cache|configure_kv_cache|init_kv_cache)$",
        "memory_pool",
    ),
    (
        r"^(init_attention_backend|init_cublas|init_flashinfer|_init_attention|get_attn_backend|init_threads_binding)$",
        "kernel_init",
    ),
    (
        r"^(load_model|load_weights|_load_weights|load_state_dict|get_model|create_weights|init_model|_init_model|load_weights_and_postprocess|_get_weights_iterator|safetensors_weights_iterator|initialize_model|_initialize_model|download_weights|_prepare_weights)$",
        "weight_load",
    ),
    (
        r"^(init_torch_distributed|init_distributed_environment|initialize_model_parallel|init_process_group|init_world_group|init_model_parallel_group|ensure_model_parallel_initialized|_init_distributed|init_worker_distributed_environment)$",
        "dist_init",
    ),
    (
        r"^(parse_args|check_server_args|__post_init__|create_engine_config|from_cli_args|_verify_args|verify_with_parallel_config|_check_and_set_config)$",
        "launch",
    ),
    (
        r"^(event_loop_normal|event_loop_overlap|run_batch|forward_batch_generation|process_batch_result|exposed_step|forward_step|forward_fill_batch|prepare_for_extend|prepare_for_decode|run_busy_loop|_process_engine_step|step_with_batch_queue|handle_generate_request|generate_request)$",
        "serving",
    ),
    # a model forward pass that no frame above names: before the service is up, the first forwards are the
    # profile / warm-up runs
    (r"^(forward|_forward|forward_impl|forward_native|forward_cuda|_call_impl|_wrapped_call_impl)$", "warmup"),
    (r"^(<module>|_run_module_as_main|_run_code)$", "launch"),
)
# the error itself → the phase it belongs to, for excerpts with neither markers nor telling frames
ERROR_PHASES: tuple[tuple[str, str], ...] = (
    (r"Capture cuda graph failed|stream is capturing|CUDA graph capture|cudagraph", "graph_capture"),
    (
        r"could not be created: KV cache|KV cache (?:size|memory|blocks?)\b|Not enough memory\. Please try to increase --mem-fraction-static|No available memory for the cache blocks|"
        r"KV cache is needed|Not enough space for mamba|Cannot auto-fit max_model_len",
        "memory_pool",
    ),
    # the engine's own ZMQ IPC sockets are bound while it launches (front end ↔ engine core), not by torch.distributed
    (r"ZMQError: Address already in use|zmq\.error\.ZMQError", "launch"),
    (
        r"NCCL|nccl|ProcessGroup|gloo|init_process_group|TCPStore|c10d|rendezvous|EADDRINUSE|Address already in use|"
        r"custom.?all.?reduce",
        "dist_init",
    ),
    (
        r"no kernel image|undefined symbol|ImportError|ModuleNotFoundError|cannot open shared object|"
        r"driver version is insufficient|driver on your system is too old|is not compatible with the current|Failed to import|sm_\d+",
        "launch",
    ),
    (r"must be divisible|is greater than the derived|argument --|invalid choice|ValueError", "launch"),
)
# torch.compile's own frames, and each engine's compile backend (Engine.compile_dirs)
_COMPILE_FILES = rxcache.compile(
    "|".join((r"/torch/_dynamo/", r"/torch/_inductor/") + tuple(f"/{re.escape(d)}/" for d in each("compile_dirs")))
)
# code inductor generated (its cache: /tmp/torchinductor_USER/xx/cxx.py, vLLM's torch_compile_cache/…/inductor_cache/):
# an innermost frame there is the compiled graph running (a profile or warm-up forward), not torch.compile failing
_GENERATED = rxcache.compile(r"/(?:torchinductor_[^/]+|inductor_cache)/\w+/\w+\.py$")
_ERROR_RX: tuple = ()  # compiled on first use (_error_rx): most runs never need them (start-up, issue 11)
_NAMES = rxcache.compile(r"\^\(([\w<>]+(?:\|[\w<>]+)*)\)\$")


def _frame_matcher(pattern: str):
    """`^(a|b|c)$` over plain names is a set lookup (same answer, no regex to compile); anything else a regex."""
    m = _NAMES.fullmatch(pattern)
    if m:
        names = frozenset(m.group(1).split("|"))
        return lambda f: f in names or (f[-1:] == "\n" and f[:-1] in names)  # `$` also matches before a final \n
    return rxcache.compile(pattern).match


_FRAME_RX = tuple((_frame_matcher(p), ph) for p, ph in FRAME_PHASES)


def _error_rx() -> tuple:
    global _ERROR_RX
    if not _ERROR_RX:
        _ERROR_RX = tuple((rxcache.compile(p), ph) for p, ph in ERROR_PHASES)
    return _ERROR_RX


_SD_EXIT = rxcache.compile(r"Main process exited, code=(?P<code>\w+), status=(?P<status>\d+)/(?P<signame>[\w-]+)")
_SD_RESULT = rxcache.compile(r"Failed with result '(?P<result>[\w-]+)'")
_SD_RESTART = rxcache.compile(r"Scheduled restart job, restart counter is at (?P<n>\d+)")
_SD_TIMEOUT = rxcache.compile(r"start(?:-pre|-post)? operation timed out|State 'start[\w-]*' timed out")
_SD_OOM = rxcache.compile(r"A process of this unit has been killed by the OOM killer|Failed with result 'oom-kill'")
_SD_STOPPING = rxcache.compile(r"^Stopping ")  # a stop job someone asked for; after a crash systemd says "Stopped"
_XID = rxcache.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+),(?: pid=(?P<xpid>\d+|'<unknown>'), name=(?P<xname>[^,]+),)? ?(?P<xmsg>.*)"
)
_KOOM = rxcache.compile(
    r"(?:Out|out) of memory: Killed process (?P<kpid>\d+) \((?P<kname>[^)]+)\)|oom-kill:|invoked oom-killer"
)
_SHUTDOWN = rxcache.compile(
    r"Application shutdown complete|Shutting down|Finished server process|shutting down executor"
)
_FALLEN = rxcache.compile(r"GPU has fallen off the bus|fallen off the bus")


class SystemdVerdict(TypedDict, total=False):
    """systemd's verdict on an attempt, merged from its `systemd` events (values as systemd printed them)."""

    code: str  # exited | killed | dumped (Main process exited, code=...)
    status: str  # exit status or signal number
    signal: str  # signal name, "None" when systemd named none
    result: str  # Failed with result '...'
    oom: str  # "true": the unit's OOM killer verdict
    stopped_by: str  # "operator": a stop job someone asked for
    restarts: str  # restart counter
    timeout: str  # "start": a start operation timed out


@dataclass(slots=True)
class Event:
    """One dated happening in an attempt: a marker, a death, a systemd or a kernel line."""

    line: int
    kind: EventKind  # vocab.EVENT_KINDS: marker | death | systemd | kernel
    name: str
    phase: str | None = None
    rank: str | None = None
    text: str = ""
    values: dict = field(default_factory=dict)
    ts: datetime | None = None

    def __init__(  # written out: one per marker line (tests/test_startup_dataclass.py checks it against the fields)
        self,
        line: int,
        kind: EventKind,
        name: str,
        phase: str | None = None,
        rank: str | None = None,
        text: str = "",
        values: dict | None = None,
        ts: datetime | None = None,
    ) -> None:
        self.line = line
        self.kind = kind
        self.name = name
        self.phase = phase
        self.rank = rank
        self.text = text
        self.values = {} if values is None else values
        self.ts = ts


@dataclass(slots=True)
class PhaseSpan:
    """The lines (and times) a rank or attempt spent in one phase."""

    phase: str
    start_line: int
    end_line: int
    start_ts: datetime | None = None
    end_ts: datetime | None = None
    completed: bool = False

    @property
    def seconds(self) -> float | None:
        if self.start_ts and self.end_ts:
            return (self.end_ts - self.start_ts).total_seconds()
        return None


@dataclass(slots=True)
class RankView:
    """One rank's phases and where it was when the attempt ended."""

    rank: str
    phases: list[PhaseSpan] = field(default_factory=list)
    phase: str | None = None  # where the rank is (or was when it died)
    died: bool = False
    death_line: int = 0
    error: str = ""  # the decisive error text of this rank, if any
    readings: dict[str, float | str] = field(default_factory=dict)
    lines: int = 0


@dataclass(slots=True)
class Attempt:
    """One start of the server in the log, from launch to its end or the end of the input."""

    index: int
    start_line: int
    end_line: int
    records: list[Record]
    blocks: list[Block]
    events: list[Event]
    ranks: dict[str, RankView]
    config: Config
    phase: str = "unknown"  # where it failed, or the furthest phase reached when it did not
    phase_source: PhaseSource = "markers"  # vocab.PHASE_SOURCES: markers | frames | none
    failed: bool = False
    ready: bool = False
    first_failing_rank: str | None = None
    fatal_line: int = 0  # first fatal line (traceback/death) of the attempt
    start_seen: bool = False  # the launch of this attempt is inside the window
    systemd: SystemdVerdict = field(default_factory=lambda: SystemdVerdict())  # result, exit code/status, timeout
    kernel: list[Event] = field(default_factory=list)
    readings: dict[str, float | str] = field(default_factory=dict)
    decisive: dcs.Decisive | None = None  # the one decisive-error computation every consumer reads
    hang: serving.Hang | None = None  # stopped answering while serving (no traceback of its own)

    @property
    def completed_by_all(self) -> str | None:
        """The last phase every rank completed (None when a rank completed none)."""
        done = []
        workers = [r for r in self.ranks.values() if _WORKER_RANK.match(r.rank)]
        for r in workers or list(self.ranks.values()):
            c = [PHASE_INDEX[p.phase] for p in r.phases if p.completed]
            done.append(max(c) if c else -1)
        if not done or min(done) < 0:
            return None
        return PHASES[min(done)]


@dataclass(slots=True)
class Timeline:
    """The log as attempts, with the engine and version they ran."""

    engine: str
    engine_version: str | None
    attempts: list[Attempt]
    records: list[Record]
    start_seen: bool
    unit: str | None = None  # the service's unit, when the window names it (a journal field or systemd's lines)

    @property
    def last(self) -> Attempt:
        return self.attempts[-1]


def build(records: list[Record], engine: str = "auto") -> Timeline:
    # a whole journal (no --unit) mixes services: the engine's unit, with the kernel's, journalctl's and systemd's
    # lines about it (timeline.units, where triage splits the same journal)
    records = units.pick(records).records
    eng, version = engine_detect.detect(records, engine)
    # an unrecognised engine still gets the phases every engine shares (uvicorn's ready line, graph capture, ...)
    tables = _TABLES.get(eng) or _FALLBACK
    own = att.ownership(records)
    chunks = att.split(records, tables[0], own)
    attempts = [_attempt(i, chunk, eng, version, tables, own) for i, chunk in enumerate(chunks)]
    if not attempts:
        attempts = [_attempt(0, [], eng, version, tables, own)]
    # the launch of every later attempt is inside the window by construction; the first one's maybe not
    for a in attempts[1:]:
        a.start_seen = True
    return Timeline(
        engine=eng,
        engine_version=version,
        attempts=attempts,
        records=records,
        start_seen=attempts[0].start_seen,
        unit=own.unit,
    )


@dataclass(slots=True)
class _Reading:
    """What reading one attempt's records collects, line by line (`_attempt` feeds it, `_decide` judges it)."""

    engine: str
    marker_tab: tuple
    death_tab: tuple
    own: att.Ownership
    events: list[Event] = field(default_factory=list)
    ranks: dict[str, RankView] = field(default_factory=dict)
    tracker: phases.Tracker = field(default_factory=phases.Tracker)  # the attempt-level phase (phases.py)
    ready_line: int = 0
    deaths: list[Event] = field(default_factory=list)
    sd: SystemdVerdict = field(default_factory=lambda: SystemdVerdict())
    kernel: list[Event] = field(default_factory=list)
    readings: dict[str, float | str] = field(default_factory=dict)
    start_seen: bool = False

    def feed(self, r: Record) -> None:
        if r.transport == SYSTEMD:
            if self.own.own_systemd(r.msg, r.unit):  # another unit's Started/Failed is not this service's
                self.systemd(r)
            return
        msg = r.msg
        if r.transport == KERNEL or (
            r.transport == SERVICE and any(w in msg for w in KERNEL_WORDS) and kernel_sourced(r)
        ):  # provenance: never a quote inside an engine line
            self.kernel_line(r)
            if r.transport == KERNEL:
                return
        if r.transport != SERVICE or not r.msg or r.extra.get(att.FOREIGN):
            return
        if dcs.PARSER_USAGE.match(msg):  # argparse prints its usage as it parses the command line: the launch is here
            self.start_seen = True
        hit = mk.match(self.marker_tab, r.msg) if self.marker_tab else None
        rk = _rank_key(r, self.engine)
        if hit:
            self.marker(r, rk, *hit)
            return
        dh = mk.match(self.death_tab, r.msg) if self.death_tab else None
        if dh:
            ev = Event(r.line, "death", dh[0].name, self.tracker.phase, rk, r.msg, dh[1], r.ts)
            self.events.append(ev)
            self.deaths.append(ev)
        if r.rank or r.proc:
            view = self.ranks.get(rk)
            if view is None:
                view = self.ranks[rk] = RankView(rk)
            view.lines += 1

    def systemd(self, r: Record) -> None:
        ev = _systemd_event(r)
        if not ev:
            return
        if ev.name == "result" and ev.values.get("result") == "timeout" and self.sd.get("stopped_by") == "operator":
            ev.values["result"] = "stop-timeout"  # the operator's stop timed out: not a start timeout
        self.events.append(ev)
        if ev.name == "started":
            self.start_seen = True
        self.sd.update({k: str(v) for k, v in ev.values.items()})  # type: ignore[typeddict-item]

    def kernel_line(self, r: Record) -> None:
        ev = _kernel_event(r)
        if ev:
            ev.values.update(self.own.kernel_attribution(ev.values, r.msg, ev.name))
            self.events.append(ev)
            self.kernel.append(ev)

    def marker(self, r: Record, rk: str, m: mk.Marker, vals: dict) -> None:
        if m.edge in ("config", "version") or m.name in ("server_args", "version", "non_default_args"):
            self.start_seen = True
        view = self.ranks.get(rk)
        if view is None:
            view = self.ranks[rk] = RankView(rk)
        _advance(view, m, r)
        self.tracker.feed(m)
        if m.edge == "ready":
            self.ready_line = self.ready_line or r.line
        for k, v in vals.items():
            if k in m.sums and isinstance(v, float) and isinstance(view.readings.get(k), float):
                v = view.readings[k] + v
            if k == "free_before_load_gb" and k in view.readings:
                continue  # the first reading is the GPU before any weights (a draft model loads later)
            view.readings[k] = v
            old = self.readings.get(k)
            self.readings[k] = max(v, old) if k in m.sums and isinstance(old, float) else v  # type: ignore[type-var]
        self.events.append(Event(r.line, "marker", m.name, m.phase, rk, r.msg, vals, r.ts))


def _attempt(
    index: int, recs: list[Record], engine: str, version: str | None, tables, own: att.Ownership | None = None
) -> Attempt:
    marker_tab, death_tab = tables
    rd = _Reading(engine, marker_tab, death_tab, own or att.Ownership())
    blocks = assemble([r for r in recs if not r.extra.get(att.FOREIGN)])
    for r in recs:
        rd.feed(r)
    for v in rd.ranks.values():
        if v.phases:
            last = v.phases[-1]
            v.phase = phases.phase_after(last.phase, marker_tab) if last.completed else last.phase
    att.attribute_kill_reports(rd.kernel)
    config = extract_config(recs, engine, version)
    _derive(rd.readings, config.levers, config.raw, engine)
    a = Attempt(
        index=index,
        start_line=recs[0].line if recs else 0,
        end_line=recs[-1].last_line if recs else 0,
        records=recs,
        blocks=blocks,
        events=rd.events,
        ranks=rd.ranks,
        config=config,
        systemd=rd.sd,
        kernel=rd.kernel,
        readings=rd.readings,
        start_seen=rd.start_seen or "command line" in config.sources,  # the launch command is the launch
    )
    _decide(a, rd.tracker.phase, rd.ready_line, rd.deaths, marker_tab, engine)
    return a


POOL_MIN_SHARE = 0.03  # the least share of the GPU worth a KV pool: 2.4 GB of an 80 GB card


def _derive(readings: dict, levers: dict, raw: dict, engine: str) -> None:
    """Readings a rule can reason with: the chunked-prefill size rounded up to whole KV pages, the largest DP size at
    most the one in force that divides the TP size; the share of the GPU the weights take, what the static budget
    leaves for the pools after them (SGLang sizes the pool as mem_fraction_static x total − weights), and, for an engine that
    picks its static fraction from the GPU when none is set, that fraction (`mem_fraction_auto`) and how far the
    fraction in force is below it (`auto_gain`): a fraction set lower than the engine's own choice is a setting."""
    chunk, page = levers.get("prefill_chunk"), levers.get("page_size")
    if isinstance(chunk, int) and isinstance(page, int) and chunk > 0 and page > 1 and chunk % page:
        readings["prefill_chunk_page_aligned"] = -(-chunk // page) * page  # a chunk must end on a page boundary
    tp, dp = levers.get("tp_size"), levers.get("dp_size")
    if isinstance(tp, int) and isinstance(dp, int) and 0 < dp and tp % dp:  # DP attention splits the TP group
        readings["dp_size_dividing_tp"] = max(d for d in range(1, min(dp, tp) + 1) if tp % d == 0)
    w, total, frac = readings.get("weights_gb"), readings.get("free_before_load_gb"), levers.get("mem_fraction")
    if not (isinstance(w, float) and isinstance(total, float) and total > 0):
        return
    readings["weights_share"] = round(w / total, 3)
    # SGLang's pool is what the static fraction leaves after everything on the GPU when the weights were loaded
    # (profile_max_num_token: available - total x (1 - fraction)), so a pool of any size needs more than the
    # weights' share; POOL_MIN_SHARE more gives it a few GB (a flag value: rounded up to hundredths)
    readings["mem_fraction_needed"] = math.ceil(round((w / total + POOL_MIN_SHARE) * 100, 6)) / 100
    if not isinstance(frac, (int, float)) or isinstance(frac, bool):
        return
    readings["static_left"] = round(float(frac) - w / total, 3)
    readings["static_left_gb"] = round(float(frac) * total - w, 2)
    e = ENGINES.get(engine)
    if e is None or e.auto_static_fraction is None:
        return
    tp, pp = (_positive(levers.get(k)) for k in ("tp_size", "pp_size"))
    auto = math.floor(e.auto_static_fraction(total * 1024, raw, tp, pp, False)[0] * 100) / 100  # a flag's value
    readings["mem_fraction_auto"] = auto
    readings["auto_gain"] = round(auto - float(frac), 3)
    readings["auto_pool_gb"] = round(auto * total - w, 2)


def _positive(v) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 1


def _proc_is_rank(engine: str) -> bool:
    """The engine's process tags (vLLM's EngineCore_DP0, Worker_TP1) stand for ranks where no rank prefix does."""
    e = ENGINES.get(engine)
    return e is not None and e.proc_is_rank


def _rank_key(r: Record, engine: str) -> str:
    if r.rank:
        return r.rank
    if r.proc and _proc_is_rank(engine):
        return r.proc.split("/")[-1]
    return "main"


def _advance(view: RankView, m: mk.Marker, r: Record) -> None:
    cur = view.phases[-1] if view.phases else None
    if m.edge == "ready":
        if cur and not cur.completed:
            cur.completed, cur.end_line, cur.end_ts = True, r.line, r.ts
        view.phases.append(PhaseSpan("serving", r.line, r.line, r.ts, r.ts, completed=True))
        return
    if cur is None or cur.phase != m.phase:
        if cur and not cur.completed and PHASE_INDEX[m.phase] > PHASE_INDEX[cur.phase]:
            cur.completed = True
        if m.phase == "launch" and cur is not None:
            return
        cur = PhaseSpan(m.phase, r.line, r.line, r.ts, r.ts)
        view.phases.append(cur)
    cur.end_line, cur.end_ts = r.line, r.ts
    if m.edge == "end":
        cur.completed = True


def frames_phase(block: Block | None) -> str | None:
    """The phase the stack was in: FRAME_PHASES in order, over every frame (capture beats the _dummy_run it calls;
    a profile run beats the memory sizing that calls it)."""
    if block is None:
        return None
    funcs = [fr.func for sec in block.sections for fr in sec.frames]
    running = any(sec.frames and _GENERATED.search(sec.frames[-1].file) for sec in block.sections)
    if not running and any(_COMPILE_FILES.search(fr.file) for sec in block.sections for fr in sec.frames):
        return "graph_capture"  # torch.compile itself failed (dynamo / inductor / the engine's compile backend)
    for hit, ph in _FRAME_RX:
        if any(hit(f) for f in funcs):
            return ph
    return None


is_fatal_block = dcs.is_fatal_block


def _decide(a: Attempt, phase: str | None, ready_line: int, deaths: list[Event], marker_tab, engine: str) -> None:
    """Whether the attempt failed, where (line, rank) and in which phase; each question is one helper below."""
    a.decisive = dec = dcs.compute(a, ready_line)
    a.ready = bool(ready_line)
    sd_fail = _systemd_failed(a.systemd, ready_line)
    after_ready = _fatal_blocks(a, dec.blocks, ready_line, deaths)
    pre = _precursor_deaths(a)
    a.events.extend(pre)
    deaths = deaths + _error_deaths(a, dec.error_lines, ready_line) + pre
    deaths_after = [d for d in deaths if d.line > ready_line] if ready_line else deaths
    a.hang = hung = serving.hang(a, ready_line) if ready_line else None
    # a kernel verdict (Xid, fallen off the bus, OOM kill) alone fails an attempt only before it came up
    a.failed = bool(after_ready or deaths_after or sd_fail or (_kernel_bad(a.kernel) and not ready_line) or hung)
    firsts = [b.first_line for b in after_ready] + [d.line for d in deaths_after] + ([hung.first_line] if hung else [])
    a.fatal_line = min(firsts) if firsts else 0
    a.first_failing_rank = dec.rank = _failing_rank(after_ready, engine)
    _mark_rank_deaths(a, after_ready)
    if not a.failed:
        a.phase = "serving" if ready_line else (phase or "unknown")
        a.phase_source = "markers" if phase else "none"
        return
    a.phase, a.phase_source = _failure_phase(a, after_ready, ready_line, marker_tab)


def _systemd_failed(sd: SystemdVerdict, ready_line: int) -> bool:
    """systemd's verdict says the attempt failed; a unit stopped on purpose after it came up (systemctl stop /
    restart) did not, even if the stop timed out."""
    if ready_line and sd.get("stopped_by") == "operator":
        return False
    if sd.get("result") not in (None, "success") or sd.get("code") in ("killed", "dumped"):
        return True
    return (
        (sd.get("code") == "exited" and sd.get("status") not in (None, "0"))
        or "timeout" in sd
        or sd.get("oom") == "true"
    )


def _kernel_bad(kernel: list[Event]) -> bool:
    return any(e.name in ("xid", "fallen_off", "oom_kill") and not e.values.get("foreign") for e in kernel)


def _fatal_blocks(a: Attempt, fatal_blocks: list[Block], ready_line: int, deaths: list[Event]) -> list[Block]:
    """The fatal tracebacks that count: after the ready line, a per-request error (a 400 for a too-long prompt)
    prints a traceback too; the service kept serving if serving evidence (request logs, throughput lines) follows
    the traceback and no death does."""
    if not ready_line:
        return fatal_blocks
    after_ready = [b for b in fatal_blocks if b.first_line > ready_line]
    serving_after = [e.line for e in a.events if e.kind == "marker" and e.phase == "serving" and e.line > ready_line]
    last_serving = max(serving_after, default=0)  # max, not a scan per block (was quadratic)
    last_death = max((d.line for d in deaths), default=0)
    return [b for b in after_ready if not last_serving > b.last_line or last_death > b.last_line]


def _error_deaths(a: Attempt, err_lines: list[int], ready_line: int) -> list[Event]:
    """ERROR lines (and bare fatal CUDA/NCCL error lines) outside tracebacks that the service did not go on past
    (decisive.compute): fatal before the service came up; after it, only when a shutdown follows."""
    if ready_line:
        shut = [r.line for r in a.records if r.transport == SERVICE and _SHUTDOWN.search(r.msg) and r.line > ready_line]
        last_shut = max(shut, default=0)
        err_lines = [ln for ln in err_lines if ln > ready_line and last_shut > ln]
    return [Event(ln, "death", "error_line") for ln in err_lines[:1]]


def _precursor_deaths(a: Attempt) -> list[Event]:
    """A fatal precursor (a negative KV size) with nothing after it but the end of the window is a death too."""
    pool = PHASE_INDEX["memory_pool"]
    later = [e.line for e in a.events if e.kind == "marker" and PHASE_INDEX.get(e.phase or "", 0) > pool]
    return [
        Event(ln, "death", "fatal_precursor", text=t, values=v)
        for ln, t, v in dcs.precursors(a.records)
        if not any(line > ln for line in later)
    ][:1]


def _failing_rank(after_ready: list[Block], engine: str) -> str | None:
    """The rank of the earliest fatal traceback that is not a front-end echo."""
    ranked = [b for b in after_ready if b.rank]
    if ranked:
        return min(ranked, key=lambda b: b.first_line).rank
    if after_ready and _proc_is_rank(engine):
        procs = [b.proc.split("/")[-1] for b in after_ready if b.proc]
        return procs[0] if procs else None
    return None


def _mark_rank_deaths(a: Attempt, after_ready: list[Block]) -> None:
    for v in a.ranks.values():
        mine = [b for b in after_ready if (b.rank or (b.proc or "").split("/")[-1] or "main") == v.rank]
        if mine:
            v.died, v.death_line = True, mine[0].first_line
            fin = mine[0].final
            v.error = f"{fin.exc_type}: {fin.exc_msg}".strip(": ").splitlines()[0] if fin else ""


def _failure_phase(a: Attempt, after_ready: list[Block], ready_line: int, marker_tab) -> tuple[str, PhaseSource]:
    """The phase at the first fatal line, of the failing rank when it has markers of its own; the frames (or the
    error's wording) decide when the markers say nothing or only guessed the next phase."""
    if ready_line and a.fatal_line > ready_line:
        return "serving", "markers"
    at, implied = _phase_at(a, a.fatal_line or a.end_line, a.first_failing_rank, marker_tab)
    fp = _frames_phase_of(a, after_ready, ready_line)
    if at is None or (at == "launch" and fp) or (implied and fp and fp != at):
        return (fp, "frames") if fp else ("launch" if a.start_seen else "unknown", "none")
    return at, "markers"


def _frames_phase_of(a: Attempt, after_ready: list[Block], ready_line: int) -> str | None:
    """Fatal tracebacks first; then any traceback fragment (an excerpt cut before its exception line); then the
    error's wording."""
    fatal_ids = {id(b) for b in after_ready}  # identity: Block equality compares every record (was quadratic)
    frag = [b for b in a.blocks if id(b) not in fatal_ids and (not ready_line or b.first_line > ready_line)]
    for b in sorted(after_ready, key=lambda b: b.first_line) + frag:
        fp = frames_phase(b)
        if fp:
            return fp
    return _error_phase(after_ready, a)


def _error_phase(blocks: list[Block], a: Attempt) -> str | None:
    texts = [f"{s.exc_type}: {s.exc_msg}" for b in blocks for s in b.sections]
    texts += [r.msg for r in a.records if r.transport == SERVICE and r.level in ("ERROR", "CRITICAL")]
    if a.fatal_line:  # the few lines after the first fatal one often finish its message (TRT-LLM, C++ aborts)
        texts += [r.msg for r in a.records if a.fatal_line <= r.line <= a.fatal_line + 10]
    for rx, ph in _error_rx():
        if any(rx.search(t) for t in texts):
            return ph
    return None


# a rank tag, or an engine's worker process tag (Engine.worker_processes)
_WORKER_RANK = rxcache.compile(
    "|".join((r"^(?:(?:DP|PP)\d+ )*(?:TP|EP|rank)\d+$",) + tuple(f"^(?:{p})" for p in each("worker_processes")))
)


def _phase_at(a: Attempt, line: int, rank: str | None, marker_tab) -> tuple[str | None, bool]:
    """Replay the marker events up to `line` (for `rank` if it is a worker rank with markers of its own; else for
    the whole attempt). Returns (phase, implied): implied when the phase was only inferred from the end of the
    previous one (an end marker's `then`), not seen begin."""
    evs = [e for e in a.events if e.kind == "marker" and e.line <= line]
    if rank and _WORKER_RANK.match(rank) and any(e.rank == rank for e in evs):
        own = [e for e in evs if e.rank == rank]
        # rank-0-only lines (no rank tag) still move everyone along
        evs = sorted(own + [e for e in evs if e.rank == "main"], key=lambda e: e.line)
    machine = phases.Tracker()
    for e in evs:
        m = next((m for m in marker_tab if m.name == e.name), None)
        if m is not None:
            machine.feed(m)
    return machine.phase, machine.implied


def _systemd_event(r: Record) -> Event | None:
    msg = r.msg
    m = _SD_EXIT.search(msg)
    if m:
        return Event(
            r.line,
            "systemd",
            "exit",
            values={"code": m.group("code"), "status": m.group("status"), "signal": m.group("signame")},
            text=msg,
            ts=r.ts,
        )
    m = _SD_RESULT.search(msg)
    if m:
        vals = {"result": m.group("result")}
        if m.group("result") == "oom-kill":
            vals["oom"] = "true"
        return Event(r.line, "systemd", "result", values=vals, text=msg, ts=r.ts)
    if _SD_OOM.search(msg):
        return Event(r.line, "systemd", "oom", values={"oom": "true"}, text=msg, ts=r.ts)
    if _SD_STOPPING.search(msg):
        return Event(r.line, "systemd", "stopping", values={"stopped_by": "operator"}, text=msg, ts=r.ts)
    m = _SD_RESTART.search(msg)
    if m:
        return Event(r.line, "systemd", "restart", values={"restarts": m.group("n")}, text=msg, ts=r.ts)
    if _SD_TIMEOUT.search(msg):
        return Event(r.line, "systemd", "timeout", values={"timeout": "start"}, text=msg, ts=r.ts)
    m = att.SD_STARTED.match(msg)
    if m and not msg.startswith("Starting"):
        return Event(r.line, "systemd", "started", text=msg, ts=r.ts)
    return None


def _kernel_event(r: Record) -> Event | None:
    msg = r.msg
    m = _XID.search(msg)
    if m:
        vals = {"xid": int(m.group("xid")), "pci": m.group("pci"), "xid_text": m.group("xmsg")}
        if m.group("xpid") and m.group("xpid").isdigit():
            vals["pid"], vals["comm"] = int(m.group("xpid")), (m.group("xname") or "").strip()
        return Event(r.line, "kernel", "xid", values=vals, text=msg, ts=r.ts)
    if _FALLEN.search(msg):
        return Event(r.line, "kernel", "fallen_off", text=msg, ts=r.ts)
    m = _KOOM.search(msg)
    if m:
        vals = {k: v for k, v in m.groupdict().items() if v}
        pid = m.group("kpid") or (re.search(r"\bpid=(\d+)", msg) or [None, None])[1]
        comm = m.group("kname") or (re.search(r"\btask=([^,\s]+)", msg) or [None, None])[1]
        if pid:
            vals["pid"] = int(pid)
        if comm:
            vals["comm"] = comm
        return Event(r.line, "kernel", "oom_kill", values=vals, text=msg, ts=r.ts)
    return None
