"""Agreement of a judge with people: Cohen's kappa and raw agreement, with paired bootstrap intervals.

Pure functions (numpy, no Django). ``judge`` and ``people`` are parallel sequences of labels, one pair
per item (the judge's rubric answer and the settled human verdict of the same example); labels are any
hashable values compared with ``==`` (strings, ints, ``None`` as a label of its own).

Formulas (Cohen 1960, "A coefficient of agreement for nominal scales", Educational and Psychological
Measurement 20(1)), for n items and the K labels either side used, with c_kl the number of items the
judge labelled k and the people labelled l, r_k = sum_l c_kl and s_l = sum_k c_kl:

* raw (observed) agreement p_o = sum_k c_kk / n;
* chance agreement p_e = sum_k (r_k / n) (s_k / n), the agreement expected if both labelled
  independently with their own label frequencies;
* kappa = (p_o - p_e) / (1 - p_e), in [-1, 1]: 1 is perfect agreement, 0 is chance level.

When p_e = 1 the ratio is 0/0: both sides gave every item the same single label, so p_o = 1 as well.
Kappa is then **undefined** (None, with ``Agreement.kappa_undefined`` = ``ONE_LABEL``), as scikit-learn's
``cohen_kappa_score`` says with nan: agreement on items that all carry one label cannot be told from
chance (a judge that says "failed" to everything agrees with people who saw only failures), so it is
never shown as agreement nor compared with a judge's floor. Raw agreement stays defined (1.0).

Interval: the paired bootstrap over items (Efron & Tibshirani 1993, "An Introduction to the Bootstrap",
ch. 13, percentile interval): items are resampled with replacement, keeping each item's (judge, people)
pair together, kappa and p_o are recomputed on each resample, and the interval is the
((1 - confidence) / 2, (1 + confidence) / 2) quantiles of the resampled values. Resampling n items
with replacement draws the K x K table's cell counts from a multinomial(n, c_kl / n), so the resamples
are drawn that way (one ``Generator.multinomial`` call, no per-item work): the same distribution as
resampling item indices, at a cost independent of n. A resample with one label on both sides has no
kappa and is left out of the kappa interval's quantiles (the interval is over the resamples where kappa
is defined; None when there is none, i.e. when the items themselves have one label on both sides).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["NO_ITEMS", "ONE_LABEL", "Agreement", "agreement", "cohen_kappa"]

#: Why kappa is None (``Agreement.kappa_undefined``): no item to compare, or one label on both sides
#: (p_e = 1, kappa 0/0).
NO_ITEMS = "no items"
ONE_LABEL = "one label on both sides"


@dataclass(frozen=True)
class Agreement:
    """A judge's agreement with people over ``n`` items.

    ``kappa`` (Cohen's kappa) and ``raw`` (the fraction of items with the same label) are None when
    ``n == 0``; ``kappa`` is None as well when both sides gave every item one and the same label
    (0/0, module docstring). ``kappa_undefined`` says why kappa is None (``NO_ITEMS``, ``ONE_LABEL``),
    else None. The intervals are the bootstrap percentile intervals at the requested confidence, None
    when the figure is None or no bootstrap sample was asked for (``samples=0``).
    """

    n: int
    kappa: float | None
    kappa_interval: tuple[float, float] | None
    raw: float | None
    raw_interval: tuple[float, float] | None
    kappa_undefined: str | None = None


def _check(a: Sequence, b: Sequence) -> int:
    if len(a) != len(b):
        raise ValueError(f"{len(a)} judge labels but {len(b)} people's labels")
    return len(a)


def _table(a: Sequence[Hashable], b: Sequence[Hashable]) -> np.ndarray:
    """The K x K contingency table (rows: ``a``'s label, columns: ``b``'s), integer counts."""
    codes: dict[Hashable, int] = {}
    # One dictionary for both sides so that the same label gets the same code in a and in b;
    # the Python loop is about 1 ms per 10,000 items, and labels need not be sortable.
    ia = np.fromiter((codes.setdefault(x, len(codes)) for x in a), dtype=np.int64, count=len(a))
    ib = np.fromiter((codes.setdefault(x, len(codes)) for x in b), dtype=np.int64, count=len(b))
    k = len(codes)
    return np.bincount(ia * k + ib, minlength=k * k).reshape(k, k)


def _kappa_and_raw(tables: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Kappa and p_o of each table of ``tables`` (shape (S, K, K), counts summing to n).

    Kappa is computed on counts: (n * sum_k c_kk - sum_k r_k s_k) / (n^2 - sum_k r_k s_k), which is
    (p_o - p_e) / (1 - p_e) multiplied through by n^2; the denominator is 0 exactly when p_e = 1
    (the counts are integers, exact in float64 up to n of about 9e7), and kappa is then nan (undefined).
    """
    tables = tables.astype(np.float64)
    agree = np.trace(tables, axis1=1, axis2=2)
    chance = np.einsum("sk,sk->s", tables.sum(axis=2), tables.sum(axis=1))
    numerator = n * agree - chance
    denominator = float(n) * n - chance
    undefined = denominator == 0
    kappa = np.divide(numerator, denominator, out=np.full_like(numerator, np.nan), where=~undefined)
    return kappa, agree / n


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa (Cohen 1960) between two parallel label sequences; ``None`` when they are empty or
    kappa is undefined.

    kappa = (p_o - p_e) / (1 - p_e) (module docstring); undefined (None) when p_e = 1, i.e. both sides
    gave every item the same single label (0/0; scikit-learn returns nan there).

    Raises:
        ValueError: if the sequences differ in length.
    """
    n = _check(a, b)
    if n == 0:
        return None
    kappa, _ = _kappa_and_raw(_table(a, b)[None], n)
    return None if np.isnan(kappa[0]) else float(kappa[0])


def agreement(
    judge: Sequence[Hashable],
    people: Sequence[Hashable],
    *,
    samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Agreement:
    """Kappa and raw agreement of ``judge`` with ``people`` over their n items, with paired bootstrap
    percentile intervals from ``samples`` resamples (module docstring), seeded by ``seed``
    (the same inputs and seed give the same intervals).

    10,000 items and 1,000 samples take a few milliseconds (benchmarks/judge_agreement.py).

    Raises:
        ValueError: if the sequences differ in length, ``samples`` is negative, or ``confidence`` is
            not strictly between 0 and 1.
    """
    n = _check(judge, people)
    if samples < 0:
        raise ValueError(f"samples must be 0 or more, not {samples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, not {confidence}")
    if n == 0:
        return Agreement(
            n=0, kappa=None, kappa_interval=None, raw=None, raw_interval=None, kappa_undefined=NO_ITEMS
        )
    table = _table(judge, people)
    kappa, raw = _kappa_and_raw(table[None], n)
    defined = not np.isnan(kappa[0])
    kappa_interval = raw_interval = None
    if samples:
        rng = np.random.default_rng(seed)
        k = table.shape[0]
        resampled = rng.multinomial(n, table.ravel() / n, size=samples).reshape(samples, k, k)
        boot_kappa, boot_raw = _kappa_and_raw(resampled, n)
        tail = (1 - confidence) / 2
        # Resamples with one label on both sides have no kappa: the interval is over the others.
        boot_kappa = boot_kappa[~np.isnan(boot_kappa)]
        if defined and boot_kappa.size:
            lo, hi = np.quantile(boot_kappa, [tail, 1 - tail])
            kappa_interval = (float(lo), float(hi))
        lo, hi = np.quantile(boot_raw, [tail, 1 - tail])
        raw_interval = (float(lo), float(hi))
    return Agreement(
        n=n,
        kappa=float(kappa[0]) if defined else None,
        kappa_interval=kappa_interval,
        raw=float(raw[0]),
        raw_interval=raw_interval,
        kappa_undefined=None if defined else ONE_LABEL,
    )
