"""Reads of the stored artefact probes, for the round page, the API and the release card."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tasks.models import Round

from ..models import ArtefactProbe

Kind = ArtefactProbe.Kind
Status = ArtefactProbe.Status

#: What each probe asks, in words.
QUESTIONS = {
    Kind.INPUT_ONLY: "Can the label be predicted from what the annotator wrote alone, without the context?",
    Kind.AUTHOR: "Can the author be predicted from the text?",
}


def percent(value: float | None) -> str:
    """A share in [0, 1] as a percentage with one decimal (``0.725`` -> ``"72.5%"``); ``"–"`` for None."""
    return "–" if value is None else f"{value:.1%}"


def probe_title(kind: str, fields: list[str] | None = None) -> str:
    """The probe's name on the page: ``"Hypothesis only (input-only baseline)"`` for NLI,
    ``"Statement only (input-only baseline)"`` for a single-text task, ``"Annotator identity"``."""
    if kind == Kind.AUTHOR:
        return "Annotator identity"
    if fields:
        return f"{' and '.join(fields).replace('_', ' ').capitalize()} only (input-only baseline)"
    return "Input-only baseline"


@dataclass
class HistoryRow:
    """One round's figure of a probe: ``accuracy`` and ``chance`` in [0, 1] (None when not measured,
    with ``status`` saying why), ``n`` examples; ``is_this_round`` marks the round the page is about."""

    round_number: int
    status: str
    accuracy: float | None
    chance: float | None
    n: int
    is_this_round: bool = False

    @property
    def accuracy_text(self) -> str:
        return percent(self.accuracy)

    @property
    def chance_text(self) -> str:
        return percent(self.chance)

    @property
    def status_text(self) -> str:
        """The status in words, lower case ("not measurable")."""
        return str(Status(self.status).label).lower() if self.status in Status.values else self.status


@dataclass
class ProbeView:
    """A probe of a round as shown: ``probe`` (None when never run), its ``title``, ``question``,
    ``verdict`` (a sentence comparing accuracy with chance; the reason when not measured) and
    ``history`` (the same probe on every round up to this one, lowest number first)."""

    kind: str
    title: str
    question: str
    probe: ArtefactProbe | None
    verdict: str
    history: list[HistoryRow] = field(default_factory=list)

    @property
    def interval(self) -> list[float] | None:
        return (self.probe.details or {}).get("interval") if self.probe else None

    @property
    def interval_text(self) -> str:
        """``"[61.0%, 82.3%]"``, or ``""`` when not measured."""
        interval = self.interval
        return f"[{percent(interval[0])}, {percent(interval[1])}]" if interval else ""

    @property
    def accuracy_text(self) -> str:
        return percent(self.probe.accuracy if self.probe else None)

    @property
    def chance_text(self) -> str:
        return percent(self.probe.chance if self.probe else None)

    @property
    def grouped_by(self) -> str:
        """How the folds grouped the examples, in words (``data.GROUPED_BY_*``); "" for a probe measured
        before folds were grouped."""
        return (self.probe.details or {}).get("folds_grouped_by", "") if self.probe else ""

    @property
    def left_out(self) -> list[tuple[str, int]]:
        """``[(reason, count)]`` of the examples the probe left out, most frequent first."""
        return list(((self.probe.details or {}).get("left_out") or {}).items()) if self.probe else []

    @property
    def top_features(self) -> list[tuple[str, list[str]]]:
        """``[(label, words)]``: the words that most predict each label (input-only baseline only)."""
        return list(((self.probe.details or {}).get("top_features") or {}).items()) if self.probe else []

    @property
    def margin(self) -> float | None:
        """Accuracy minus chance, in [−1, 1] (None when not measured)."""
        if self.probe is None or self.probe.accuracy is None or self.probe.chance is None:
            return None
        return self.probe.accuracy - self.probe.chance


def verdict(probe: ArtefactProbe | None) -> str:
    """One sentence on ``probe``: how far its accuracy is above chance and whether the Wilson 95%
    interval of the accuracy clears chance (e.g. "100.0% against 50.0% by chance: 50.0 points above,
    beyond the 95% interval."); the stored reason when it was not measured; "not run yet" when None."""
    if probe is None:
        return "Not run yet: the probes run when the round stops collecting."
    if probe.status != Status.DONE:
        reason = probe.error or probe.get_status_display()
        return reason[0].upper() + reason[1:] + ("" if reason.endswith(".") else ".")
    # The difference of the two figures as shown (one decimal each), so that the sentence adds up.
    points = round(probe.accuracy * 100, 1) - round(probe.chance * 100, 1)
    low, high = (probe.details or {}).get("interval") or (probe.accuracy, probe.accuracy)
    if low > probe.chance:
        where = "the 95% interval of the accuracy lies above chance: the data carries a cue"
    elif high < probe.chance:
        # Below chance is not "no cue": a classifier without a cue scores about chance. Wholly below
        # it, the folds leak: a test example's twin (or group mate) of the other class was in training.
        where = (
            "the 95% interval of the accuracy lies below chance: a fold leak (examples whose twin or "
            "group mate of another class sat in the training folds), not a measure of the cue; group "
            "the examples (metadata group or matched_id) and run the probes again"
        )
    else:
        where = "chance lies inside the 95% interval of the accuracy: no measured cue"
    side = "above" if points >= 0 else "below"
    return (
        f"{probe.accuracy:.1%} against {probe.chance:.1%} by chance "
        f"({abs(points):.1f} points {side}); {where}."
    )


def probes_of_round(round_: Round) -> dict[str, ArtefactProbe]:
    """``{kind: ArtefactProbe}`` of ``round_`` (a kind never run is absent)."""
    return {probe.kind: probe for probe in ArtefactProbe.objects.filter(round=round_)}


def probe_history(round_: Round, kind: str) -> list[HistoryRow]:
    """The probe ``kind`` on every round of ``round_``'s task numbered up to ``round_``'s, lowest first;
    a round without it is left out. One query."""
    rows = (
        ArtefactProbe.objects.filter(
            round__task_id=round_.task_id, round__number__lte=round_.number, kind=kind
        )
        .order_by("round__number")
        .values_list("round__number", "status", "accuracy", "chance", "n")
    )
    return [
        HistoryRow(number, status, accuracy, chance, n, is_this_round=number == round_.number)
        for number, status, accuracy, chance, n in rows
    ]


def round_probe_views(round_: Round) -> list[ProbeView]:
    """Both probes of ``round_`` (input-only first) as shown on the round page (``ProbeView``)."""
    stored = probes_of_round(round_)
    views = []
    for kind in (Kind.INPUT_ONLY, Kind.AUTHOR):
        probe = stored.get(kind)
        fields = (probe.details or {}).get("fields") if probe is not None else None
        views.append(
            ProbeView(
                kind=kind,
                title=probe_title(kind, fields if kind == Kind.INPUT_ONLY else None),
                question=QUESTIONS[kind],
                probe=probe,
                verdict=verdict(probe),
                history=probe_history(round_, kind),
            )
        )
    return views


def last_run(views: list[ProbeView]) -> datetime | None:
    """When the round's probes were last measured (None when never)."""
    times = [v.probe.created_at for v in views if v.probe is not None]
    return max(times) if times else None


def release_card_probes(task, round_number: int) -> list[ProbeView]:
    """The probes of ``task``'s round ``round_number`` for a release's dataset card
    (``cycle.releases.services.dataset_card``): as on the round page; empty when the round is unknown."""
    round_ = Round.objects.filter(task=task, number=round_number).first()
    return round_probe_views(round_) if round_ is not None else []
