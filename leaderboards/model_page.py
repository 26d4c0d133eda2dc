"""What the model page shows in words: readable names of the test suites' functionality tags and the
evaluation figures formatted with their units (no raw dictionaries).

Functionality names: HateCheck's 29 functionalities as named in Röttger et al. 2021, "HateCheck:
Functional Tests for Hate Speech Detection Models" (ACL 2021), Table 1; the codes are the
``functionality`` column of ``hatecheck/test_suite_cases.csv`` (``_h`` hateful, ``_nh`` non-hateful;
../shared/data/README.md, section 1). HatemojiCheck's 7 as named in Kirk et al. 2022, "Hatemoji"
(NAACL 2022), Table 1; codes from the ``functionality`` column of ``hatemoji_check/test.csv``. The data
files carry only the codes, so the names are this table. A code not in it is shown with its
underscores as spaces.
"""

from __future__ import annotations

import math

FUNCTIONALITY_NAMES: dict[str, str] = {
    # HateCheck (Röttger et al. 2021, Table 1), F1-F29.
    "derog_neg_emote_h": "Expression of strong negative emotions (explicit)",
    "derog_neg_attrib_h": "Description using very negative attributes (explicit)",
    "derog_dehum_h": "Dehumanisation (explicit)",
    "derog_impl_h": "Implicit derogation",
    "threat_dir_h": "Direct threat",
    "threat_norm_h": "Threat as normative statement",
    "slur_h": "Hate expressed using slur",
    "slur_homonym_nh": "Non-hateful homonyms of slurs",
    "slur_reclaimed_nh": "Reclaimed slurs",
    "profanity_h": "Hate expressed using profanity",
    "profanity_nh": "Non-hateful use of profanity",
    "ref_subs_clause_h": "Hate expressed through reference in subsequent clauses",
    "ref_subs_sent_h": "Hate expressed through reference in subsequent sentences",
    "negate_pos_h": "Hate expressed using negated positive statement",
    "negate_neg_nh": "Non-hate expressed using negated hateful statement",
    "phrase_question_h": "Hate phrased as a question",
    "phrase_opinion_h": "Hate phrased as an opinion",
    "ident_neutral_nh": "Neutral statements using protected group identifiers",
    "ident_pos_nh": "Positive statements using protected group identifiers",
    "counter_quote_nh": "Denouncements of hate that quote it",
    "counter_ref_nh": "Denouncements of hate that make direct reference to it",
    "target_obj_nh": "Abuse targeted at objects",
    "target_indiv_nh": "Abuse targeted at individuals (not as member of a protected group)",
    "target_group_nh": "Abuse targeted at non-protected groups (e.g. professions)",
    "spell_char_swap_h": "Swaps of adjacent characters",
    "spell_char_del_h": "Missing characters",
    "spell_space_del_h": "Missing word boundaries",
    "spell_space_add_h": "Added spaces between characters",
    "spell_leet_h": "Leet speak spellings",
    # HatemojiCheck (Kirk et al. 2022, Table 1): the paper's names, with a gloss in brackets from its cases in test.csv.
    "verb_swap": "Verb swap (an emoji for the verb)",
    "identity_swap": "Identity swap (an emoji for the identity term)",
    "descriptor_swap": "Descriptor swap (an emoji for the descriptor)",
    "double_swap": "Double swap (emoji for two words)",
    "append": "Append (a negative emoji added)",
    "positive_confounder": "Positive confounder (a positive emoji with hate)",
    "emoji_leetspeak": "Emoji leetspeak (emoji for letters)",
}


def tag_name(group: str, name: str) -> str:
    """A tag's readable name: a functionality by ``FUNCTIONALITY_NAMES`` (``derog_impl_h`` ->
    "Implicit derogation"), else the name with underscores as spaces (a target group such as
    ``women`` stays as it is)."""
    if group == "functionality" and name in FUNCTIONALITY_NAMES:
        return FUNCTIONALITY_NAMES[name]
    return name.replace("_", " ")


#: Figures of ``Score.metrics`` in the order shown, with their label and unit: ``percent`` (a rate in
#: [0, 1] shown as a percentage to one decimal), ``rate`` (three decimals), ``per_second`` (examples
#: per second, one decimal), ``gib`` (two decimals), ``seconds`` (one decimal), ``count`` (a whole
#: number with thousands separators).
METRIC_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("accuracy", "accuracy", "percent"),
    ("macro_f1", "macro-F1", "rate"),
    ("f1", "SQuAD F1", "percent"),
    ("exact_match", "exact match", "percent"),
    ("fairness", "fairness", "percent"),
    ("robustness", "robustness", "percent"),
    ("throughput", "throughput", "per_second"),
    ("throughput_full_pass", "throughput of the prediction pass", "per_second"),
    ("throughput_sample", "items per timed pass", "count"),
    ("throughput_extra_seconds", "time of the extra timed passes", "seconds"),
    ("memory", "memory", "gib"),
    ("working_memory", "working memory", "gib"),
    ("peak_rss", "peak resident memory", "gib"),
    ("n", "items", "count"),
    ("fairness_n", "fairness items", "count"),
    ("robustness_n", "robustness items", "count"),
    ("seconds", "time", "seconds"),
    ("batch_size", "batch size", "count"),
)


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def format_figure(value: float, unit: str) -> str:
    """``value`` in ``unit`` (``METRIC_FIGURES``): 0.6512 percent -> "65.1%", 1234.56 per_second ->
    "1,234.6 examples/s", 0.0912 gib -> "0.09 GiB", 3425 count -> "3,425", 2.84 seconds -> "2.8 s"."""
    if unit == "percent":
        return f"{value:.1%}"
    if unit == "rate":
        return f"{value:.3f}"
    if unit == "per_second":
        return f"{value:,.1f} examples/s"
    if unit == "gib":
        return f"{value:.2f} GiB"
    if unit == "seconds":
        return f"{value:,.1f} s"
    if unit == "count":
        return f"{value:,.0f}"
    return f"{value:.4g}"


#: Figures of ``Score.metrics`` not shown on a line of their own: the throughput's spread and passes
#: are shown beside it (``throughput_text``).
SHOWN_WITH_THROUGHPUT = ("throughput_spread", "throughput_passes")


def throughput_text(value: float, metrics: dict) -> str:
    """The throughput with its measured spread when the Score has one (``leaderboards.evaluation``:
    the relative range (max - min) / median of the timed passes): 412.0 with spread 0.03 over 5 passes
    -> "412.0 examples/s (spread 3.0% over 5 passes)"; without a spread (an older Score, one pass)
    just "412.0 examples/s"."""
    text = format_figure(value, "per_second")
    spread = _number(metrics.get("throughput_spread"))
    passes = metrics.get("throughput_passes")
    if spread is None:
        return text
    count = f" over {len(passes)} passes" if isinstance(passes, list) else ""
    return f"{text} (spread {spread:.1%}{count})"


def metric_figures(metrics: dict | None) -> list[tuple[str, str]]:
    """``(label, text)`` per figure of a ``Score.metrics`` dict, known figures first in
    ``METRIC_FIGURES`` order, then other numbers by key (four significant digits); texts (method
    names) and missing values are left out; the throughput carries its spread (``throughput_text``)."""
    metrics = metrics if isinstance(metrics, dict) else {}
    known = {key for key, _, _ in METRIC_FIGURES} | set(SHOWN_WITH_THROUGHPUT)
    figures = [
        (label, throughput_text(value, metrics) if key == "throughput" else format_figure(value, unit))
        for key, label, unit in METRIC_FIGURES
        if (value := _number(metrics.get(key))) is not None
    ]
    for key in sorted(k for k in metrics if k not in known):
        value = _number(metrics[key])
        if value is not None:
            figures.append((str(key).replace("_", " "), format_figure(value, "")))
    return figures


def overall_for_tags(perf: float | None, metrics: dict | None, perf_metric: str) -> tuple[float | None, str]:
    """The whole-dataset figure comparable with the per-tag accuracies, and its name: ``accuracy``
    when stored (per-tag values are accuracies), else the exact match (what "correct" means per tag
    for span tasks), else the perf metric. ``(None, "")`` when there is none in [0, 1]."""
    metrics = metrics if isinstance(metrics, dict) else {}
    for key, label in (("accuracy", "accuracy"), ("exact_match", "exact match")):
        value = _number(metrics.get(key))
        if value is not None and 0 <= value <= 1:
            return float(value), label
    value = _number(perf)
    if value is not None and 0 <= value <= 1:
        return float(value), perf_metric.replace("_", " ")
    return None, ""
