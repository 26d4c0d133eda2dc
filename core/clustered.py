"""Rates measured over people's work, with intervals that respect who did the work: the cluster
bootstrap over people, and the effective sample size.

Pure functions (numpy, no Django). A red-teaming round's attack success rate is verified failures over
conversations, but the conversations are not independent draws: a few people write most of them, and one
person's attacks succeed or fail together (their skill, their favourite trick). An interval that treats
the conversations as independent (Wilson's over n conversations) is then too narrow. Here the people are
the independent units (docs/generative.md, "Intervals across people").

Input: per person i (m people), a numerator ``y_i`` and a denominator ``n_i`` (for an attack success
rate: their verified failures and their conversations judged). The rate is the ratio of sums
``R = sum y_i / sum n_i`` (every conversation weighs the same, as in the plain rate).

* **Interval: the studentized cluster bootstrap** (bootstrap-t; Davison & Hinkley 1997, "Bootstrap
  Methods and their Application", sections 3.8 and 5.2: resample the first stage of a two-stage sample,
  the people, and studentize; Cameron, Gelbach & Miller 2008, "Bootstrap-based improvements for
  inference with clustered errors", Review of Economics and Statistics 90(3), who find the studentized
  form needed with few clusters). Draw m people with replacement, keeping each person's conversations
  together; on each resample b compute the ratio R_b and its linearised standard error s_b (below), and
  t_b = (R_b - R) / s_b. The interval is ``[R - t_(97.5%) s, R - t_(2.5%) s]`` for 95%, with s the
  standard error of the data itself, clipped to [0, 1] for a proportion. Drawing m people with
  replacement gives each person a multiplicity ``w ~ Multinomial(m, 1/m)``, so resample b's sums are
  ``w . y`` and ``w . n`` (``Generator.multinomial``); one draw is shared by every row of a breakdown,
  so that the rows of one table come from the same resampled people. The plain percentile interval of
  R_b under-covers with few people (86% for 10 people and 90% for 30 in the simulation of
  docs/generative.md, against 91% and 94% for this one).
* Resamples without a t value are left out: a resample with no denominator (none of the people drawn
  has a conversation of that many turns), or whose people all have the same rate (s_b = 0). For a ratio
  that is not a proportion (cost per verified failure), more than 2.5% of resamples with a numerator but
  no denominator (no failure drawn) make the upper end infinite.
* **Sparse rows.** When fewer than ``MIN_PEOPLE`` people have a success (or fewer than that many have a
  failure), e.g. a kind of failure that one person found once, most resamples leave them out, have no t
  value and are dropped, and the remaining t values all lie on one side: the bootstrap-t interval
  collapses onto the rate (1 of 30 gave [0%, 3.8%], found by a tester). Such a row gets Wilson's score
  interval on the effective sample size instead (``WILSON_EFFECTIVE``; Korn & Graubard 1998, "Confidence
  intervals for proportions with small expected number of positive counts estimated from survey data",
  Survey Methodology 24(2), use the effective sample size in an exact binomial interval the same way).
* When the data's own standard error is 0 (no failure at all, every attempt a failure, or every person
  with the same rate) the bootstrap shows no spread although the rate is uncertain. The interval is then
  Wilson's score interval with the number of people as its n (``core.intervals.wilson_interval``):
  each person one observation, the widest that the clustering can make it. With fewer than
  ``MIN_PEOPLE`` (5) people there is no interval at all.
* **Effective sample size** (Kish 1965, "Survey Sampling", section 8.2: n / design effect): the number of
  independent conversations that would give the rate the same variance, ``n_eff = R(1 - R) / V`` where
  V is the linearised (sandwich) variance of the ratio over people,
  ``V = m / (m - 1) * sum_i (y_i - R n_i)^2 / (sum n_i)^2``, the cluster-robust variance of a mean
  (as statsmodels' OLS with ``cov_type="cluster"`` gives for an intercept-only fit; checked in the
  tests). It is capped at n (people more alike than coin flips cannot make data worth more than it
  has) and is n when V = 0 or R is 0 or 1. The standard error above is ``sqrt(V)`` without the
  ``m / (m - 1)`` factor, which cancels in the bootstrap-t interval.

Coverage is simulated in ``benchmarks/clustered_rate_coverage.py`` (figures in docs/generative.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .intervals import Z_95, wilson_interval, wilson_share

__all__ = [
    "MIN_PEOPLE",
    "ClusteredRate",
    "PeopleResample",
    "clustered_ratio_interval",
    "clustered_rates",
    "effective_sample_size",
]

#: Fewer people than this: no interval. One person's conversations say nothing of how people differ,
#: and with 2 to 4 the resamples are too few kinds of crowd for a bootstrap (with 2, every resample that
#: mixes them has the same t).
MIN_PEOPLE = 5

#: ``ClusteredRate.method``: the studentized cluster bootstrap, or Wilson's interval over people when
#: people do not differ at all (module docstring).
BOOTSTRAP = "cluster bootstrap-t"
WILSON_PEOPLE = "Wilson over people"
WILSON_EFFECTIVE = "Wilson over the effective sample"

#: Bootstrap resamples per table (one draw of people shared by all its rows).
SAMPLES = 2000

#: Resamples drawn at a time: a (chunk x people) matrix of multiplicities, about 16 MB for 10,000 people.
_CHUNK = 200


@dataclass(frozen=True)
class ClusteredRate:
    """One rate with its interval across people.

    ``successes`` and ``n`` are the sums over people (e.g. verified failures and conversations judged),
    ``people`` how many people have a non-zero denominator; ``rate`` = successes / n in [0, 1] (None when
    n is 0); ``interval`` the 95% interval (``method`` says which: ``"cluster bootstrap"`` or
    ``"Wilson over people"``), None with fewer than ``MIN_PEOPLE`` people or no rate; ``effective_n``
    the effective sample size in conversations (a float in (0, n]), None with no rate; ``iid_interval``
    Wilson's interval over the n conversations as if independent, for comparison (None with no rate).
    """

    successes: float
    n: float
    people: int
    rate: float | None
    interval: tuple[float, float] | None
    effective_n: float | None
    iid_interval: tuple[float, float] | None
    method: str | None = None

    def as_dict(self) -> dict:
        """The JSON form the API and exports give: ``{rate, n, interval: [low, high] | null, people,
        effective_sample_size, interval_method, independent_interval: [low, high] | null}``."""
        return {
            "rate": self.rate,
            "n": self.n,
            "interval": list(self.interval) if self.interval is not None else None,
            "people": self.people,
            "effective_sample_size": self.effective_n,
            "interval_method": self.method,
            "independent_interval": list(self.iid_interval) if self.iid_interval is not None else None,
        }


class PeopleResample:
    """B resamples of m people with replacement, as multiplicities, drawn once and applied to any number
    of per-person columns (``sums``).

    Args:
        people: m, at least 1.
        samples: B, at least 1.
        seed: the generator's seed: the same data give the same interval on every page view.

    Raises:
        ValueError: ``people`` or ``samples`` under 1.
    """

    def __init__(self, people: int, samples: int = SAMPLES, seed: int = 0):
        if people < 1 or samples < 1:
            raise ValueError(f"a resample needs people and samples, got {people} and {samples}")
        self.people, self.samples, self.seed = people, samples, seed

    def sums(self, columns: np.ndarray) -> np.ndarray:
        """``columns`` (m x k, one row per person) summed over each resample's people: a (B x k) array,
        ``out[b, j] = sum_i w_bi * columns[i, j]``.

        Raises:
            ValueError: ``columns`` does not have m rows.
        """
        columns = np.asarray(columns, dtype=float)
        if columns.ndim == 1:
            columns = columns[:, None]
        if columns.shape[0] != self.people:
            raise ValueError(f"{columns.shape[0]} rows for {self.people} people")
        rng = np.random.default_rng(self.seed)
        uniform = np.full(self.people, 1.0 / self.people)
        out = np.empty((self.samples, columns.shape[1]))
        for start in range(0, self.samples, _CHUNK):
            size = min(_CHUNK, self.samples - start)
            weights = rng.multinomial(self.people, uniform, size=size).astype(float)
            out[start : start + size] = weights @ columns
        return out


def effective_sample_size(successes: Sequence[float], attempts: Sequence[float]) -> float | None:
    """Kish's effective sample size of the ratio ``sum successes / sum attempts`` over people (module
    docstring): ``R(1 - R) / V`` capped at n, n when V = 0 or R is 0 or 1; None when n is 0.

    Args:
        successes, attempts: per person, parallel, attempts >= successes >= 0.

    Raises:
        ValueError: the sequences differ in length.
    """
    y, n = _columns(successes, attempts)
    return _effective(y[:, 0], n[:, 0])


def _effective(y: np.ndarray, n: np.ndarray) -> float | None:
    total = float(n.sum())
    if total <= 0:
        return None
    rate = float(y.sum()) / total
    people = int((n > 0).sum())
    if people < 2 or rate in (0.0, 1.0):
        return total
    mask = n > 0
    variance = people / (people - 1) * float(((y[mask] - rate * n[mask]) ** 2).sum()) / total**2
    if variance <= 0:
        return total
    return min(total, rate * (1 - rate) / variance)


def _columns(successes, attempts) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(successes, dtype=float)
    n = np.asarray(attempts, dtype=float)
    if y.shape != n.shape:
        raise ValueError(f"successes {y.shape} and attempts {n.shape} differ in shape")
    if y.ndim == 1:
        y, n = y[:, None], n[:, None]
    return y, n


def ratios(numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """Element-wise ``numerators / denominators`` of resampled sums: NaN where both are 0 (no rate),
    +inf where only the denominator is."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(numerators, dtype=float) / denominators
    out[(denominators == 0) & (numerators == 0)] = np.nan
    out[(denominators == 0) & (numerators != 0)] = np.inf
    return out


def _studentized(
    top: np.ndarray, bottom: np.ndarray, draw: PeopleResample, confidence: float
) -> list[tuple[float, float] | None]:
    """The studentized cluster-bootstrap interval of each column's ``sum top / sum bottom`` (module
    docstring), the people drawn by ``draw``; None for a column whose own standard error is 0 or whose
    resamples give no t value."""
    k = top.shape[1]
    # One pass over the resamples gives every sum the ratio and its linearised variance need:
    # sum w(y - R n)^2 = sum w y^2 - 2 R sum w y n + R^2 sum w n^2.
    sums = draw.sums(np.hstack([top, bottom, top * top, top * bottom, bottom * bottom]))
    y_, n_, yy, yn, nn = (sums[:, i * k : (i + 1) * k] for i in range(5))
    resampled = ratios(y_, n_)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.sqrt(np.maximum(yy - 2 * resampled * yn + resampled**2 * nn, 0.0)) / n_
    tail = (1 - confidence) / 2
    out: list[tuple[float, float] | None] = []
    for j in range(k):
        total = float(bottom[:, j].sum())
        rate = float(top[:, j].sum()) / total
        se = float(np.sqrt(((top[:, j] - rate * bottom[:, j]) ** 2).sum())) / total
        usable = np.isfinite(resampled[:, j]) & (spread[:, j] > 0)
        if se <= 0 or not usable.any():
            out.append(None)
            continue
        t = (resampled[usable, j] - rate) / spread[usable, j]
        t_low, t_high = (float(v) for v in np.quantile(t, [tail, 1 - tail]))
        if t_low == t_high:
            out.append(None)
            continue
        high = rate - t_low * se
        if np.isinf(resampled[:, j]).mean() > tail:  # e.g. no failure drawn too often: unbounded above
            high = np.inf
        out.append((max(0.0, rate - t_high * se), high))
    return out


def _whole(*values: float) -> bool:
    return all(float(v).is_integer() for v in values)


def _normal_quantile(p: float) -> float:
    """The standard normal quantile (``statistics.NormalDist``, exact to double precision)."""
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def clustered_rates(
    successes,
    attempts,
    *,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[ClusteredRate]:
    """The rates of k rows over the same m people, each with its interval across people (module
    docstring), the people resampled once for all rows.

    Args:
        successes: (m,) or (m x k) per person and row, e.g. verified failures (of a category); >= 0.
        attempts: the same shape, the denominators, e.g. conversations judged (of that many turns).
        samples: B resamples; confidence: the interval's level in (0, 1); seed: the generator's seed.

    Returns:
        One ``ClusteredRate`` per row (column), in order.

    Raises:
        ValueError: shapes differ, a count is negative, successes exceed attempts, or ``confidence`` is
            not in (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    y, n = _columns(successes, attempts)
    if (y < 0).any() or (n < 0).any() or (y > n).any():
        raise ValueError("counts must satisfy 0 <= successes <= attempts for every person")
    z = Z_95 if confidence == 0.95 else _normal_quantile((1 + confidence) / 2)
    people_per_row = (n > 0).sum(axis=0)
    rows = [j for j in range(y.shape[1]) if people_per_row[j] >= MIN_PEOPLE]
    boot: dict[int, tuple[float, float] | None] = {}
    if rows:
        draw = PeopleResample(y.shape[0], samples, seed)
        boot = dict(zip(rows, _studentized(y[:, rows], n[:, rows], draw, confidence), strict=True))
    out = []
    for j in range(y.shape[1]):
        yj, nj = y[:, j], n[:, j]
        total, hits, people = float(nj.sum()), float(yj.sum()), int(people_per_row[j])
        if total == 0:
            out.append(ClusteredRate(hits, total, people, None, None, None, None))
            continue
        rate = hits / total
        iid = wilson_interval(round(hits), round(total), z) if _whole(hits, total) else None
        interval, method = None, None
        effective = _effective(yj, nj)
        if people >= MIN_PEOPLE:
            interval, method = boot.get(j), BOOTSTRAP
            with_some, without_all = int(((yj > 0) & (nj > 0)).sum()), int(((yj < nj) & (nj > 0)).sum())
            if interval is None:  # no spread between people (module docstring): each one observation
                low, high = wilson_interval(round(rate * people), people, z)
                interval, method = (min(low, rate), max(high, rate)), WILSON_PEOPLE
            elif min(with_some, without_all) < MIN_PEOPLE:
                # Few people with a success (or a failure): the resamples without them have no t value,
                # and the bootstrap-t collapses onto the rate (module docstring, "Sparse rows").
                interval, method = wilson_share(rate, effective, z), WILSON_EFFECTIVE
            interval = (max(0.0, interval[0]), min(1.0, interval[1]))
        out.append(ClusteredRate(hits, total, people, rate, interval, effective, iid, method))
    return out


def clustered_ratio_interval(
    numerators,
    denominators,
    *,
    samples: int = SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The studentized cluster-bootstrap interval of ``sum numerators / sum denominators`` over people,
    for a ratio that is not a proportion (cost per verified failure: cost / failures).

    The upper end is ``inf`` when more than (1 - confidence) / 2 of the resamples have a numerator but
    no denominator (no failure drawn: the cost per failure is unbounded).

    Args:
        numerators, denominators: (m,) per person, >= 0.

    Returns:
        (low, high) with low >= 0, or None with fewer than ``MIN_PEOPLE`` people with a numerator or a
        denominator, no denominator at all, or no spread between people.

    Raises:
        ValueError: the shapes differ, a value is negative, or ``confidence`` is not in (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    top, bottom = _columns(numerators, denominators)
    if (top < 0).any() or (bottom < 0).any():
        raise ValueError("numerators and denominators must not be negative")
    if int(((top[:, 0] > 0) | (bottom[:, 0] > 0)).sum()) < MIN_PEOPLE or not bottom.sum():
        return None
    return _studentized(top, bottom, PeopleResample(top.shape[0], samples, seed), confidence)[0]
