"""A Bradley-Terry ranking controlled for style: answer length and markdown as covariates.

Pure functions (numpy, no Django). Longer, more formatted answers win more votes whatever their substance;
Chatbot Arena's style control (Li, Angelopoulos & Chiang 2024, "Does style matter? Disentangling style
and substance in Chatbot Arena", lmsys.org blog; FastChat ``construct_style_matrices``) adds the two
answers' style differences as covariates of the Bradley-Terry model, fitted as a logistic regression:

    logit P(a beats b) = (theta_a - theta_b) + sum_k beta_k z_k

* **Features** of an answer (``style_counts``): its length in words (white-space separated), and its
  markdown: header lines (``#`` to ``######``), list items (lines starting ``-``, ``*``, ``+`` or
  ``1.``), bold spans (``**...**`` or ``__...__``).
* **Covariates**: for each feature, the normalised difference (f_a - f_b) / (f_a + f_b + 1) (FastChat's
  with ``add_one``), then standardised over the votes (minus its mean, over its standard deviation; a
  feature that never varies is left at 0 and its coefficient reported as None).
* **Outcomes**: a win is y = 1 for a (0 for b); a tie and "both bad" half a win to each side (two rows of
  weight 1/2), as ``core.pairwise``.
* **Prior**: ``prior`` pseudo-ties on every pair that played (rows with zero covariates), as
  ``core.pairwise``: with every beta 0, or no covariate varying, the scores are ``fit_bradley_terry``'s.
* **Fit**: Newton's method on the penalised log-likelihood (the pseudo-ties are its penalty), theta
  pinned by one reference model per connected part and then centred (mean 0 over the models with votes),
  so scores are on ``core.pairwise``'s scale: 1000 + 400 log10(strength).
* **Intervals**: bootstrap over votes (``samples`` resamples, seeded; percentile), for the scores and
  for each beta, as the plain ranking's.

A beta is the change of the log-odds of winning per standard deviation of that feature's normalised
difference: beta > 0 means voters preferred the answer with more of it, whichever model wrote it.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .pairwise import BASE_SCORE, DEFAULT_PRIOR, _parts

__all__ = ["FEATURES", "StyleRanking", "StyledVote", "style_controlled", "style_counts"]

FEATURES = ("length", "headers", "lists", "bold")
#: The fewest votes in which a feature must differ between the two answers to get a coefficient.
MIN_VARIED = 10
_POINTS = 400 / math.log(10)
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s", re.MULTILINE)
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.MULTILINE)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_MAX_ITER = 100
_TOL = 1e-10


def style_counts(text: str) -> dict[str, int]:
    """``{"length": words, "headers": header lines, "lists": list items, "bold": bold spans}`` of an answer
    (module docstring)."""
    return {
        "length": len(text.split()),
        "headers": len(_HEADER.findall(text)),
        "lists": len(_LIST.findall(text)),
        "bold": len(_BOLD.findall(text)),
    }


@dataclass(frozen=True)
class StyledVote:
    """A vote with the two answers' style counts (``style_counts``): ``outcome`` "a", "b", "tie" or
    "both_bad"."""

    a: Hashable
    b: Hashable
    outcome: str
    style_a: dict
    style_b: dict


@dataclass(frozen=True)
class StyleRanking:
    """Style-controlled scores with bootstrap intervals, and each feature's coefficient.

    ``scores``/``intervals``: model key -> score (Elo-like, mean 1000 over the models with votes) and its
    percentile interval (None without votes or samples). ``coefficients``: feature -> beta (None when the
    feature differed between the two answers in fewer than ``MIN_VARIED`` votes); ``coefficient_intervals``:
    feature -> (low, high) or None; ``varied``: feature -> the votes in which it differed.
    """

    scores: dict[Hashable, float]
    intervals: dict[Hashable, tuple[float, float] | None]
    coefficients: dict[str, float | None]
    coefficient_intervals: dict[str, tuple[float, float] | None]
    n_votes: int
    samples: int
    varied: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "coefficients": [
                {
                    "feature": f,
                    "coefficient": self.coefficients[f],
                    "interval": list(self.coefficient_intervals[f])
                    if self.coefficient_intervals[f]
                    else None,
                    "varied": self.varied.get(f, 0),
                }
                for f in FEATURES
            ],
            "n_votes": self.n_votes,
            "samples": self.samples,
        }


def _design(votes: Sequence[StyledVote], keys: list, prior: float, pairs=None):
    """Rows of the regression: model index pairs, covariates, outcomes, weights; and the varying features.
    ``pairs``: the pairs that get the prior's pseudo-ties (default: those of ``votes``)."""
    index = {k: i for i, k in enumerate(keys)}
    raw = np.array(
        [
            [(v.style_a[f] - v.style_b[f]) / (v.style_a[f] + v.style_b[f] + 1) for f in FEATURES]
            for v in votes
        ],
        dtype=float,
    ).reshape(len(votes), len(FEATURES))
    spread = raw.std(axis=0)
    # A feature that differs in a handful of votes gives a coefficient its data cannot bear (one vote
    # with bold text decides it): left out below MIN_VARIED, as one that never varies.
    varying = (spread > 1e-12) & ((np.abs(raw) > 1e-12).sum(axis=0) >= MIN_VARIED)
    z = np.zeros_like(raw)
    z[:, varying] = (raw[:, varying] - raw[:, varying].mean(axis=0)) / spread[varying]
    left, right, cov, y, w = [], [], [], [], []
    for v, row in zip(votes, z, strict=True):
        i, j = index[v.a], index[v.b]
        if v.outcome == "a" or v.outcome == "b":
            (
                left.append(i),
                right.append(j),
                cov.append(row),
                y.append(1.0 if v.outcome == "a" else 0.0),
                w.append(1.0),
            )
        elif v.outcome in ("tie", "both_bad"):
            for outcome in (1.0, 0.0):
                left.append(i), right.append(j), cov.append(row), y.append(outcome), w.append(0.5)
        else:
            raise ValueError(f"unknown outcome {v.outcome!r}")
    if pairs is None:
        pairs = {tuple(sorted((index[v.a], index[v.b]))) for v in votes}
    zero = np.zeros(len(FEATURES))
    for i, j in sorted(pairs):  # the prior's pseudo-ties: half a win each, no style difference
        for outcome in (1.0, 0.0):
            left.append(i), right.append(j), cov.append(zero), y.append(outcome), w.append(0.5 * prior)
    return (
        np.array(left),
        np.array(right),
        np.array(cov).reshape(len(left), len(FEATURES))[:, varying],
        np.array(y),
        np.array(w),
        varying,
        len(votes),
    )


def _fit(left, right, cov, y, w, m: int, reference: np.ndarray) -> np.ndarray:
    """Newton's method for [theta (m), beta]: the weighted logistic log-likelihood maximised, theta of the
    ``reference`` models pinned at 0. Returns the parameters."""
    k = cov.shape[1]
    x = np.zeros((len(y), m + k))
    rows = np.arange(len(y))
    x[rows, left] += 1.0
    x[rows, right] -= 1.0
    x[:, m:] = cov
    free = np.ones(m + k, dtype=bool)
    free[reference] = False
    xf = x[:, free]
    params = np.zeros(free.sum())
    for _ in range(_MAX_ITER):
        p = 1 / (1 + np.exp(-(xf @ params)))
        gradient = xf.T @ (w * (y - p))
        hessian = (xf * (w * p * (1 - p))[:, None]).T @ xf
        step = np.linalg.solve(hessian + 1e-12 * np.eye(len(params)), gradient)
        params = params + step
        if np.max(np.abs(step)) < _TOL:
            break
    out = np.zeros(m + k)
    out[free] = params
    return out


def _references(left: np.ndarray, right: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(references, parts)``: the part of the comparison graph each model is in
    (``core.pairwise._parts``), and the first model of each part, whose log-strength is pinned at 0."""
    parts = _parts(m, left, right)
    return np.unique(parts, return_index=True)[1], parts


def _scores(theta: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """Log-strengths centred per connected part (mean 0), on the score scale."""
    out = np.empty_like(theta)
    for part in np.unique(parts):
        members = parts == part
        out[members] = theta[members] - theta[members].mean()
    return BASE_SCORE + _POINTS * out


def style_controlled(
    votes: Sequence[StyledVote],
    *,
    samples: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    prior: float = DEFAULT_PRIOR,
) -> StyleRanking:
    """The style-controlled Bradley-Terry ranking of ``votes`` (module docstring), with bootstrap
    percentile intervals from ``samples`` resamples of the votes seeded by ``seed``.

    Raises:
        ValueError: an unknown outcome, a vote of a model against itself, a negative or infinite
            ``prior``, negative ``samples``, or ``confidence`` outside (0, 1).
    """
    if not (prior >= 0 and math.isfinite(prior)):
        raise ValueError(f"prior must be a finite number of pseudo-ties, 0 or more, not {prior}")
    if samples < 0 or not 0 < confidence < 1:
        raise ValueError("samples must be 0 or more and confidence strictly between 0 and 1")
    for v in votes:
        if v.a == v.b:
            raise ValueError(f"a vote of model {v.a!r} against itself")
    keys = list(dict.fromkeys(k for v in votes for k in (v.a, v.b)))
    empty = {f: None for f in FEATURES}
    if not votes:
        return StyleRanking({}, {}, dict(empty), dict(empty), 0, 0)
    prior = max(prior, 1e-9)
    m = len(keys)
    left, right, cov, y, w, varying, n = _design(votes, keys, prior)
    # The pseudo-ties stay on the real votes' pairs in every resample, as core.pairwise's bootstrap.
    pairs = {tuple(sorted((keys.index(v.a), keys.index(v.b)))) for v in votes}
    references, parts = _references(left, right, m)
    estimate = _fit(left, right, cov, y, w, m, references)
    scores = dict(zip(keys, _scores(estimate[:m], parts).tolist(), strict=True))
    betas = iter(estimate[m:].tolist())
    coefficients = {f: next(betas) if varying[i] else None for i, f in enumerate(FEATURES)}
    intervals: dict = dict.fromkeys(keys)
    coefficient_intervals: dict = dict(empty)
    if samples:
        rng = np.random.default_rng(seed)
        boot_scores, boot_betas = [], []
        votes = list(votes)
        for _ in range(samples):
            drawn = [votes[i] for i in rng.integers(0, len(votes), len(votes))]
            l2, r2, c2, y2, w2, drawn_varying, _ = _design_on(drawn, keys, prior, varying, pairs)
            fitted = _fit(l2, r2, c2, y2, w2, m, references)
            boot_scores.append(_scores(fitted[:m], parts))
            # A feature that did not vary in this resample has no coefficient here (not 0).
            betas_b = fitted[m:].copy()
            betas_b[~drawn_varying[varying]] = np.nan
            boot_betas.append(betas_b)
        tail = (1 - confidence) / 2
        lows, highs = np.quantile(np.array(boot_scores), [tail, 1 - tail], axis=0)
        for key, low, high in zip(keys, lows.tolist(), highs.tolist(), strict=True):
            intervals[key] = (min(low, scores[key]), max(high, scores[key]))
        if cov.shape[1]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a column all nan: no interval
                b_lows, b_highs = np.nanquantile(np.array(boot_betas), [tail, 1 - tail], axis=0)
            columns = iter(range(cov.shape[1]))
            for i, f in enumerate(FEATURES):
                if varying[i]:
                    c = next(columns)
                    if np.isnan(b_lows[c]):
                        continue
                    coefficient_intervals[f] = (
                        min(float(b_lows[c]), coefficients[f]),
                        max(float(b_highs[c]), coefficients[f]),
                    )
    raw_differs = [sum(1 for v in votes if v.style_a[f] != v.style_b[f]) for f in FEATURES]
    return StyleRanking(
        scores,
        intervals,
        coefficients,
        coefficient_intervals,
        n,
        samples,
        dict(zip(FEATURES, raw_differs, strict=True)),
    )


def _design_on(votes, keys, prior, varying, pairs):
    """``_design`` for a bootstrap resample, keeping the original's varying features (a resample where one
    happens to vary too little keeps its column, all zeros; its coefficient is then left out of the
    interval, ``style_controlled``)."""
    left, right, cov, y, w, resampled_varying, n = _design(votes, keys, prior, pairs)
    full = np.zeros((len(y), int(varying.sum())))
    columns = [i for i in range(len(FEATURES)) if varying[i]]
    source = [i for i in range(len(FEATURES)) if resampled_varying[i]]
    for c, feature in enumerate(columns):
        if feature in source:
            full[:, c] = cov[:, source.index(feature)]
    return left, right, full, y, w, resampled_varying, n
