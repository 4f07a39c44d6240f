"""Accuracy on labelled cases (LABEL_SCHEMA.md): load cases, diagnose each, score against the label.

Scores per case: cause (primary; and primary-or-secondary), phase, first-fix agreement (a label's fix_flags flag
among the first two proposed), forbidden suggestions (must_not_suggest), healthy logs flagged, unknown, wrong at
confidence ≥ 0.8. Aggregation into tables uses pandas (imported only here, never on the explain path)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from logdoctor.classify.corpus import Case, load_cases  # noqa: F401 - re-exported: evaluation.load_cases


@dataclass
class CaseResult:
    id: str
    engine: str
    label_cause: str | None
    label_phase: str
    cause: str | None
    phase: str
    confidence: float
    rule: str | None
    cause_ok: bool
    cause_or_secondary_ok: bool
    phase_ok: bool
    fix_ok: bool | None  # None when the label has no fix_flags
    forbidden: list[str] = field(default_factory=list)
    healthy_flagged: bool = False
    unknown: bool = False
    wrong_confident: bool = False
    fixes: list[str] = field(default_factory=list)
    group: str = ""


def _flag_of(s: str) -> str:
    return s.split()[0] if s else s


def _norm_val(v) -> str:
    s = str(v).lower()
    try:
        return repr(float(s))
    except ValueError:
        return s


def score(case: Case, d) -> CaseResult:
    lab = case.label
    lc = lab.get("cause") if case.failed else None
    lp = lab.get("phase") or ("serving" if not case.failed else "unknown")
    cause = d.cause if d.failed else None
    proposed = [f"{f.flag}" + ("" if f.to is True else f" {f.to}") for f in d.fixes]
    cause_ok, secondary_ok = _cause_agrees(case, d, cause, lc)
    res = CaseResult(
        id=case.id,
        engine=str(lab.get("engine") or d.engine),
        label_cause=lc,
        label_phase=lp,
        cause=cause,
        phase=d.phase,
        confidence=d.confidence,
        rule=d.rule,
        cause_ok=cause_ok,
        cause_or_secondary_ok=cause_ok or secondary_ok,
        phase_ok=(d.phase == lp),
        fix_ok=_fix_agrees(case, d),
        forbidden=_forbidden(lab, d.fixes),
        healthy_flagged=(not case.failed and d.failed),
        unknown=(d.failed and cause == "unknown"),
        wrong_confident=(not cause_ok and d.confidence >= 0.8 and d.failed and cause != "unknown"),
        fixes=proposed,
        group=str(lab.get("variant_of") or case.id),
    )
    return res


def _cause_agrees(case: Case, d, cause: str | None, label_cause: str | None) -> tuple[bool, bool]:
    """(the cause is the label's, the cause is the label's secondary one): a healthy case agrees when nothing
    failed; a failed case only when the diagnosis failed too, with that cause."""
    cause_ok = (not case.failed and not d.failed) or (case.failed and d.failed and cause == label_cause)
    sec = case.label.get("secondary")
    return cause_ok, bool(case.failed and d.failed and sec is not None and cause == sec)


def _fix_agrees(case: Case, d) -> bool | None:
    """Whether a flag of the label's fix_flags is among the first two fixes proposed; None when the label names
    none (or the case is healthy), so the case does not count towards fix agreement."""
    fix_flags = [str(x) for x in (case.label.get("fix_flags") or [])]
    if not (fix_flags and case.failed):
        return None
    first_two = {f.flag for f in d.fixes[:2]}
    return any(_flag_of(f) in first_two for f in fix_flags)


def _forbidden(lab: dict, fixes: list) -> list[str]:
    """The proposed fixes the label's must_not_suggest forbids: `FLAG` forbids any value, `FLAG VALUE` that value
    (compared as numbers where both read as one)."""
    forbidden = []
    for m in lab.get("must_not_suggest") or []:
        parts = str(m).split(None, 1)
        for f in fixes:
            if f.flag != parts[0]:
                continue
            if len(parts) == 1 or _norm_val(parts[1]) == _norm_val(f.to):
                forbidden.append(f"{f.flag} {f.to}")
    return forbidden


def run(dirs, *, rule_dirs=(), classifier="default", mode="combined") -> list[CaseResult]:
    from logdoctor.matching.loader import load_rules
    from logdoctor.scan.sources import read_any
    from logdoctor.timeline.build import build
    from logdoctor.verdict.api import diagnose_timeline

    rules = load_rules(tuple(rule_dirs))
    clf = None
    if mode in ("combined", "classifier"):
        from logdoctor.classify.runtime import load_default

        clf = load_default() if classifier == "default" else classifier
    out = []
    for case in load_cases(dirs):
        try:
            res = read_any(case.path / "journal.log")
        except Exception as exc:  # noqa: BLE001 - an unreadable case is a result, not a crash
            out.append(
                CaseResult(
                    case.id,
                    str(case.label.get("engine")),
                    case.label.get("cause"),
                    str(case.label.get("phase")),
                    f"error: {exc}",
                    "unknown",
                    0.0,
                    None,
                    False,
                    False,
                    False,
                    None,
                )
            )
            continue
        tl = build(res.records)
        use_rules = rules if mode != "classifier" else []
        d = diagnose_timeline(tl, res, use_rules, classifier=clf)
        out.append(score(case, d))
    return out


def run_cv(dirs, k: int, *, rule_dirs=(), modes=("combined",)) -> dict[str, list[CaseResult]]:
    """Grouped K-fold cross-validation of the classifier on labelled cases: cases are split by `variant_of` (a case
    without one is its own group) into K folds; for each fold a classifier is trained on the other K-1 folds
    (classify/train.py, the full recipe incl. calibration and threshold) and the fold's cases are diagnosed in each
    mode. Returns every case once per mode, scored as in run()."""
    from sklearn.model_selection import GroupKFold

    from logdoctor.classify import train as tr
    from logdoctor.classify.runtime import from_data
    from logdoctor.matching.loader import load_rules
    from logdoctor.verdict.api import diagnose_timeline

    parsed = tr.parse_cases(load_cases(dirs))
    if not parsed:
        return {m: [] for m in modes}
    groups = [str(p.case.label.get("variant_of") or p.case.id) for p in parsed]
    k = max(2, min(int(k), len(set(groups))))
    rules = load_rules(tuple(rule_dirs))
    out: dict[str, list] = {m: [None] * len(parsed) for m in modes}
    for train_idx, test_idx in GroupKFold(n_splits=k).split(parsed, groups=groups):
        clf = None
        if any(m != "rules" for m in modes):
            exs = [parsed[i].example for i in train_idx if parsed[i].example is not None]
            try:
                clf = from_data(tr.fit(exs).data)
            except ValueError:
                clf = None
        for i in test_idx:
            p = parsed[i]
            for m in modes:
                if p.error is not None:
                    out[m][i] = CaseResult(
                        p.case.id,
                        str(p.case.label.get("engine")),
                        p.case.label.get("cause"),
                        str(p.case.label.get("phase")),
                        f"error: {p.error}",
                        "unknown",
                        0.0,
                        None,
                        False,
                        False,
                        False,
                        None,
                    )
                    continue
                d = diagnose_timeline(
                    p.tl, p.res, rules if m != "classifier" else [], classifier=clf if m != "rules" else None
                )
                out[m][i] = score(p.case, d)
    return out


def summary(results: list[CaseResult]) -> dict:
    n = len(results) or 1
    failed = [r for r in results if r.label_cause is not None]
    fixable = [r for r in results if r.fix_ok is not None]
    return {
        "cases": len(results),
        "cause_accuracy": round(sum(r.cause_ok for r in results) / n, 3),
        "cause_or_secondary": round(sum(r.cause_or_secondary_ok for r in results) / n, 3),
        "phase_accuracy": round(sum(r.phase_ok for r in results) / n, 3),
        "first_fix_agreement": round(sum(bool(r.fix_ok) for r in fixable) / len(fixable), 3) if fixable else None,
        "first_fix_cases": len(fixable),
        "forbidden_suggestions": sum(len(r.forbidden) for r in results),
        "healthy_flagged": sum(r.healthy_flagged for r in results),
        "unknown_rate": round(sum(r.unknown for r in failed) / (len(failed) or 1), 3),
        "wrong_at_conf_0.8": sum(r.wrong_confident for r in results),
    }


def tables(results: list[CaseResult]):
    """(confusion matrix, per-engine breakdown) as pandas DataFrames."""
    import pandas as pd

    df = pd.DataFrame([asdict(r) for r in results])
    if df.empty:
        return df, df
    df["label"] = df["label_cause"].fillna("healthy")
    df["pred"] = df["cause"].fillna("healthy")
    confusion = pd.crosstab(df["label"], df["pred"])
    per_engine = df.groupby("engine").agg(cases=("id", "count"), cause=("cause_ok", "mean"), phase=("phase_ok", "mean"))
    per_engine = per_engine.round(3)
    return confusion, per_engine
