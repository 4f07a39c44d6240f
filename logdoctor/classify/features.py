"""Feature tokens for the cause classifier, from what the pipeline already parsed (no raw-text bag of words).

`features(tl, attempt)` returns a sorted list of distinct string tokens. Namespaces (the prefix before ':'):

  t:<src>:<template>   Drain-style masked template of a decisive line; src is one of
                       inner (root exception of a chain, and X of "... failed: X"), wrap (outermost exception),
                       exc (every other section), err (ERROR/CRITICAL lines outside tracebacks), kern (kernel lines),
                       sd (systemd verdict lines), death (engine death lines), hint (the engine's "Possible
                       solutions" lines), head (text before "Traceback", e.g. "Scheduler hit an exception:")
  w:<src>:<word> b:<src>:<w1>_<w2>   word uni-/bi-grams of those templates (stop words dropped from uni-grams)
  flag:<--flag>        engine flags named in decisive text (e.g. the engine's own advice)
  exc:<Type>           exception types (full dotted name and last part); inner_exc:/wrap_exc: for root / outermost
  fn:<func> fn_in:<func> file:<basename>   traceback frame functions (fn_in: innermost frame of the root exception)
  phase: reached: completed: phase_src: engine: engine_phase:   where it failed, the furthest phase any marker
                       reached, the last phase every rank completed
  lever:<name>=<true|false|set>   levers in force (booleans by value, the others by presence; mem_fraction binned)
  env:<NAME>           environment variables shown in the log
  death:<name> death_exit:<code>  engine death markers
  xid:<code> xid_class:<hardware|app|other> kernel:<fallen_off|oom_kill>   kernel events
  sd:<key>=<value>     systemd verdict (result, exit code/status/signal, timeout, restarts)
  shape tokens         fatal_blocks:<0|1|2+>, attempts:<1|2+>, prev_phase:<phase>, ranks_died:<n>, rank_alone
  mech:<family> mech_phase:<family>@<phase>   mechanism tokens (mechanisms(): error families such as oom,
                       capture, illegal_address, nccl_system, addr_in_use; CUDA/cuBLAS/NCCL error names; errno=<n>;
                       the short "cuda error: ..." message), alone and crossed with the failure phase
  <ns>_phase:<value>@<phase>   inner_exc, death, xid_class, kernel, fn_in, sd status/signal crossed with the phase
  marker:<name> last_marker:<name>   engine marker families seen in the attempt, and the last one before the end

Masking (Drain-style): quoted strings → <str>, URLs → <url>, paths → <path>, IP[:port] → <ip>, hex → <hex>,
sizes (12.5 GiB) → <size>, numbers → <num>; lowercased, whitespace collapsed, cut at 24 words.

How much each namespace counts is the model's business (classify/train.py NS_WEIGHTS, stored in the model file).
Pure Python (re only); bump FEATURE_VERSION whenever the tokens change: a model trained on another version refuses
to load.
"""

from __future__ import annotations

import re

from logdoctor.core import rxcache
from logdoctor.core.vocab import PHASE_INDEX as _PHASE_INDEX
from logdoctor.core.vocab import PHASES, xid_class
from logdoctor.timeline.decisive import WRAPPED, section_text

FEATURE_VERSION = 2

MAX_TEMPLATE_WORDS = 24
MAX_ERROR_LINES = 30
MAX_MSG_LINES = 3
MAX_RAW_CHARS = 4000

_MASKS: tuple[tuple[re.Pattern, str], ...] = (
    (rxcache.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"), " <str> "),
    (rxcache.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I), " <url> "),
    (rxcache.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\[[0-9a-f:]+\](?::\d+)?", re.I), " <ip> "),
    (rxcache.compile(r"(?:~|\.{1,2})?(?:/[\w.+@-]+){2,}/?|\b[\w.-]+(?:/[\w.+@-]+){2,}"), " <path> "),
    (rxcache.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I), " <hex> "),
    (rxcache.compile(r"(?:-|(?<!\d))\d+(?:\.\d+)?\s*(?:[kmgtp]i?b|bytes|[kmgt]b/s)\b", re.I), " <size> "),
    (rxcache.compile(r"(?<![\w<])[-+]?\d+(?:[.,:]\d+)*(?:e[-+]?\d+)?(?![\w>])", re.I), " <num> "),
)
_PATH = _MASKS[3][0]
_PATH_RUN = rxcache.compile(r"[\w.+@/~-]+")  # every path-mask match lies inside one such run (no lookbehind in it)


def _path_sub(s: str, rep: str) -> str:
    """The path mask, run only on the runs that hold two "/" (both of its branches need two): the same result, and
    a long dotted run without slashes ("1.1.1.…") no longer costs quadratic time (issue 11)."""
    if s.count("/") < 2:
        return s
    return _PATH_RUN.sub(lambda m: _PATH.sub(rep, m.group()) if m.group().count("/") >= 2 else m.group(), s)


_WS = rxcache.compile(r"\s+")
_WORD = rxcache.compile(r"<[a-z]+>|[a-z_][a-z0-9_]*")
_FLAG = rxcache.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")
_STOP = frozenset("a an the of to in on at for by is are was be it this that with as or and from".split())


def mask(text: str) -> str:
    """The Drain-style template of one line: variable parts masked, lowercased, at most MAX_TEMPLATE_WORDS words."""
    s = text.strip()
    for rx, rep in _MASKS:
        s = _path_sub(s, rep) if rx is _PATH else rx.sub(rep, s)
    s = _WS.sub(" ", s).strip().lower()
    words = s.split(" ")
    if len(words) > MAX_TEMPLATE_WORDS:
        s = " ".join(words[:MAX_TEMPLATE_WORDS])
    return s


def _first_lines(text: str, n: int = MAX_MSG_LINES) -> list[str]:
    return [l for l in (x.strip() for x in (text or "").splitlines()) if l][:n]


class _Acc:
    """Token accumulator (insertion-ordered set)."""

    __slots__ = ("toks", "raw")

    def __init__(self):
        self.toks: dict[str, None] = {}
        self.raw: list[str] = []  # decisive texts, whole, for the mechanism scan (mechanisms())

    def add(self, tok: str) -> None:
        self.toks[tok] = None

    def text(self, src: str, text: str) -> None:
        """Template + words + bigrams (all tagged with the source) + flags of a decisive text (the first lines of a
        multi-line message)."""
        if src != "hint" and text:
            self.raw.append(text[:MAX_RAW_CHARS])
        for line in _first_lines(text):
            for fl in _FLAG.findall(line.lower()):
                self.add("flag:" + fl)
            tpl = mask(line)
            if not tpl:
                continue
            self.add(f"t:{src}:{tpl}")
            prev = None
            for w in _WORD.findall(tpl):
                if len(w) > 1 and w not in _STOP:
                    self.add(f"w:{src}:{w}")
                if prev is not None:
                    self.add(f"b:{src}:{prev}_{w}")
                prev = w


def _reached(a) -> str | None:
    idx = [_PHASE_INDEX[e.phase] for e in a.events if e.kind == "marker" and e.phase in _PHASE_INDEX]
    return PHASES[max(idx)] if idx else None


def _fatal_blocks(a):
    from logdoctor.timeline.decisive import of

    return of(a).blocks  # the one decisive-error computation (logdoctor/timeline/decisive.py)


def features(tl, attempt) -> list[str]:
    """Sorted distinct tokens describing one attempt (see the module docstring for the namespaces), one helper per
    namespace group; the order of the steps matters only for `_mechanism_tokens`, which reads what came before."""
    a = attempt
    acc = _Acc()
    _state_tokens(acc, tl, a)
    fatal = _fatal_blocks(a)
    acc.add("fatal_blocks:" + ("0" if not fatal else "1" if len(fatal) == 1 else "2+"))
    _exception_tokens(acc, fatal)
    _error_line_tokens(acc, a)
    _kernel_tokens(acc, a)
    _event_tokens(acc, a)
    _config_tokens(acc, a.config)
    _shape_tokens(acc, tl, a)
    _mechanism_tokens(acc, a)
    return sorted(acc.toks)


def _state_tokens(acc: _Acc, tl, a) -> None:
    """engine, phase and how far the start got."""
    add = acc.add
    engine = tl.engine or "unknown"
    add("engine:" + engine)
    add("phase:" + a.phase)
    add("phase_src:" + a.phase_source)
    add(f"engine_phase:{engine}:{a.phase}")
    reached = _reached(a)
    add("reached:" + (reached or "none"))
    try:
        comp = a.completed_by_all
    except (KeyError, ValueError):
        comp = None
    add("completed:" + (comp or "none"))
    add("start_seen:" + ("yes" if a.start_seen else "no"))
    add("ready:" + ("yes" if a.ready else "no"))


def _exception_tokens(acc: _Acc, fatal) -> None:
    """The fatal tracebacks: exception types, the chain's texts by position, hints, frames."""
    add = acc.add
    for b in fatal[:6]:
        if b.kind == "abort":
            add("abort")
        if b.header:
            acc.text("head", b.header)
        secs = b.sections
        for i, s in enumerate(secs):
            t = s.exc_type
            if t:
                add("exc:" + t)
                if "." in t:
                    add("exc:" + t.rsplit(".", 1)[-1])
            text = section_text(s)
            if i == 0:
                acc.text("inner", text)
            if i == len(secs) - 1:
                acc.text("wrap", text)
            if 0 < i < len(secs) - 1:
                acc.text("exc", text)
            w = WRAPPED.match(s.exc_msg or "")
            if w:
                acc.text("inner", w.group("inner"))
            for h in s.hints[:4]:
                acc.text("hint", h)
            for f in s.frames:
                if f.func:
                    add("fn:" + f.func)
                add("file:" + f.basename)
            if link := s.link:
                add("chain:" + link)
        if secs:
            root, fin = secs[0], secs[-1]
            if root.exc_type:
                add("inner_exc:" + root.exc_type.rsplit(".", 1)[-1])
            if fin.exc_type:
                add("wrap_exc:" + fin.exc_type.rsplit(".", 1)[-1])
            if root.frames and root.frames[-1].func:
                add("fn_in:" + root.frames[-1].func)


def _error_line_tokens(acc: _Acc, a) -> None:
    """ERROR/CRITICAL lines, bare "XError: ..." lines, and (where the engine prints no level) lines that say they
    are errors ("ERROR:    [Errno 98] ..." from uvicorn, "[Errno 28] ..."), outside tracebacks."""
    from logdoctor.core.records import SERVICE

    add = acc.add
    in_blocks = {r.line for b in a.blocks for r in b.records}
    n = 0
    seen_tpl: set[str] = set()
    for r in a.records:
        if r.transport != SERVICE or r.line in in_blocks or not r.msg:
            continue
        if (
            r.level in ("ERROR", "CRITICAL", "FATAL")
            or _BARE_EXC.match(r.msg)
            or (r.level is None and _ERRORISH.search(r.msg))
        ):
            fm = _FILE_LINE.match(r.msg)
            if fm:  # a traceback printed line by line as ERROR records that did not assemble into a block
                add("fn:" + fm.group("func").strip())
                add("file:" + fm.group("file").rsplit("/", 1)[-1])
                continue
            if r.msg[:1].isspace():
                continue  # source-code lines of such a traceback
            tpl = mask(r.msg)
            if tpl in seen_tpl:
                continue
            seen_tpl.add(tpl)
            acc.text("err", r.msg)
            n += 1
            if n >= MAX_ERROR_LINES:
                break


def _kernel_tokens(acc: _Acc, a) -> None:
    for e in a.kernel:
        if e.name == "xid":
            x = e.values.get("xid")
            acc.add(f"xid:{x}")
            acc.add("xid_class:" + xid_class(x))
        else:
            acc.add("kernel:" + e.name)
        acc.text("kern", e.text)


def _event_tokens(acc: _Acc, a) -> None:
    """systemd's verdict and the death lines."""
    add = acc.add
    for e in a.events:
        if e.kind == "systemd":
            if e.name == "started":
                continue
            add("sd:" + e.name)
            for k, v in sorted(e.values.items()):
                if k == "restarts":
                    continue
                add(f"sd:{k}={v}")
            if e.name != "restart":
                acc.text("sd", e.text)
        elif e.kind == "death":
            add("death:" + e.name)
            code = e.values.get("exit_code")
            if code is not None:
                try:
                    add(f"death_exit:{int(float(code))}")
                except (TypeError, ValueError):
                    pass
            from logdoctor.timeline.hints import strip_false

            acc.text("death", strip_false(e.text))


def _config_tokens(acc: _Acc, cfg) -> None:
    """Levers in force (booleans by value, others by presence, mem_fraction binned) and environment names."""
    add = acc.add
    add("config:" + ("known" if cfg.known else "unknown"))
    for name, v in sorted(cfg.levers.items()):
        if v is None:
            continue
        if isinstance(v, bool):
            add(f"lever:{name}={'true' if v else 'false'}")
        else:
            add(f"lever:{name}=set")
            if name == "mem_fraction":
                try:
                    f = float(v)
                    add("lever:mem_fraction=" + ("low" if f < 0.7 else "high" if f >= 0.88 else "mid"))
                except (TypeError, ValueError):
                    pass
    for k in sorted(cfg.env):
        add("env:" + k)


def _shape_tokens(acc: _Acc, tl, a) -> None:
    """Attempts in the window and ranks that died."""
    add = acc.add
    atts = tl.attempts
    add("attempts:" + ("1" if len(atts) <= 1 else "2+"))
    for p in atts:
        if p is not a and p.index < a.index and p.failed:
            add("prev_phase:" + p.phase)
    died = [r for r in a.ranks.values() if r.died]
    real = [r for r in a.ranks.values() if r.rank != "main"]
    add("ranks_died:" + ("0" if not died else "1" if len(died) == 1 else "2+"))
    if len(died) == 1 and len(real) >= 2:
        add("rank_alone")


def _mechanism_tokens(acc: _Acc, a) -> None:
    """What failed (error families over the texts gathered so far), what was going on (engine markers), each
    crossed with the phase."""
    add = acc.add
    ph = a.phase
    for m in mechanisms("\n".join(acc.raw)):
        add("mech:" + m)
        add(f"mech_phase:{m}@{ph}")
    for t in list(acc.toks):
        ns, _, v = t.partition(":")
        if ns in ("inner_exc", "death", "xid_class", "kernel", "fn_in") or t.startswith(("sd:status=", "sd:signal=")):
            add(f"{ns}_phase:{v}@{ph}")
    markers = [e.name for e in a.events if e.kind == "marker"]
    for name in markers:
        add("marker:" + name)
    if markers:
        add("last_marker:" + markers[-1])


# Error families: (name, pattern) over the lowercased decisive texts (exception messages, ERROR lines, kernel,
# systemd and death lines; not the engine's generic advice). Names say the mechanism, not the story.
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("oom", r"out of memory|outofmemoryerror|cuda_error_out_of_memory|cudaerrormemoryallocation|\boom\b"),
    (
        "mem_short",
        r"not enough (?:gpu )?memory|no enough gpu memory|no available memory|insufficient (?:gpu )?memory"
        r"|memory is not enough|exceeds? (?:the )?(?:available|gpu) memory",
    ),
    ("kv_words", r"kv[ _-]?cache|cache blocks|gpu blocks|num_gpu_blocks|max_total_num_tokens|max_num_seqs|kv blocks"),
    (
        "weights_words",
        r"load(?:ing)? (?:the )?(?:model )?weights|weight_loader|load_weights|safetensors|checkpoint shards",
    ),
    ("capture", r"stream is capturing|streamcapture|during capture|cuda ?graph|capture_one|graph capture"),
    ("illegal_address", r"illegal memory access|illegaladdress|illegal address|misaligned address"),
    ("device_assert", r"device-side assert|cudaerrorassert|assertion .* failed\. *$"),
    ("launch_failure", r"unspecified launch failure|cudaerrorlaunchfailure"),
    ("ecc", r"\becc\b|eccuncorrectable"),
    ("nvlink", r"nvlink"),
    ("fallen_off", r"fallen off the bus|gpu is lost|gpu lost"),
    ("cuda_unknown", r"cuda error: unknown error|cudaerrorunknown"),
    (
        "invalid_device",
        r"invalid device ordinal|cudaerrorinvaliddevice|no cuda gpus are available|no cuda-capable device",
    ),
    ("no_kernel_image", r"no kernel image|nokernelimage|not compatible with the current pytorch installation"),
    ("arch_words", r"\bsm_?\d{2,3}a?\b|compute capability|\bsm version|architecture|blackwell|hopper|ampere|gencode"),
    ("driver", r"driver version|insufficientdriver|nvidia driver|libcuda|\bnvml\b"),
    ("undefined_symbol", r"undefined symbol|cannot open shared object|\.so: |importerror|modulenotfounderror"),
    ("build_failed", r"ninja build failed|compilation failed|nvcc|\bjit\b|error building extension"),
    ("out_of_resources", r"out of resource|outofresources|shared memory, required"),
    ("cublas", r"cublas_status|cublas"),
    ("nccl", r"\bnccl"),
    ("nccl_system", r"ncclsystemerror|unhandled system error"),
    ("nccl_cuda", r"ncclunhandledcudaerror|unhandled cuda error"),
    ("nccl_remote", r"ncclremoteerror|remote process|network error"),
    ("nccl_usage", r"ncclinvalidusage|invalid usage|ncclinvalidargument"),
    ("nccl_internal", r"ncclinternalerror|internal check failed"),
    ("watchdog", r"watchdog"),
    ("timeout", r"timed? ?out|timeout|deadline exceeded"),
    (
        "dist_net",
        r"distnetworkerror|client socket|server socket|rendezvous|tcpstore|connect to any network|no route to host",
    ),
    ("dist_backend", r"distbackenderror|process group|init_process_group|\bgloo\b|torch\.distributed"),
    ("addr_in_use", r"address already in use|eaddrinuse|failed to listen|bind on address|failed to bind"),
    ("conn_refused", r"connection refused|econnrefused"),
    ("no_space", r"no space left"),
    ("permission", r"permission denied|operation not permitted(?! when stream)"),
    ("not_found", r"no such file|not found|does not exist|does not appear to have|couldn't instantiate|cannot find"),
    ("hub", r"huggingface|repository|gated repo|401 client error|403 client error|\bhf_"),
    ("corrupt", r"deserializ|header|incomplete|corrupt|truncated|unexpected eof|invalid load key"),
    ("tokenizer", r"tokenizer|sentencepiece|tiktoken"),
    ("remote_code", r"trust[_-]remote[_-]code|custom code"),
    ("unsupported", r"not supported|unsupported|only supported|is not implemented"),
    ("divisible", r"divisible"),
    (
        "requires",
        r"requires? |must be|should be|cannot be|can't be|is greater than|is smaller than|is less than"
        r"|exceeds",
    ),
    ("argparse", r"unrecognized arguments|invalid choice|error: argument|usage: |expected one argument"),
    ("invalid_value", r"invalid (?:value|argument|literal|choice)|valueerror"),
    ("proxy", r"proxyerror|proxy"),
    ("killed", r"\bkilled\b|sigkill|signal 9|oom-kill|oom_kill|oom-killer"),
    ("host_mem", r"oom-kill|killed process|total-vm|anon-rss|memory cgroup|os oom|cpu memory|host memory|\bram\b"),
    ("died", r"died|exited unexpectedly|dead|terminated"),
    ("segfault", r"segmentation fault|sigsegv|signal 11|core dumped"),
    ("abort", r"sigabrt|aborted|terminate called"),
    ("dynamo", r"_dynamo|dynamic shape|graph break|inductor|torch\.compile|torch_compile"),
    ("triton", r"\btriton"),
    ("workspace", r"workspace|buffer overflow"),
    ("stopped", r"start operation timed out|stopping|deactivated|sigterm|signal 15"),
    ("health", r"health|not ready|readiness|wait(?:ing)? for"),
    ("download", r"download|snapshot|fetching"),
)


def _literals(pattern: str) -> tuple[str, ...] | None:
    """The branches of a plain alternation (`a|b c|\\bd\\b`) as literal text, else None: one of them must occur for
    the pattern to match, so absent literals mean no match without compiling it."""
    out = []
    for br in pattern.split("|"):
        core = br.removeprefix(r"\b").removesuffix(r"\b")
        if not core or any(c in core for c in "\\.^$*+?()[]{}"):
            return None
        out.append(core)
    return tuple(out)


class _Family:
    """A family pattern compiled on first need: most texts contain none of its literals (start-up, issue 11)."""

    __slots__ = ("name", "pattern", "lits", "_rx")

    def __init__(self, name: str, pattern: str):
        self.name, self.pattern, self.lits = name, pattern, _literals(pattern)
        self._rx: re.Pattern | None = None

    def search(self, s: str) -> bool:
        if self.lits is not None and not any(lit in s for lit in self.lits):
            return False
        rx = self._rx
        if rx is None:
            rx = self._rx = rxcache.compile(self.pattern)
        return rx.search(s) is not None


_FAMILY_RX = tuple((n, _Family(n, p)) for n, p in _FAMILIES)
_CUDA_NAME = rxcache.compile(r"\b(cudaerror[a-z]+|cuda_error_[a-z_]+|cublas_status_[a-z_]+|nccl[a-z]*error)\b")
_ERRNO = rxcache.compile(r"\[errno (\d+)\]|\(os error (\d+)\)|errno[ =:]+(\d+)")
_CUDA_MSG = rxcache.compile(r"cuda error: ([a-z][a-z -]{3,60}?)(?:\n|$|\.| when| at| \()")


def mechanisms(text: str) -> list[str]:
    """Mechanism tokens of some decisive text: the error families it names (see _FAMILIES), the CUDA / cuBLAS / NCCL
    error names (cudaErrorIllegalAddress → cuda=cudaerrorillegaladdress), Errno codes, and the short CUDA error
    message ("cuda error: an illegal memory access was encountered")."""
    s = text.lower()
    out = [n for n, rx in _FAMILY_RX if rx.search(s)]
    out += ["name=" + m for m in sorted(set(_CUDA_NAME.findall(s)))]
    for g in _ERRNO.findall(s):
        code = next(x for x in g if x)
        out.append("errno=" + code)
    out += ["cuda=" + m.strip().replace(" ", "_") for m in sorted(set(_CUDA_MSG.findall(s)))]
    return sorted(set(out))


_FILE_LINE = rxcache.compile(r'^\s*File "(?P<file>[^"]*)", line \d+, in (?P<func>.+)$')
_ERRORISH = rxcache.compile(r"^(?:ERROR|CRITICAL|FATAL)\b|\[Errno \d+\]")
_BARE_EXC = rxcache.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception): ")
