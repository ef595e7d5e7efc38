"""A sweep's parent run as its summary in MLflow's runs table: per point, the seed mean of each headline
accuracy and its 95% t interval's ends (`<point>/test_acc`, `<point>/test_acc/ci95_low`), so two sweeps'
rows compare point by point; per claim a tag `claim.<id>` holding its verdict, a column across sweeps.
The sweep's params are set when it opens (`sweeps.storage`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scipy import stats

from analysis.findings import Finding
from analysis.sweep import FINISHED
from arith.tracking.schema import (
    CI_HIGH_SUFFIX,
    CI_LOW_SUFFIX,
    CLAIM_TAG_PREFIX,
    HEADLINE_METRICS,
    POINT_TAG,
    RUN_ID_COLUMN,
    point_label,
)
from experiments.claim import Claim
from experiments.intervals import ALPHA
from experiments.registry import claims_for

#: the parent run's tag that lists every claim's verdict in one column: `<claim id>: <verdict>; ...`
VERDICTS_TAG = "verdicts"


def seed_mean(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, 95% low, 95% high) of one point's per-seed accuracies, clipped to [0, 1]; NaN ends for one."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n)
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def point_metrics(trials: Iterable[tuple[str, Mapping[str, float]]]) -> dict[str, float]:
    """The parent run's metrics from its finished trials' (point, last metrics)."""
    by_point: dict[str, dict[str, list[float]]] = {}
    for point, metrics in trials:
        per_metric = by_point.setdefault(point_label(point), {})
        for name in HEADLINE_METRICS:
            if name in metrics and not math.isnan(metrics[name]):
                per_metric.setdefault(name, []).append(float(metrics[name]))
    out: dict[str, float] = {}
    for label, per_metric in sorted(by_point.items()):
        for name, values in per_metric.items():
            mean, low, high = seed_mean(values)
            out[f"{label}/{name}"] = mean
            if not math.isnan(low):
                out[f"{label}/{name}/{CI_LOW_SUFFIX}"] = low
                out[f"{label}/{name}/{CI_HIGH_SUFFIX}"] = high
    return out


def claim_id(claim: Claim) -> str:
    """The claim's id; for a claim declared without one (a plugin's), its text's first words."""
    return claim.id or re.sub(r"[^a-z0-9]+", "_", claim.text.lower())[:60].strip("_")


def claim_ids(findings: Sequence[Finding], claims: Sequence[Claim]) -> list[str]:
    """Each finding's claim id (a finding names its claim as `text [source]`)."""
    by_name = {f"{c.text} [{c.source}]": claim_id(c) for c in claims}
    return [by_name.get(f.claim) or re.sub(r"[^a-z0-9]+", "_", f.claim_text.lower())[:60] for f in findings]


def claim_tags(findings: Sequence[Finding], claims: Sequence[Claim]) -> dict[str, str]:
    """One tag a claim, `claim.<id>` = its verdict, and `verdicts`, every claim's in one column."""
    ids = claim_ids(findings, claims)
    tags = {f"{CLAIM_TAG_PREFIX}{cid}": f.status for cid, f in zip(ids, findings, strict=True)}
    if findings:
        tags[VERDICTS_TAG] = "; ".join(f"{cid}: {f.status}" for cid, f in zip(ids, findings, strict=True))
    return tags


def log_summary(client: Any, analysis: Any) -> None:
    """Log the summary of an `analysis.report.Analysis` on its (first) parent run."""
    sweep = analysis.sweep
    finished = sweep.trials[sweep.trials["status"] == FINISHED]
    trials = [
        (point, client.get_run(run_id).data.metrics)
        for run_id, point in zip(finished[RUN_ID_COLUMN], finished[POINT_TAG], strict=True)
    ]
    parent = sweep.parent_run_id
    for key, value in point_metrics(trials).items():
        client.log_metric(parent, key, value)
    for key, value in claim_tags(analysis.findings, claims_for(sweep.grid, sweep.variant_of)).items():
        client.set_tag(parent, key, value)
