"""Train the cause classifier on labelled cases and export it to plain JSON (read back by classify/model.py).

Recipe (fixed seed, sorted inputs: the same cases give the same JSON bytes):

1. Examples: every labelled case with `failed` true and a taxonomy cause (healthy and "unknown" labels are skipped);
   features of the LAST attempt of its timeline (the one the label describes); group = `variant_of` (else the id),
   so variants of one story never sit on both sides of a split.
2. Design matrix: tokens → crc32 buckets (n_buckets = 2^18), valued by namespace weight (NS_WEIGHTS: mechanism
   tokens 3, decisive tokens 1, words and context 0.25, whole-line templates and bigrams 0), L2-normalised over all buckets hit with the squared norm
   floored at NORM_FLOOR (a 5-line excerpt must not speak as loudly as a whole log); then the columns seen in fewer
   than MIN_GROUPS groups of the training data are dropped (a token that only one story shows cannot generalise, and
   dropping it keeps the model file small).
3. scikit-learn LogisticRegression (multinomial, lbfgs, random_state=SEED); C from C_GRID by grouped K-fold
   (GroupKFold by group) out-of-fold log-loss after temperature scaling.
4. Temperature: the scalar T minimising the out-of-fold negative log-likelihood of softmax(z / T) (z = out-of-fold
   decision values of the chosen C).
5. Abstention threshold t (on the calibrated top probability): chosen on the same out-of-fold predictions to
   maximise  U(t) = Σ_cases [p_max ≥ t] · (1[right] − ERROR_COST · 1[wrong])  — answering right earns 1, answering
   wrong costs ERROR_COST (= 2: a confident wrong cause sends the operator to turn the wrong knob, worse than
   "unknown, collect more"), abstaining scores 0. Candidates: 0.35 .. 0.95 in steps of 0.01 (never below the
   api's MIN_CONFIDENCE); the midpoint of the best plateau is taken.
6. Export: JSON only (no pickle): see model.py for the keys.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse
from scipy.optimize import minimize_scalar

from logdoctor.classify.corpus import Case
from logdoctor.classify.features import FEATURE_VERSION, features
from logdoctor.classify.model import FORMAT, vectorise
from logdoctor.core.records import ReadResult
from logdoctor.timeline.build import Timeline

SEED = 0
N_BUCKETS = 1 << 18
MIN_GROUPS = 2
NORM_FLOOR = 64.0
# Namespace weights (features.py namespaces). Mechanism tokens (mech:, mech_phase: error families, CUDA/NCCL error
# names, errno codes, alone and crossed with the phase) count 3; exception types, phase, Xid, systemd verdict, death
# markers, flags and the *_phase crosses 1; words of messages 0.25; frames, levers, env and the attempt's shape 0.25;
# marker families 0.25 (the last one 0.5); whole-line templates and bigrams 0 (dropped: they name the story, not the
# mechanism). Picked by grouped 5-fold CV utility on fixtures/journals (right answers - 2 x wrong answers) among
# settings S0..S13 (see the classifier report): mechanism features took CV cause accuracy on failures from 0.32 to
# 0.56; balanced class weights and MIN_GROUPS = 3 did not help.
_TEMPLATES = (
    "t:inner",
    "t:wrap",
    "t:exc",
    "t:err",
    "t:kern",
    "t:sd",
    "t:death",
    "t:hint",
    "t:head",
    "b:inner",
    "b:wrap",
    "b:exc",
    "b:err",
    "b:kern",
    "b:sd",
    "b:death",
    "b:hint",
    "b:head",
)
_WORDS = ("w:inner", "w:wrap", "w:exc", "w:err", "w:kern", "w:sd", "w:death", "w:hint", "w:head")
CONTEXT_WEIGHT = 0.25
_CONTEXT = (
    "lever",
    "env",
    "fn",
    "file",
    "completed",
    "ready",
    "start_seen",
    "attempts",
    "ranks_died",
    "config",
    "fatal_blocks",
    "phase_src",
    "wrap_exc",
    "prev_phase",
    "rank_alone",
    "chain",
    "abort",
    "marker",
)
NS_WEIGHTS: dict[str, float] = {
    **{k: CONTEXT_WEIGHT for k in _CONTEXT},
    **{k: 0.0 for k in _TEMPLATES},
    **{k: 0.25 for k in _WORDS},
    "mech": 3.0,
    "mech_phase": 3.0,
    "last_marker": 0.5,
    "fn_in_phase": 0.5,
}
C_GRID = (1.0, 4.0, 16.0, 64.0, 256.0, 1024.0)
K_INNER = 5
CLASS_WEIGHT = None
ERROR_COST = 2.0
THRESHOLD_GRID = tuple(round(0.35 + 0.01 * i, 2) for i in range(61))
CRITERION = (
    "maximise sum over out-of-fold cases of [p_max >= t] * (1[right] - 2 * 1[wrong]) over t in "
    "0.35..0.95 step 0.01 (midpoint of the best plateau); GroupKFold by variant_of"
)


@dataclass
class Example:
    id: str
    group: str
    cause: str
    tokens: list[str]
    data_sha256: str = ""
    engine: str = ""


@dataclass
class Parsed:
    """A case read and built once (eval --cv reuses it for training and for diagnosing)."""

    case: Case
    res: ReadResult | None = None
    tl: Timeline | None = None
    error: str | None = None
    example: Example | None = None


def parse_cases(cases) -> list[Parsed]:
    from logdoctor.scan.sources import read_any
    from logdoctor.timeline.build import build

    out = []
    for case in sorted(cases, key=lambda c: c.id):
        p = Parsed(case)
        path = Path(case.path) / "journal.log"
        try:
            raw = path.read_bytes()
            p.res = read_any(path)
            p.tl = build(p.res.records)
        except Exception as exc:  # noqa: BLE001 - an unreadable case is skipped for training, reported by eval
            p.error = f"{type(exc).__name__}: {exc}"
            out.append(p)
            continue
        lab = case.label
        cause = lab.get("cause")
        if case.failed and cause not in (None, "null", "unknown"):
            p.example = Example(
                id=case.id,
                group=str(lab.get("variant_of") or case.id),
                cause=str(cause),
                tokens=features(p.tl, p.tl.attempts[-1]),
                data_sha256=hashlib.sha256(raw).hexdigest(),
                engine=p.tl.engine,
            )
        out.append(p)
    return out


def load_examples(dirs) -> list[Example]:
    from logdoctor.classify.corpus import load_cases

    return [p.example for p in parse_cases(load_cases(dirs)) if p.example is not None]


# ---- design matrix -----------------------------------------------------------------------------------------------


def _rows(examples, n_buckets=N_BUCKETS) -> list[dict[int, float]]:
    """Each example as {bucket: value}, normalised exactly as model.py does it at inference time."""
    return [vectorise(ex.tokens, n_buckets, NORM_FLOOR, NS_WEIGHTS) for ex in examples]


def _kept_columns(rows, groups, min_groups: int | None = None) -> set[int]:
    min_groups = MIN_GROUPS if min_groups is None else min_groups
    seen: dict[int, set] = {}
    for bs, g in zip(rows, groups):
        for b in bs:
            seen.setdefault(b, set()).add(g)
    return {b for b, gs in seen.items() if len(gs) >= min_groups}


def design(rows, kept: set[int] | list[int]):
    """CSR matrix over the kept buckets only (column j = sorted(kept)[j]). The rows were normalised over every
    bucket hit, kept or not, which is exactly what model.py computes at inference time; the buckets left out would
    get zero weights anyway, so the compact matrix gives the same model, only faster."""
    cols = {b: j for j, b in enumerate(sorted(kept))}
    indptr, indices, data = [0], [], []
    for x in rows:
        for b, v in x.items():
            j = cols.get(b)
            if j is not None:
                indices.append(j)
                data.append(v)
        indptr.append(len(indices))
    return sparse.csr_matrix(
        (np.array(data, dtype=np.float64), np.array(indices, dtype=np.int64), np.array(indptr, dtype=np.int64)),
        shape=(len(rows), len(cols)),
    )


def _fit_lr(X, y, C):
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    clf = LogisticRegression(C=C, max_iter=10000, tol=1e-6, random_state=SEED, class_weight=CLASS_WEIGHT)
    # one thread: the problem is tiny, OpenMP/BLAS threads only spin (10-50x slower on a busy host), and a fixed
    # thread count keeps the floating-point sums, hence the JSON bytes, identical run to run
    with threadpool_limits(limits=1):
        clf.fit(X, y)
    return clf


def _decision(clf, X, classes) -> np.ndarray:
    """Decision values over ALL classes (a class missing from a fold's training data gets -inf)."""
    z = np.full((X.shape[0], len(classes)), -np.inf)
    d = clf.decision_function(X)
    if d.ndim == 1:  # binary: sklearn returns one column for classes_[1]
        d = np.column_stack([-d / 2, d / 2])
    for j, c in enumerate(clf.classes_):
        z[:, classes.index(c)] = d[:, j]
    return z


def softmax_t(z: np.ndarray, t: float) -> np.ndarray:
    s = z / t
    s = s - s.max(axis=1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=1, keepdims=True)


def _nll(z, yi, t) -> float:
    p = softmax_t(z, t)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(yi)), yi], 1e-300, None))))


def fit_temperature(z: np.ndarray, yi: np.ndarray) -> float:
    ok = np.isfinite(z[np.arange(len(yi)), yi])  # the true class was trainable in that fold
    if ok.sum() < 2:
        return 1.0
    z, yi = z[ok], yi[ok]
    r = minimize_scalar(
        lambda lt: _nll(z, yi, math.exp(lt)),
        bounds=(math.log(0.05), math.log(20.0)),
        method="bounded",
        options={"xatol": 1e-6},
    )
    return float(round(math.exp(r.x), 6))


def choose_threshold(pmax: np.ndarray, right: np.ndarray, cost: float = ERROR_COST) -> tuple[float, dict]:
    utils = []
    for t in THRESHOLD_GRID:
        ans = pmax >= t
        utils.append(float(np.sum(right[ans]) - cost * np.sum(~right[ans])))
    best = max(utils)
    plateau = [t for t, u in zip(THRESHOLD_GRID, utils) if u == best]
    # the longest run of consecutive grid values at the best utility (the first such run on ties)
    runs, cur = [], [plateau[0]]
    for t in plateau[1:]:
        if round(t - cur[-1], 2) <= 0.01:
            cur.append(t)
        else:
            runs.append(cur)
            cur = [t]
    runs.append(cur)
    run = max(runs, key=len)
    thr = round((run[0] + run[-1]) / 2, 3)
    ans = pmax >= thr
    info = {
        "utility": best,
        "answered": int(ans.sum()),
        "right_answered": int(right[ans].sum()),
        "wrong_answered": int((~right[ans]).sum()),
        "cases": int(len(pmax)),
    }
    return thr, info


def _group_folds(groups: list[str], k: int):
    from sklearn.model_selection import GroupKFold

    n_groups = len(set(groups))
    k = max(2, min(k, n_groups))
    idx = np.arange(len(groups))
    return list(GroupKFold(n_splits=k).split(idx, groups=groups))


@dataclass
class Fitted:
    data: dict
    estimator: object = None
    X: object = None
    y: list = field(default_factory=list)
    oof: dict = field(default_factory=dict)


def fit(examples: list[Example], *, n_buckets: int = N_BUCKETS, c_grid=C_GRID, k_inner: int = K_INNER) -> Fitted:
    """Train, calibrate, choose the threshold, and return the JSON-ready dict (+ the estimator for tests)."""
    examples = sorted(examples, key=lambda e: e.id)
    if len(examples) < 2 or len({e.cause for e in examples}) < 2:
        raise ValueError("need labelled failures of at least two causes to train the classifier")
    classes = sorted({e.cause for e in examples})
    y = [e.cause for e in examples]
    yi = np.array([classes.index(c) for c in y])
    groups = [e.group for e in examples]
    rows = _rows(examples, n_buckets)

    folds = _group_folds(groups, k_inner)
    oof_by_c = {C: _out_of_fold(rows, y, yi, groups, classes, folds, C) for C in c_grid}
    best_c = min(c_grid, key=lambda C: (round(oof_by_c[C][2], 9), C))
    z, temperature, nll = oof_by_c[best_c]
    p = softmax_t(np.where(np.isfinite(z), z, -1e9), temperature)
    pred = p.argmax(axis=1)
    pmax = p.max(axis=1)
    right = pred == yi
    threshold, tinfo = choose_threshold(pmax, right)

    kept = _kept_columns(rows, groups)
    X = design(rows, kept)
    est = _fit_lr(X, y, best_c)
    assert list(est.classes_) == classes
    coef = est.coef_
    if coef.shape[0] == 1:
        raise ValueError("binary problems are not supported by the exporter")
    col_bucket = sorted(kept)
    nzj = [int(j) for j in np.flatnonzero(np.any(coef != 0.0, axis=0))]
    nz = [col_bucket[j] for j in nzj]
    data_sha, features_sha = _training_hashes(examples)
    counts = {c: y.count(c) for c in classes}
    data = {
        "format": FORMAT,
        "feature_version": FEATURE_VERSION,
        "hash": "crc32",
        "n_buckets": n_buckets,
        "norm_floor": NORM_FLOOR,
        "namespace_weights": dict(sorted(NS_WEIGHTS.items())),
        "classes": classes,
        "intercepts": [float(v) for v in est.intercept_],
        "temperature": temperature,
        "threshold": threshold,
        "threshold_criterion": CRITERION,
        "training": {
            "cases": len(examples),
            "groups": len(set(groups)),
            "class_counts": counts,
            "data_sha256": data_sha,
            "features_sha256": features_sha,
            "C": best_c,
            "seed": SEED,
            "min_groups": MIN_GROUPS,
            "error_cost": ERROR_COST,
            "inner_folds": len(folds),
            "estimator": "sklearn LogisticRegression(multinomial, lbfgs)",
            "oof": {
                "accuracy": round(float(right.mean()), 4),
                "nll_calibrated": round(float(nll), 4),
                "answered": tinfo["answered"],
                "right_answered": tinfo["right_answered"],
                "wrong_answered": tinfo["wrong_answered"],
            },
        },
        "buckets": nz,
        "coef": [[float(v) for v in coef[:, j]] for j in nzj],
    }
    return Fitted(
        data=data, estimator=est, X=X, y=y, oof={"z": z, "p": p, "right": right, "ids": [e.id for e in examples]}
    )


def _out_of_fold(rows, y: list, yi, groups: list, classes: list, folds: list, C: float) -> tuple:
    """(out-of-fold decision values, their fitted temperature, the calibrated NLL) for one C: what the C and the
    threshold are chosen on. The column filter is recomputed on each training fold; a fold whose training part holds
    one class leaves its rows at -inf."""
    z = np.full((len(y), len(classes)), -np.inf)
    for tr, te in folds:
        kept = _kept_columns([rows[i] for i in tr], [groups[i] for i in tr])
        ytr = [y[i] for i in tr]
        if len(set(ytr)) < 2:
            continue
        clf = _fit_lr(design([rows[i] for i in tr], kept), ytr, C)
        z[te] = _decision(clf, design([rows[i] for i in te], kept), classes)
    t = fit_temperature(z, yi)
    return z, t, _nll_safe(z, yi, t)


def _training_hashes(examples: list[Example]) -> tuple[str, str]:
    """(data_sha256, features_sha256) of the training set: the first over ids, groups, causes and log hashes, the
    second over the tokens too (the same logs give other tokens when the parser changes)."""
    sha = hashlib.sha256()
    for e in examples:
        sha.update(f"{e.id}\t{e.group}\t{e.cause}\t{e.data_sha256}\n".encode())
    fsha = hashlib.sha256()
    for e in examples:
        fsha.update(("\t".join([e.id] + list(e.tokens)) + "\n").encode("utf-8", "surrogatepass"))
    return sha.hexdigest(), fsha.hexdigest()


def _nll_safe(z, yi, t) -> float:
    ok = np.isfinite(z[np.arange(len(yi)), yi])
    if not ok.any():
        return float("inf")
    # cases whose class was absent from their training fold count as a fixed large loss (same for every C)
    return _nll(z[ok], yi[ok], t) * ok.mean() + (1 - ok.mean()) * 50.0


def dumps(data: dict) -> str:
    """Deterministic JSON: sorted keys, one coefficient row per line (floats in repr: exact round-trip)."""
    head = {k: v for k, v in data.items() if k not in ("buckets", "coef")}
    body = json.dumps(head, sort_keys=True, indent=1, ensure_ascii=True)
    rows = ",\n".join(json.dumps(r, separators=(",", ":")) for r in data["coef"])
    buckets = json.dumps(data["buckets"], separators=(",", ":"))
    return body[:-2] + ',\n "buckets": ' + buckets + ',\n "coef": [\n' + rows + "\n ]\n}\n"


def train(dirs, out: str | Path) -> Fitted:
    examples = load_examples(dirs)
    fitted = fit(examples)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from logdoctor.core.atomic import write_text

    write_text(out, dumps(fitted.data))
    return fitted
