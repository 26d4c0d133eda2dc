"""A judge's failure rate corrected for the judge's own errors: sensitivity, specificity and the
Rogan-Gladen estimator, with a bootstrap interval that carries the uncertainty of both.

Pure functions (numpy, no Django). A judge model that reads outputs and says "failed" or not makes two
kinds of error: it misses failures (sensitivity below 1) and it flags good answers (specificity below 1).
Its raw failure rate p on outputs people never judged is then biased: E[p] = Se * r + (1 - Sp) * (1 - r)
for the true rate r. Solving for r gives the Rogan-Gladen estimator (Rogan & Gladen 1978, "Estimating
prevalence from the results of a screening test", American Journal of Epidemiology 107(1)):

    r = (p + Sp - 1) / (Se + Sp - 1), clipped to [0, 1],

defined only when Se + Sp > 1 (a judge better than chance). Se and Sp are measured on the validation
items: outputs both the judge and people judged, people's settled verdict taken as the truth:

* Se = judged failed among the items people settled as failed, a / (a + b);
* Sp = judged not failed among the items people settled as not failed, d / (c + d);

with a, b, c, d the 2 x 2 table's cells (judge failed / not) x (people failed / not): a both failed, b
only people, c only the judge, d neither. Each comes with its Wilson 95% interval.

**Interval** (percentile bootstrap over both sources of error, as Lang & Reiczigel 2014, "Confidence
limits for prevalence of disease adjusted for estimated sensitivity and specificity", Preventive
Veterinary Medicine 113(1), argue it must): each resample draws the validation items with replacement
(their 2 x 2 cells ~ Multinomial(m, cells / m)) and, independently, the judged outputs (their failures ~
Binomial(n, p)), and recomputes r. Resamples where Se + Sp <= 1 (or a class of the validation items was
not drawn) have no estimate: left out, and counted in ``CorrectedRate.undefined_share``. garak applies
the same correction with fixed detector error rates and no interval (its issue #2117).

**Refused**, with the reason: fewer than ``MIN_ITEMS`` (20) validation items, none that people settled as
failed or none as not failed (Se or Sp undefined), Se + Sp <= 1, or no judged output to correct.

Coverage simulated in ``benchmarks/rogan_gladen_coverage.py`` (figures in docs/generative.md, "Judges
corrected for their errors").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .intervals import wilson_interval

__all__ = ["MIN_ITEMS", "CorrectedRate", "JudgeErrors", "corrected_rate", "judge_errors"]

#: The fewest validation items (outputs people and the judge both judged) for a correction.
MIN_ITEMS = 20

#: Bootstrap resamples.
SAMPLES = 2000


@dataclass(frozen=True)
class JudgeErrors:
    """A judge against people's settled verdicts on ``n`` validation items: ``cells`` (a, b, c, d) as in
    the module docstring, ``sensitivity`` and ``specificity`` in [0, 1] (None when their class is
    empty) with their Wilson 95% intervals."""

    n: int
    cells: tuple[int, int, int, int]
    sensitivity: float | None
    sensitivity_interval: tuple[float, float] | None
    specificity: float | None
    specificity_interval: tuple[float, float] | None

    def as_dict(self) -> dict:
        """``{n, sensitivity, sensitivity_interval, specificity, specificity_interval, failed_by_people,
        not_failed_by_people}`` for the API."""
        a, b, c, d = self.cells
        return {
            "n": self.n,
            "sensitivity": self.sensitivity,
            "sensitivity_interval": list(self.sensitivity_interval) if self.sensitivity_interval else None,
            "specificity": self.specificity,
            "specificity_interval": list(self.specificity_interval) if self.specificity_interval else None,
            "failed_by_people": a + b,
            "not_failed_by_people": c + d,
        }


@dataclass(frozen=True)
class CorrectedRate:
    """The judge's raw failure rate ``observed`` on ``outputs`` outputs people never judged, and the
    Rogan-Gladen ``corrected`` rate in [0, 1] with its 95% ``interval``; both None with ``refused`` saying
    why. ``errors`` the judge's sensitivity and specificity; ``undefined_share`` the share of bootstrap
    resamples without an estimate (Se + Sp <= 1 drawn)."""

    observed: float | None
    outputs: int
    corrected: float | None
    interval: tuple[float, float] | None
    errors: JudgeErrors
    refused: str | None = None
    undefined_share: float = 0.0

    def as_dict(self) -> dict:
        """The JSON form the API gives."""
        return {
            "observed": self.observed,
            "outputs": self.outputs,
            "corrected": self.corrected,
            "interval": list(self.interval) if self.interval else None,
            "refused": self.refused,
            "undefined_share": self.undefined_share,
            "errors": self.errors.as_dict(),
        }


def judge_errors(judge_failed: Sequence[bool], human_failed: Sequence[bool]) -> JudgeErrors:
    """Sensitivity and specificity of a judge against people's settled verdicts (module docstring).

    Args:
        judge_failed, human_failed: parallel, one pair per validation item.

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(judge_failed) != len(human_failed):
        raise ValueError(f"{len(judge_failed)} judge verdicts but {len(human_failed)} people's verdicts")
    a = b = c = d = 0
    for judge, human in zip(judge_failed, human_failed, strict=True):
        if human:
            a, b = (a + 1, b) if judge else (a, b + 1)
        else:
            c, d = (c + 1, d) if judge else (c, d + 1)
    se = a / (a + b) if a + b else None
    sp = d / (c + d) if c + d else None
    return JudgeErrors(
        n=a + b + c + d,
        cells=(a, b, c, d),
        sensitivity=se,
        sensitivity_interval=wilson_interval(a, a + b) if a + b else None,
        specificity=sp,
        specificity_interval=wilson_interval(d, c + d) if c + d else None,
    )


def _estimate(p, se, sp):
    """Rogan-Gladen, element-wise, clipped to [0, 1]; NaN where Se + Sp <= 1 or Se, Sp undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = se + sp - 1
        out = np.clip((p + sp - 1) / denominator, 0.0, 1.0)
    return np.where(denominator > 0, out, np.nan)


def corrected_rate(
    judge_failed: Sequence[bool],
    human_failed: Sequence[bool],
    outputs_failed: Sequence[bool],
    *,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    min_items: int = MIN_ITEMS,
) -> CorrectedRate:
    """The judge-corrected failure rate of the outputs people never judged (module docstring).

    Args:
        judge_failed, human_failed: the validation items, parallel (the judge's and people's verdicts).
        outputs_failed: the judge's verdict on each output people never judged.
        samples: bootstrap resamples; confidence: in (0, 1); seed: the generator's seed.
        min_items: the fewest validation items for a correction.

    Raises:
        ValueError: the validation sequences differ in length, or ``confidence`` is not in (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    errors = judge_errors(judge_failed, human_failed)
    n = len(outputs_failed)
    observed = sum(bool(x) for x in outputs_failed) / n if n else None

    def refuse(reason: str) -> CorrectedRate:
        return CorrectedRate(observed, n, None, None, errors, reason)

    if errors.n < min_items:
        return refuse(f"fewer than {min_items} outputs judged by both people and the judge ({errors.n})")
    if errors.sensitivity is None or errors.specificity is None:
        missing = "failed" if errors.sensitivity is None else "not failed"
        return refuse(f"people settled no output as {missing}: the judge's errors on those are unknown")
    if errors.sensitivity + errors.specificity <= 1:
        return refuse(
            f"the judge is no better than chance: sensitivity {errors.sensitivity:.2f} + specificity "
            f"{errors.specificity:.2f} <= 1"
        )
    if not n:
        return refuse("no output left that people did not judge")
    corrected = float(_estimate(np.float64(observed), errors.sensitivity, errors.specificity))
    rng = np.random.default_rng(seed)
    cells = np.array(errors.cells, dtype=float)
    drawn = rng.multinomial(errors.n, cells / errors.n, size=samples)
    a, b, c, d = (drawn[:, i] for i in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(a + b > 0, a / (a + b), np.nan)
        sp = np.where(c + d > 0, d / (c + d), np.nan)
    p = rng.binomial(n, observed, size=samples) / n
    estimates = _estimate(p, se, sp)
    defined = estimates[~np.isnan(estimates)]
    tail = (1 - confidence) / 2
    interval = None
    if defined.size:
        low, high = np.quantile(defined, [tail, 1 - tail])
        interval = (float(low), float(high))
    return CorrectedRate(
        observed,
        n,
        corrected,
        interval,
        errors,
        None,
        undefined_share=1 - defined.size / samples,
    )
