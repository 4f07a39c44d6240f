"""`logdoctor --version`: the package version, how many rules this installation bundles, and which classifier
model it ships (its content hash), so a bug report names exactly what decided."""

from __future__ import annotations

import hashlib
import json


def version_text() -> str:
    from logdoctor import __version__
    from logdoctor.classify.runtime import DEFAULT_PATH
    from logdoctor.matching.loader import bundled_rules_dir

    d = bundled_rules_dir()
    n = sum(1 for _ in d.rglob("*.yaml")) if d.is_dir() else 0
    rules = f"{n} bundled rules ({d})" if n else f"NO bundled rules (looked in {d}: broken installation)"
    try:
        data = DEFAULT_PATH.read_bytes()
        meta = json.loads(data)
        model = (
            f"model {meta.get('format', '?')} feature v{meta.get('feature_version', '?')} "
            f"sha256:{hashlib.sha256(data).hexdigest()[:16]}"
        )
    except (OSError, ValueError):
        model = "no classifier model (rules only)"
    return f"logdoctor, version {__version__}\n{rules}\n{model}"
