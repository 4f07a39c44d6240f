"""Pure-Python inference for the shipped cause classifier (no numpy, no scikit-learn).

The model is a multinomial logistic regression over hashed feature tokens, exported by `classify/train.py` to plain
JSON (`logdoctor/data/classifier.json`):

  vectorise   bucket(token) = crc32(token, utf-8) mod n_buckets; x[bucket] = namespace weight of the token
              (namespace_weights; 1 by default, the largest one when tokens share a bucket);
              x /= sqrt(max(Σ x², norm_floor))  (L2 norm over ALL buckets hit, known to the model or not;
              floored so that a short excerpt does not get the weight of a whole log)
  logits      z_k = intercept_k + Σ_j x_j · W[j][k]  over the buckets j the model has weights for
  calibrate   p = softmax(z / temperature)
  abstain     the caller treats max p < threshold as "unknown"

JSON keys: format ("logdoctor.classifier/v1"), feature_version, n_buckets, norm_floor, namespace_weights,
hash ("crc32"), classes, intercepts,
buckets (sorted ints) + coef (one row of len(classes) floats per bucket: the sparse non-zero part of the
coefficient matrix), temperature, threshold, threshold_criterion, training (cases, groups, data_sha256, C, ...).
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

FORMAT = "logdoctor.classifier/v1"


def bucket(token: str, n_buckets: int) -> int:
    """Stable across processes and platforms (Python's own hash() is salted per process)."""
    return zlib.crc32(token.encode("utf-8", "surrogatepass")) % n_buckets


def token_weight(token: str, weights: dict[str, float]) -> float:
    """The weight of a token's namespace: "ns:src" for source-tagged tokens (t:/w:/b:), else "ns"; default 1."""
    if not weights:
        return 1.0
    ns, _, rest = token.partition(":")
    if ns in ("t", "w", "b"):
        w = weights.get(ns + ":" + rest.partition(":")[0])
        if w is not None:
            return w
    return weights.get(ns, 1.0)


def vectorise(
    tokens, n_buckets: int, norm_floor: float = 0.0, weights: dict[str, float] | None = None
) -> dict[int, float]:
    """{bucket: value}: each distinct bucket gets the largest namespace weight of the tokens hitting it; the vector
    is L2-normalised, the squared norm floored at `norm_floor` so that a short excerpt with a handful of tokens is
    not blown up to the strength of a whole log."""
    vals: dict[int, float] = {}
    for t in tokens:
        w = token_weight(t, weights or {})
        if w <= 0:
            continue
        b = bucket(t, n_buckets)
        if w > vals.get(b, 0.0):
            vals[b] = w
    if not vals:
        return {}
    sq = 0.0
    for b in sorted(vals):
        sq += vals[b] * vals[b]
    norm = math.sqrt(max(sq, norm_floor))
    return {b: vals[b] / norm for b in sorted(vals)}


def softmax(z: list[float]) -> list[float]:
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


class Model:
    def __init__(self, data: dict):
        if data.get("format") != FORMAT:
            raise ValueError(f"not a logdoctor classifier ({data.get('format')!r})")
        self.data = data
        self.n_buckets = int(data["n_buckets"])
        self.classes: list[str] = list(data["classes"])
        self.intercepts: list[float] = [float(v) for v in data["intercepts"]]
        self.weights: dict[int, list[float]] = dict(zip(data["buckets"], data["coef"]))
        self.temperature = float(data.get("temperature", 1.0))
        self.threshold = float(data.get("threshold", 0.5))
        self.feature_version = int(data["feature_version"])
        self.norm_floor = float(data.get("norm_floor", 0))
        self.ns_weights: dict[str, float] = {k: float(v) for k, v in (data.get("namespace_weights") or {}).items()}

    @classmethod
    def load(cls, path) -> Model:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def logits(self, tokens) -> list[float]:
        """Uncalibrated decision values (scikit-learn's decision_function)."""
        x = vectorise(tokens, self.n_buckets, self.norm_floor, self.ns_weights)
        z = list(self.intercepts)
        k = len(z)
        for b, v in x.items():
            row = self.weights.get(b)
            if row is not None:
                for i in range(k):
                    z[i] += row[i] * v
        return z

    def predict_proba(self, tokens) -> dict[str, float]:
        """Calibrated class probabilities, {cause: p}."""
        z = self.logits(tokens)
        t = self.temperature
        return dict(zip(self.classes, softmax([x / t for x in z])))

    def known_tokens(self, tokens) -> list[str]:
        """The tokens that carry weight in this model (for -v output)."""
        return [t for t in tokens if bucket(t, self.n_buckets) in self.weights]

    def top_tokens(self, tokens, cause: str, n: int = 5) -> list[tuple[str, float]]:
        """The tokens that pushed most towards `cause` (relative to the mean class), for explanations."""
        if cause not in self.classes:
            return []
        ci = self.classes.index(cause)
        out = []
        for t in set(tokens):
            row = self.weights.get(bucket(t, self.n_buckets))
            w = token_weight(t, self.ns_weights)
            if row is not None and w > 0:
                out.append((t, w * (row[ci] - sum(row) / len(row))))
        out.sort(key=lambda x: (-x[1], x[0]))
        return out[:n]
