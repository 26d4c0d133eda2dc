"""Krippendorff's alpha for nominal and ordinal answers, with a bootstrap interval over items.

Pure functions (numpy, no Django). A rubric question ("is the answer supported?", "helpful 1-5") is
answered by several validators per item; alpha says how far they agree beyond chance. Formulas from
Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability" (University of Pennsylvania, sections
C and D), in the coincidence-matrix form:

* per item (unit) u with m_u >= 2 answers and n_uc answers of value c, its coincidences
  o_u[c][k] = n_uc (n_uk - [c = k]) / (m_u - 1); items with fewer than two answers pair nothing;
* o = sum_u o_u, n_c = sum_k o[c][k], n = sum_c n_c;
* alpha = 1 - (n - 1) * sum_ck o[c][k] d2(c, k) / sum_ck n_c n_k d2(c, k), with the metric
  - nominal: d2(c, k) = 1 when c != k, else 0;
  - ordinal: d2(c, k) = (sum_{g from c to k} n_g - (n_c + n_k) / 2)^2, the values ranked in the order
    given (a scale's answers in the rubric's order).

1 is perfect agreement, 0 chance, below 0 systematic disagreement. Undefined (None) when fewer than two
answers are pairable or every pairable answer is the same (the expected disagreement is 0).

**Interval: the bootstrap over items** (Efron & Tibshirani 1993, percentile): items are drawn with
replacement, keeping each item's answers together, and alpha computed again. As each item's
coincidences add up, a resample's matrix is ``w . o_u`` for the items' multiplicities w ~
Multinomial(U, 1/U): one matrix product for all resamples. Resamples where alpha is undefined are left
out. (Krippendorff's own bootstrap resamples pairs of answers instead; the interval over items is the one
that says how the figure would vary with other items of the same kind.)

Checked against the ``krippendorff`` package (``tests/core/test_reliability.py``). Krippendorff's
guidance: alpha >= 0.800 to rely on the data, >= 0.667 for tentative conclusions (2004, "Content
Analysis", section 11.3.5).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["LEVELS", "TENTATIVE", "Reliability", "alpha", "reliability"]

#: The levels of measurement this module computes.
LEVELS = ("nominal", "ordinal")

#: Krippendorff's lowest alpha for tentative conclusions; the default floor of a rubric question.
TENTATIVE = 0.667

#: Bootstrap resamples.
SAMPLES = 1000


@dataclass(frozen=True)
class Reliability:
    """Alpha over ``items`` items with at least two answers (``answers`` answers among them), its level,
    and its 95% bootstrap interval (None when alpha is, or when no resample has one)."""

    level: str
    items: int
    answers: int
    alpha: float | None
    interval: tuple[float, float] | None

    def as_dict(self) -> dict:
        """``{level, items, answers, alpha, interval}`` for the API and exports."""
        return {
            "level": self.level,
            "items": self.items,
            "answers": self.answers,
            "alpha": self.alpha,
            "interval": list(self.interval) if self.interval is not None else None,
        }


def _coincidences(units: Sequence[Sequence[Hashable]], order: Sequence[Hashable]) -> np.ndarray:
    """(U x K x K) per pairable item; values not in ``order`` are ignored."""
    index = {value: i for i, value in enumerate(order)}
    k = len(order)
    matrices = []
    for unit in units:
        counts = np.zeros(k)
        for value in unit:
            if value in index:
                counts[index[value]] += 1
        m = counts.sum()
        if m < 2:
            continue
        matrices.append((np.outer(counts, counts) - np.diag(counts)) / (m - 1))
    return np.array(matrices).reshape(len(matrices), k, k)


def _alphas(o: np.ndarray, level: str) -> np.ndarray:
    """Alpha of each coincidence matrix in ``o`` (B x K x K); NaN where undefined."""
    n_c = o.sum(axis=2)  # (B, K)
    n = n_c.sum(axis=1)  # (B,)
    k = o.shape[-1]
    if level == "nominal":
        d2 = np.broadcast_to(1.0 - np.eye(k), o.shape)
    else:
        cum = np.cumsum(n_c, axis=1)  # cum[b, j] = sum_{g <= j} n_g
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cum[:, high] - cum[:, low] + n_c[:, low]  # sum_{g from c to k} n_g, (B, K, K)
        d2 = (between - (n_c[:, :, None] + n_c[:, None, :]) / 2) ** 2
    observed = (o * d2).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * d2).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 1 - (n - 1) * observed / expected
    return np.where((expected > 0) & (n >= 2), out, np.nan)


def alpha(
    units: Sequence[Sequence[Hashable]], level: str = "nominal", order: Sequence[Hashable] = ()
) -> float | None:
    """Krippendorff's alpha of ``units`` (per item, the answers its coders gave; module docstring).

    Args:
        units: per item, its answers (any hashable values).
        level: ``"nominal"`` or ``"ordinal"``.
        order: the values in rank order (required for ordinal; for nominal, the values seen are used
            when empty). Values not in it are ignored.

    Raises:
        ValueError: an unknown level, or ordinal without an order.
    """
    return reliability(units, level, order, samples=0).alpha


def reliability(
    units: Sequence[Sequence[Hashable]],
    level: str = "nominal",
    order: Sequence[Hashable] = (),
    *,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> Reliability:
    """Alpha with its bootstrap interval over items (module docstring); ``samples=0`` for none.

    Raises:
        ValueError: an unknown level, ordinal without an order, or ``confidence`` not in (0, 1).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    if level == "ordinal" and not order:
        raise ValueError("an ordinal alpha needs the values in rank order")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if not order:
        order = sorted({v for unit in units for v in unit}, key=str)
    per_item = _coincidences(units, order)
    items = len(per_item)
    answers = int(round(per_item.sum())) if items else 0
    if not items:
        return Reliability(level, 0, 0, None, None)
    value = float(_alphas(per_item.sum(axis=0)[None], level)[0])
    point = None if np.isnan(value) else value
    interval = None
    if point is not None and samples > 0:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(items, np.full(items, 1.0 / items), size=samples).astype(float)
        k = len(order)
        resampled = (weights @ per_item.reshape(items, k * k)).reshape(samples, k, k)
        values = _alphas(resampled, level)
        values = values[~np.isnan(values)]
        if values.size:
            tail = (1 - confidence) / 2
            low, high = np.quantile(values, [tail, 1 - tail])
            interval = (float(low), float(high))
    return Reliability(level, items, answers, point, interval)
