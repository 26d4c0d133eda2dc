"""Dynascore (Ma et al. 2021, "Dynaboard", NeurIPS; docs/domain.md, "Dynascore"): pure Python, no Django.

Inputs, per model m, scoring dataset d and metric j, a value s_mdj (missing values allowed); dataset
weights w_d >= 0; metric weights ω_j >= 0; the memory ceiling M in GiB. Metrics are named ``perf``
(the task's perf metric, in [0, 1]), ``throughput`` (examples/s), ``memory`` (GiB), ``fairness`` and
``robustness`` (consistencies in [0, 1]); any other name is treated as higher-is-better.

The five steps, exactly as docs/domain.md, "Dynascore":

1. x_mj = Σ_d w̃_d s_mdj, with w̃ the dataset weights normalised to sum 1.
2. Higher is better everywhere: x'_mj = x_mj, except memory: x'_m,memory = M - x_m,memory, and
   the other lower-is-better metrics named in ``ceilings`` (an attack success rate, a cost): C_j - x_mj.
3. Sort the models by x'_perf; over each pair of neighbours (a, b) in that order with
   |perf_b - perf_a| > 1e-4 * max perf, take |x'_bj - x'_aj| / |perf_b - perf_a|.
   AMRS_j is the mean of those ratios; AMRS_perf = 1. (perf is the reference metric r; where perf
   cannot serve, another weighted metric does: "Reference metric" below.)
4. ω̃_j = ω_j / Σ_k ω_k.
5. Dynascore_m = Σ_j ω̃_j x'_mj / AMRS_j.

Decisions (where those steps leave a choice):

* **Reference metric.** Dynaboard measures every metric against perf (step 3). perf stays the
  reference r whenever it can serve: when it counts (ω_perf > 0) and some model has it; or, weighted
  0, when every metric that counts has an AMRS against it and one of them is not zero. Otherwise (a
  board whose models have no perf yet, perf weighted 0 with the other metrics not measurable against
  it) r is, among the counted metrics that at least two models have in full (from every positive-weight
  dataset), the one with the largest weight, then the one most models have, then the first in ``metrics``
  (a counted metric fewer models have only when no such metric exists; one no model has never): AMRS_r = 1, and step 3 runs with r in place of perf (neighbours sorted by x'_r, pairs
  closer than 1e-4 * max |x'_r| or than r's measurement resolution skipped). So a ranking exists on
  whatever metrics are weighted: with r the only metric weighted, Dynascore_m = x'_mr (the metric
  itself, flipped if lower is better), as Dynascore_m = perf_m when perf alone is weighted. Without
  this, a metric whose AMRS against perf is undefined is left out, and with nothing left every model
  scored 0 and shared rank 1 whatever its figures. r is ``DynascoreResult.reference``.
* **Missing scores.** A dataset with weight 0 is ignored, and so is a metric with weight 0: a model
  lacking it is not incomplete (AMRS estimation still needs r from it). If a model lacks a counted
  metric j on some positive-weight dataset, its x_mj is the weighted mean over the datasets it has, with their weights
  renormalised to sum 1 (so x stays on the metric's scale), and the model is flagged **incomplete**
  (``complete=False``, ``missing`` lists the (dataset, metric) pairs). It stays in the result with its
  Dynascore: never silently dropped. If it has metric j on no positive-weight dataset, x_mj is None;
  when such a metric counts in the sum (ω_j > 0 and AMRS_j defined), the model's Dynascore is None
  (unknown, ranked last) rather than a sum with a term quietly treated as 0. A counted metric that no
  model has is left out (``left_out``: "no model has a value"); when no counted metric is left in
  the sum, every Dynascore is None: nothing to rank on.
* **AMRS estimation uses complete values only.** AMRS_j is estimated over the models whose r (perf)
  and metric j were both computed from every positive-weight dataset (a value averaged over fewer
  datasets is not comparable with the others). A model incomplete for fairness still counts for
  throughput if it has throughput and perf everywhere.
* **Ties in perf** are kept in input order (a stable sort on perf rounded to 9 decimals, so that
  float noise in the weighted means does not reorder exact ties), so pass models in a fixed order
  (the leaderboard passes them by id). Pairs of neighbours closer than 1e-4 * max perf are skipped, as
  step 3 says; which member of a tie neighbours the next model therefore follows input order.
* **Measurement resolution (noise guard).** Throughput and memory are measurements with noise, not
  exact counts: three models of one architecture differ in memory by a few MiB that come from the
  allocator, not the model. Such a difference over a small Δperf gives an AMRS close to 0, so
  x'/AMRS explodes and one noisy metric dominates the sum (the demo reached a Dynascore of about 474,
  almost all of it memory). So in step 3 a neighbour pair's |Δx_j| smaller than metric j's
  resolution counts as 0 (``RESOLUTIONS``): **memory 0.01 GiB** (absolute: the precision the
  leaderboard shows, about 10 MiB, well above the page-level noise of resident memory); **throughput
  the larger of 5% of the larger of the two values and the two models' measured spreads** (below);
  perf, fairness and robustness are exact (computed from predictions, resolution 0).
  A metric whose ratios are then all 0 has AMRS 0, so it is left out (below) and named on the page,
  instead of a noise-driven term. Only the AMRS estimation is guarded: x and x' keep the measured
  values.

  *Measured spread (throughput).* A Score's throughput is the median of several timed passes
  (``leaderboards.evaluation``) and ``Score.metrics["throughput_spread"]`` is their relative range
  r_md = (max - min) / median of the passes' examples/s. A metric whose ``Resolution`` is
  ``measured`` takes these spreads (``compute_dynascore(spreads=...)``, read by
  ``measured_spreads``). Model m's spread of metric j is aggregated like x (step 1, same weights,
  renormalised over the datasets it has): u_mj = Σ_d w̃_d r_mdj s_mdj / Σ_d w̃_d, in the metric's
  unit (examples/s). This is linear error propagation with fully correlated errors (machine load
  slows every dataset's passes alike), the conservative bound on the error of a weighted mean. A
  Score without a spread (evaluated before spreads were stored, or with one pass) counts with
  r_md = the fixed relative resolution (5%), so on old Scores the guard is exactly the fixed 5% one.
  A neighbour pair (a, b) counts as different only when |Δx_j| >= max(absolute, relative *
  max(|x_a|, |x_b|), u_a, u_b): the fixed resolution is a floor, and a pair whose difference is
  within either model's range of passes is noise. Why the larger spread: identical models timed
  under the same load draw their passes from one distribution, so each one's median usually lies
  within the other's range of passes and their difference is below the larger range; a difference
  within it is one these measurements cannot tell from noise. Why the floor stays: with 5 passes the
  range can be small by chance, and the load can change between two evaluations (minutes apart) in
  a way that no single model's passes see.
* **Metrics left out.** A metric whose AMRS is undefined (fewer than two eligible models with
  distinct r) or zero (all eligible models have the same value, up to its resolution) is left out
  of the sum and reported in ``left_out`` with the reason. The remaining weights are not renormalised: ω̃ is
  normalised over all metrics in step 4, and a left-out term is simply absent (the ranking is the same
  either way; the numbers stay comparable between views that differ only in which metrics are left out).
* **Ranks**: by Dynascore, highest first, equal scores (to a relative 1e-9) share a rank (1, 2, 2, 4); models whose
  Dynascore is None have rank None and come last.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

PERF = "perf"
MEMORY = "memory"
DEFAULT_METRICS = ("perf", "throughput", "memory", "fairness", "robustness")
DEFAULT_METRIC_WEIGHTS = {"perf": 4.0, "throughput": 1.0, "memory": 1.0, "fairness": 1.0, "robustness": 1.0}
DEFAULT_MEMORY_CEILING_GIB = 16.0
TIE_TOLERANCE = 1e-4  # neighbours with |Δperf| <= TIE_TOLERANCE * max perf are skipped (step 3)
SORT_DECIMALS = 9  # perf is compared to 9 decimals when sorting, so float noise does not reorder ties

Scores = Mapping[Hashable, Mapping[Hashable, Mapping[str, float | None]]]


@dataclass(frozen=True)
class Resolution:
    """The smallest difference a metric's measurement can tell apart (module docstring, noise guard).

    Attributes:
        absolute: in the metric's unit (memory: GiB).
        relative: a fraction of the larger of the two values compared (throughput: 0.05 is 5%).
        measured: the models' measured spreads widen it (module docstring, "Measured spread"): a
            Score's relative spread is ``Score.metrics[metric + SPREAD_SUFFIX]``; one without it counts
            with ``relative``.
    """

    absolute: float = 0.0
    relative: float = 0.0
    measured: bool = False

    def threshold(self, a: float, b: float, spread_a: float = 0.0, spread_b: float = 0.0) -> float:
        """Differences between ``a`` and ``b`` smaller than this are noise.

        ``spread_a`` and ``spread_b`` are the two models' aggregated spreads u in the metric's unit
        (0 for a metric that is not ``measured``): max(absolute, relative * max(|a|, |b|), u_a, u_b).
        """
        return max(self.absolute, self.relative * max(abs(a), abs(b)), spread_a, spread_b)

    def describe(self, metric: str) -> str:
        """E.g. ``0.01 GiB``, ``5% of the value``, or for a measured metric ``the larger of 5% of the
        value and the measured spread``."""
        parts = []
        if self.absolute:
            parts.append(f"{self.absolute:g}" + (" GiB" if metric == MEMORY else ""))
        if self.relative:
            parts.append(f"{self.relative:.0%} of the value")
        text = " or ".join(parts) or "exact"
        return f"the larger of {text} and the measured spread" if self.measured else text


#: Measurement resolution per metric; metrics not listed are exact. Reasons in the module docstring.
RESOLUTIONS: dict[str, Resolution] = {
    MEMORY: Resolution(absolute=0.01),
    "throughput": Resolution(relative=0.05, measured=True),
}
# Float noise in a difference must not push a value equal to the resolution below it.
RESOLUTION_SLACK = 1e-9
#: ``Score.metrics[metric + SPREAD_SUFFIX]`` holds the relative spread of a measured metric.
SPREAD_SUFFIX = "_spread"

Spreads = Mapping[Hashable, Mapping[Hashable, Mapping[str, float | None]]]


def measured_spreads(
    metrics: Mapping | None, resolutions: Mapping[str, Resolution] | None = None
) -> dict[str, float]:
    """``{metric: relative spread}`` of one ``Score.metrics`` dict, for each metric whose resolution is
    ``measured`` (default ``RESOLUTIONS``: throughput) and that has a spread ``metric + SPREAD_SUFFIX``
    that is a finite number >= 0 (a fraction: 0.03 is 3%). Metrics without one are absent, so the
    Dynascore counts them with the fixed relative resolution."""
    resolutions = RESOLUTIONS if resolutions is None else resolutions
    metrics = metrics if isinstance(metrics, Mapping) else {}
    out = {}
    for j, resolution in resolutions.items():
        value = metrics.get(j + SPREAD_SUFFIX)
        if resolution.measured and _is_spread(value):
            out[j] = float(value)
    return out


def _is_spread(value) -> bool:
    return (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
    )


class DynascoreError(ValueError):
    """Weights that cannot be normalised (negative, not finite, or all zero); the message says which."""


@dataclass(frozen=True)
class ModelResult:
    """One model's figures.

    Attributes:
        key: the model key given in the input.
        x: x'_mj per metric (step 2: higher is better, memory already M - x), None when unknown.
        raw: x_mj per metric (step 1, in the metric's own unit: memory in GiB, throughput in examples/s).
        dynascore: step 5, or None when a metric that counts has no value for this model.
        complete: True when every positive-weight metric is present on every positive-weight dataset.
        missing: the (dataset, metric) pairs that were missing (positive weights only).
        rank: 1 for the best Dynascore; equal scores share a rank; None when dynascore is None.
        spread: u_mj per ``measured`` metric (module docstring, "Measured spread"), in the metric's
            unit, None when x_mj is None; what the noise guard compares.
    """

    key: Hashable
    x: dict[str, float | None]
    raw: dict[str, float | None]
    dynascore: float | None
    complete: bool
    missing: tuple[tuple[Hashable, str], ...]
    rank: int | None = None
    spread: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class DynascoreResult:
    """The outcome of ``compute_dynascore``.

    Attributes:
        models: one ``ModelResult`` per input model, best rank first (unknown Dynascores last, input order).
        amrs: AMRS_j per metric (perf: 1.0); None when undefined.
        left_out: metric -> reason, for the metrics left out of the sum (AMRS undefined or zero).
        metric_weights: ω̃_j (normalised, step 4).
        dataset_weights: w̃_d (normalised, step 1).
        pairs_used: per metric, how many neighbour pairs the AMRS averaged.
        reference: the metric the AMRS are measured against (module docstring, "Reference metric"):
            perf, or the weighted metric that stands in for it.
    """

    models: list[ModelResult]
    amrs: dict[str, float | None]
    left_out: dict[str, str]
    metric_weights: dict[str, float]
    dataset_weights: dict[Hashable, float]
    pairs_used: dict[str, int] = field(default_factory=dict)
    reference: str = PERF

    def by_key(self) -> dict[Hashable, ModelResult]:
        """The model results keyed by model key."""
        return {m.key: m for m in self.models}


def normalise_weights(weights: Mapping[Hashable, float], what: str = "weights") -> dict[Hashable, float]:
    """Weights divided by their sum (steps 1 and 4).

    Raises:
        DynascoreError: a weight is negative or not a finite number, or all weights are zero.
    """
    for key, value in weights.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise DynascoreError(f"{what}: {key!r} is not a finite number")
        if value < 0:
            raise DynascoreError(f"{what}: {key!r} is negative")
    total = float(sum(weights.values()))
    if total <= 0:
        raise DynascoreError(f"{what}: all weights are zero")
    return {key: value / total for key, value in weights.items()}


def compute_dynascore(
    scores: Scores,
    *,
    dataset_weights: Mapping[Hashable, float],
    metric_weights: Mapping[str, float] | None = None,
    memory_ceiling: float = DEFAULT_MEMORY_CEILING_GIB,
    metrics: Sequence[str] | None = None,
    resolutions: Mapping[str, Resolution] | None = None,
    spreads: Spreads | None = None,
    ceilings: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
) -> DynascoreResult:
    """Compute x, x', AMRS and the Dynascore of every model (module docstring: formula and decisions).

    Args:
        scores: ``{model_key: {dataset_key: {metric: value or None}}}``; a dataset or metric absent
            from a model's mapping (or None) is missing. perf in [0, 1], throughput in examples/s,
            memory in GiB. Models are taken in the mapping's order (ties in perf keep it).
        dataset_weights: ``{dataset_key: w_d >= 0}``; only these datasets are used (others ignored).
        metric_weights: ``{metric: ω_j >= 0}``; default ``DEFAULT_METRIC_WEIGHTS``. A metric absent
            from ``metric_weights`` but listed in ``metrics`` has weight 0.
        memory_ceiling: M in GiB (step 2).
        metrics: metric names to compute (default: the keys of ``metric_weights``); must include perf.
        resolutions: measurement resolution per metric (default ``RESOLUTIONS``; a metric absent is
            exact): neighbour differences below it count as 0 when the AMRS is estimated.
        spreads: ``{model_key: {dataset_key: {metric: relative spread}}}`` for the ``measured``
            metrics (``measured_spreads`` of each Score's metrics); absent, None or not a finite number
            >= 0: the metric's fixed ``relative`` resolution stands in (module docstring).
        ceilings: ``{metric: C_j}`` for other lower-is-better metrics (an attack success rate, seconds to
            the first token, a cost): step 2 flips them as memory is flipped, x'_mj = C_j - x_mj. Memory's
            ceiling is ``memory_ceiling``. Only differences of x' enter the AMRS, so C_j shifts every
            model's Dynascore by the same ω̃_j C_j / AMRS_j and leaves the ranking unchanged.
        labels: ``{metric: label}`` the ``left_out`` reasons name metrics by (default: their names).

    Returns:
        A ``DynascoreResult``.

    Raises:
        DynascoreError: bad weights (see ``normalise_weights``), or ``perf`` not among the metrics.
    """
    metric_weights = dict(DEFAULT_METRIC_WEIGHTS if metric_weights is None else metric_weights)
    flips = {**(ceilings or {}), MEMORY: memory_ceiling}
    resolutions = RESOLUTIONS if resolutions is None else resolutions
    metrics = list(metrics if metrics is not None else metric_weights)
    if PERF not in metrics:
        raise DynascoreError("metrics: perf is required (models are sorted by it)")
    for j in metrics:
        metric_weights.setdefault(j, 0.0)
    omega = normalise_weights({j: metric_weights[j] for j in metrics}, "metric weights")
    w = normalise_weights(dataset_weights, "dataset weights")
    datasets = [d for d, weight in w.items() if weight > 0]
    counted = [j for j in metrics if omega[j] > 0]
    measured = [j for j in metrics if j in resolutions and resolutions[j].measured]
    spreads = {} if spreads is None else spreads

    # Step 1 and 2: x and x' per model, with completeness per metric.
    raw: dict[Hashable, dict[str, float | None]] = {}
    flipped: dict[Hashable, dict[str, float | None]] = {}
    full: dict[Hashable, dict[str, bool]] = {}
    missing: dict[Hashable, list[tuple[Hashable, str]]] = {}
    spread: dict[Hashable, dict[str, float | None]] = {}
    for m, per_dataset in scores.items():
        raw_m: dict[str, float | None] = {}
        full_m: dict[str, bool] = {}
        missing_m: list[tuple[Hashable, str]] = []
        spread_m: dict[str, float | None] = {}
        spreads_m = spreads.get(m) or {}
        for j in metrics:
            total = weight_sum = spread_total = 0.0
            for d in datasets:
                value = (per_dataset.get(d) or {}).get(j)
                if value is None:
                    if j in counted:  # a metric weighted 0 is not missed
                        missing_m.append((d, j))
                    continue
                total += w[d] * value
                weight_sum += w[d]
                if j in measured:
                    r = (spreads_m.get(d) or {}).get(j)
                    r = r if _is_spread(r) else resolutions[j].relative
                    spread_total += w[d] * (r * value)
            have_all = weight_sum > 0 and all((per_dataset.get(d) or {}).get(j) is not None for d in datasets)
            raw_m[j] = total / weight_sum if weight_sum > 0 else None
            full_m[j] = have_all
            if j in measured:
                spread_m[j] = abs(spread_total / weight_sum) if weight_sum > 0 else None
        raw[m] = raw_m
        spread[m] = spread_m
        full[m] = full_m
        missing[m] = missing_m
        flipped[m] = {
            j: (None if v is None else (flips[j] - v if j in flips else v)) for j, v in raw_m.items()
        }

    # Step 3: AMRS per metric against the reference metric (perf when it can serve; module docstring,
    # "Reference metric"), over the models complete for the reference and that metric.
    name = (lambda j: labels.get(j, j)) if labels else (lambda j: j)

    def amrs_against(ref: str) -> tuple[dict[str, float | None], dict[str, str], dict[str, int]]:
        amrs: dict[str, float | None] = {ref: 1.0}
        left_out: dict[str, str] = {}
        pairs_used: dict[str, int] = {}
        ref_resolution = resolutions.get(ref)
        for j in metrics:
            if j == ref:
                continue
            eligible = [m for m in flipped if full[m][ref] and full[m][j]]
            # Stable sort on the reference rounded to SORT_DECIMALS: exact ties keep input order even when
            # the weighted means differ in the last bit (0.75 as 0.7500000000000001 and 0.7499999999999999).
            eligible.sort(key=lambda m: round(flipped[m][ref], SORT_DECIMALS))
            if len(eligible) < 2:
                amrs[j] = None
                left_out[j] = (
                    f"AMRS undefined: {len(eligible)} model{'' if len(eligible) == 1 else 's'} with complete {name(ref)} and {name(j)} values"
                )
                pairs_used[j] = 0
                continue
            threshold = TIE_TOLERANCE * max(abs(flipped[m][ref]) for m in eligible)
            resolution = resolutions.get(j)
            ratios = []
            below_resolution = 0
            for a, b in zip(eligible, eligible[1:], strict=False):
                d_ref = abs(flipped[b][ref] - flipped[a][ref])
                if d_ref <= threshold or (
                    ref_resolution is not None
                    and d_ref
                    < ref_resolution.threshold(
                        raw[a][ref], raw[b][ref], spread[a].get(ref) or 0.0, spread[b].get(ref) or 0.0
                    )
                    * (1 - RESOLUTION_SLACK)
                ):
                    continue  # neighbours the reference cannot tell apart: no rate of substitution
                d_j = abs(flipped[b][j] - flipped[a][j])
                u_a, u_b = spread[a].get(j) or 0.0, spread[b].get(j) or 0.0
                if resolution is not None and 0 < d_j < resolution.threshold(
                    raw[a][j], raw[b][j], u_a, u_b
                ) * (1 - RESOLUTION_SLACK):
                    d_j = 0.0  # noise: below what the measurement can tell apart
                    below_resolution += 1
                ratios.append(d_j / d_ref)
            pairs_used[j] = len(ratios)
            if not ratios:
                amrs[j] = None
                left_out[j] = f"AMRS undefined: fewer than two models with distinct {name(ref)}"
            else:
                amrs[j] = sum(ratios) / len(ratios)
                if amrs[j] == 0 and below_resolution:
                    left_out[j] = (
                        f"AMRS is zero: every difference in {name(j)} between neighbours is below its "
                        f"measurement resolution ({resolution.describe(j)})"
                    )
                elif amrs[j] == 0:
                    left_out[j] = f"AMRS is zero: every model has the same {name(j)}"
        return amrs, left_out, pairs_used

    present = {j for j in metrics if any(raw[m][j] is not None for m in raw)}
    reference = PERF
    amrs, left_out, pairs_used = amrs_against(PERF)
    perf_serves = (
        PERF in present
        if PERF in counted
        else (all(amrs.get(j) is not None for j in counted) and any(j not in left_out for j in counted))
    )
    # The stand-in reference: among the counted metrics at least two models have in full (every other
    # metric's AMRS is estimated over the models complete for both), the heaviest, then the one most
    # models have, then the first; a metric fewer have only when none is had by two.
    complete_count = {j: sum(1 for m in flipped if full[m][j]) for j in metrics}
    candidates = sorted(
        (j for j in counted if j in present),
        key=lambda j: (complete_count[j] < 2, -omega[j], -complete_count[j], metrics.index(j)),
    )
    if not perf_serves and candidates:
        reference = candidates[0]
        amrs, left_out, pairs_used = amrs_against(reference)
    for j in counted:
        if j not in present:
            amrs[j] = None
            left_out[j] = "no model has a value"

    # Step 5: Dynascore; steps 4 (ω̃) done above. With no weighted metric left in the sum there is
    # nothing to rank on: every Dynascore is unknown (None), never a shared 0.
    in_sum = [j for j in counted if j not in left_out]
    results = []
    for m in flipped:
        x = flipped[m]
        if not in_sum or any(x[j] is None for j in in_sum):
            score = None
        else:
            score = sum(omega[j] * x[j] / amrs[j] for j in in_sum)
        results.append(
            ModelResult(
                key=m,
                x=dict(x),
                raw=dict(raw[m]),
                dynascore=score,
                complete=not missing[m],
                missing=tuple(missing[m]),
                spread=dict(spread[m]),
            )
        )

    ranked = sorted((r for r in results if r.dynascore is not None), key=lambda r: r.dynascore, reverse=True)
    final: list[ModelResult] = []
    previous, rank = None, 0
    for position, r in enumerate(ranked, start=1):
        # Equal up to float noise (relative 1e-9) shares a rank.
        if previous is None or not math.isclose(r.dynascore, previous, rel_tol=1e-9, abs_tol=1e-12):
            rank, previous = position, r.dynascore
        final.append(_with_rank(r, rank))
    final.extend(r for r in results if r.dynascore is None)
    return DynascoreResult(
        models=final,
        amrs=amrs,
        left_out=left_out,
        metric_weights=omega,
        dataset_weights=w,
        pairs_used=pairs_used,
        reference=reference,
    )


def _with_rank(result: ModelResult, rank: int) -> ModelResult:
    return ModelResult(
        key=result.key,
        x=result.x,
        raw=result.raw,
        dynascore=result.dynascore,
        complete=result.complete,
        missing=result.missing,
        rank=rank,
        spread=result.spread,
    )
