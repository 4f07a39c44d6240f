"""Harmless lines that real start-ups are full of.  Each function takes the engine emitter and adds lines."""
from __future__ import annotations

import random

HOST_NOISE = [
    ("sshd", "Accepted publickey for {user} from 10.{a}.{b}.{c} port {p} ssh2: ED25519 SHA256:{k}"),
    ("sshd", "pam_unix(sshd:session): session opened for user {user}(uid=1001) by (uid=0)"),
    ("systemd-logind", "New session {n} of user {user}."),
    ("CRON", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)"),
    ("nvidia-persistenced", "Verbose syslog connection opened"),
    ("dockerd", "time=\"{iso}\" level=info msg=\"ignoring event\" container={k} module=libcontainerd "
                "namespace=moby topic=/tasks/delete type=\"*events.TaskDelete\""),
    ("systemd-timesyncd", "Initial synchronization to time server 10.{a}.0.1:123 (ntp.internal)."),
    ("node_exporter", "ts={iso} caller=collector.go:173 level=error msg=\"collector failed\" name=infiniband "
                      "err=\"failed to read /sys/class/infiniband: no such file or directory\""),
]


def host_line(log, rng: random.Random) -> None:
    ident, tpl = rng.choice(HOST_NOISE)
    msg = tpl.format(user=rng.choice(["ops", "mlops", "deploy", "oncall"]), a=rng.randint(0, 40),
                     b=rng.randint(0, 255), c=rng.randint(2, 250), p=rng.randint(30000, 65000),
                     k="".join(rng.choice("abcdef0123456789") for _ in range(12)), n=rng.randint(100, 9999),
                     iso=log.t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
    log.other(ident, rng.randint(900, 90000), msg)


def pynvml(e) -> None:
    site = e.d.site
    e.log.app(f"{site}/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated. Please install "
              "nvidia-ml-py instead. If you did not install pynvml directly, please report this to the maintainers "
              "of the package that installed pynvml for you.", 4)
    e.log.app("  import pynvml  # type: ignore[import]", 4)


def torch_dtype_deprecated(e) -> None:
    e.log.app("`torch_dtype` is deprecated! Use `dtype` instead!", 4)


def slow_processor(e) -> None:
    e.log.app("Using a slow image processor as `use_fast` is unset and a slow processor was saved with this model. "
              "`use_fast=True` will be the default behavior in v4.52, even if the model was saved with a slow "
              "processor. This will result in minor differences in outputs. You'll still be able to use a slow "
              "processor with `use_fast=False`.", 4)


def c10d_device_id(e) -> None:
    e.log.app(f"{e.d.site}/torch/distributed/distributed_c10d.py:4807: UserWarning: No device id is provided via "
              "`init_process_group` or `barrier `. Using the current device set by the user. ", 4)
    e.log.app("  warnings.warn(  # warn only once", 4)


def hf_retry(e) -> None:
    rid = "".join(e.rng.choice("0123456789abcdef") for _ in range(8))
    e.log.app("'(ReadTimeoutError(\"HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. (read "
              f"timeout=10)\"), '(Request ID: {rid}-{e.rng.randint(1000, 9999)})')' thrown while requesting HEAD "
              f"https://huggingface.co/{e.d.model.repo}/resolve/main/generation_config.json", 4)
    e.log.app("Retrying in 1s [Retry 1/5].", 4)


def nccl_info(e, retry: bool = True) -> None:
    """NCCL_DEBUG=INFO chatter: plugin-not-found, no IB, a refused connect that is retried, then Init COMPLETE."""
    host, rng = e.log.host, e.rng
    n = e.d.tp
    base = e.log.pid + 70
    ip = f"10.{rng.randint(0, 40)}.{rng.randint(0, 255)}.{rng.randint(2, 250)}"
    ifc = rng.choice(["eth0", "bond0", "ens21np0", "enp75s0f0"])

    def say(r: int, msg: str) -> None:
        e.log.app(f"{host}:{base + 3 * r}:{base + 3 * r} [{r}] NCCL INFO {msg}")
    say(0, f"Bootstrap: Using {ifc}:{ip}<0>")
    say(0, "cudaDriverVersion 12080")
    say(0, "NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.")
    say(0, "Failed to open libibverbs.so[.1]")
    say(0, f"NET/Socket : Using [0]{ifc}:{ip}<0>")
    say(0, "Using network Socket")
    if retry and n > 1:
        r = rng.randint(1, n - 1)
        say(r, "Call to connect returned Connection refused, retrying")
        say(r, "Call to connect returned Connection refused, retrying")
    for r in range(n):
        say(r, f"comm 0x{rng.getrandbits(44):x} rank {r} nRanks {n} nNodes 1 localRanks {n} localRank {r} MNNVL 0")
    say(0, f"Channel 00/{rng.choice([16, 24, 32])} : " + " ".join(str(i) for i in range(n)))
    for r in range(min(n, 4)):
        say(r, f"Channel 00/0 : {r}[{r}] -> {(r + 1) % n}[{(r + 1) % n}] via P2P/CUMEM/read")
    say(0, "Connected all rings, use ring PXN 0 GDR 1")
    for r in range(n):
        say(r, f"ncclCommInitRank comm 0x{rng.getrandbits(44):x} rank {r} nranks {n} cudaDev {r} nvmlDev {r} busId "
               f"{['18000', '2a000', '3a000', '5d000', '9a000', 'ab000', 'ba000', 'db000'][r % 8]} commId "
               f"0x{rng.getrandbits(64):016x} - Init COMPLETE")


def gloo(e) -> None:
    for r in range(e.d.tp):
        e.log.app(f"[Gloo] Rank {r} is connected to {e.d.tp - 1} peer ranks. Expected number of connected peer "
                  f"ranks is : {e.d.tp - 1}")


def health_waiter(e, ident: str = "wait-ready", tries: int = 3) -> None:
    """An ExecStartPost helper polling /health; its 'connection refused' retries are normal."""
    pid = e.log.pid + 1
    url = f"http://127.0.0.1:{e.d.http_port}/health"
    for k in range(1, tries + 1):
        e.log.other_unit(ident, pid, f"curl: (7) Failed to connect to 127.0.0.1 port {e.d.http_port} after 0 ms: "
                                     f"Couldn't connect to server; retry {k}/120 for {url}")


# -- SGLang -----------------------------------------------------------------
def sg_chat_template(e) -> None:
    e.line(f"Inferred chat template from model path: {e.rng.choice(['llama-3-instruct', 'qwen', 'chatml'])}")


def sg_too_long(e) -> None:
    ctx = e.cfg.get("context_length") or e.d.model.ctx
    n = ctx + e.rng.randint(100, 9000)
    e.line(f"The input ({n} tokens) is longer than the model's context length ({ctx} tokens).", prio=3)
    e.line(f'INFO:     10.{e.rng.randint(0, 40)}.{e.rng.randint(0, 255)}.{e.rng.randint(2, 250)}:'
           f'{e.rng.randint(30000, 60000)} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')


def sg_overlap_off(e) -> None:
    e.line("Overlap scheduler is disabled because of using eagle or DFLASH speculative decoding.", prio=4)


# -- vLLM -------------------------------------------------------------------
def vl_platform(e) -> None:
    e.say(e.api, "Automatically detected platform cuda.", "__init__.py", 216)


def vl_model_flag(e) -> None:
    e.say(e.api, "With `vllm serve`, you should provide the model as a positional argument or in a config file "
                 "instead of via the `--model` option. The `--model` option will be removed in v0.13.",
          "argparse_utils.py", 1856, "WARNING")


def vl_spawn(e) -> None:
    e.say(e.api, "We must use the `spawn` multiprocessing start method. Overriding VLLM_WORKER_MULTIPROC_METHOD to "
                 "'spawn'. See https://docs.vllm.ai/en/latest/usage/troubleshooting.html#python-multiprocessing for "
                 "more information. Reason: CUDA is initialized", "multiproc_worker_utils.py", 281, "WARNING")


def vl_ulimit(e) -> None:
    e.say(e.api, "Found ulimit of 1024 and failed to automatically increase with error current limit exceeds "
                 "maximum limit. This can cause fd limit errors like `OSError: [Errno 24] Too many open files`. "
                 "Consider increasing with ulimit -n", "system_utils.py", 67, "WARNING")


def vl_gen_config(e) -> None:
    e.say(e.api, "Default sampling parameters have been overridden by the model's Hugging Face generation config "
                 "recommended from the model creator. If this is not intended, please relaunch vLLM instance with "
                 "`--generation-config vllm`.", "model.py", 1523, "WARNING")


def vl_too_long(e) -> None:
    n = e.max_len + e.rng.randint(200, 20000)
    e.say(e.api, f"Error in preprocessing prompt inputs", "serving_chat.py", 257, "ERROR")
    e.say(e.api, f"This model's maximum context length is {e.max_len} tokens. However, your request has {n} input "
                 "tokens. Please reduce the length of the input messages.", "serving_engine.py", 1004, "WARNING")
    e.raw(e.api, f'INFO:     10.{e.rng.randint(0, 40)}.{e.rng.randint(0, 255)}.{e.rng.randint(2, 250)}:'
                 f'{e.rng.randint(30000, 65000)} - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request')


def vl_abort(e) -> None:
    rid = "chatcmpl-" + "".join(e.rng.choice("0123456789abcdef") for _ in range(32))
    e.say(e.api, f"Aborted request {rid}.", "async_llm.py", 431)
