"""The cycle across rounds: every target model against every round's validated test examples.

The paper's claim of a virtuous cycle (Kiela et al. 2021, section 3) is that a later round's target is
fooled less than an earlier one's on the same examples. ``cycle_matrix(task, user)`` reads it off the
stored evaluations: a row per model (the round targets first, in the order of the round they were
first a target of, then any other ready model with a score), a column per round's test dataset
(``round-N-test``: the round's settled validated-correct examples of the test split), and a second
table with the task's static sets (HateCheck, HatemojiCheck...).

A cell is the model's **fooling rate** on the dataset: the share of its items the model gets wrong
under the task's model-wrong rule (``tasks.rules.count_fooled``, stored by the evaluation), with n (the items scored) and the Wilson 95%
interval (``core.intervals.wilson_interval``). For a classifier that is 1 - accuracy; on a static set
it is the error rate.

Two adjacent target rows of one column are compared **pairwise**: both models answered the same items,
so McNemar's exact test on the items only one of them got wrong (``core.paired``) says whether their
rates differ; a note under the table says, for every such pair, whether they differ (p < 0.05) or not.
That needs the ids of the items each got wrong (``metrics["fooled_items"]``, stored by evaluations
since the paired test) on the same items (the same ``metrics["items_digest"]``). For a pair without
them (a score from before, or a dataset whose items changed between the two evaluations) the note falls
back to the intervals: where they overlap, the difference is inside the interval, not a measured
difference.

Nothing is computed from predictions here: only ``Score`` rows are read (status done), so the page
costs a fixed handful of queries (datasets, targets, scores, models, anonymous numbers) whatever the
number of models and rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from core.intervals import wilson_interval
from core.paired import PairedComparison, compare_fooled
from cycle.kinds import rules_for
from leaderboards.models import Dataset, Score
from leaderboards.selectors import datasets_visible_to, display_name
from models_registry.models import RegisteredModel, RoundTarget
from models_registry.selectors import anonymous_numbers, models_visible_to
from tasks.models import Task
from tasks.page_sections import PageSection

INSIDE_THE_INTERVAL = "inside the interval: not a measured difference"


def fooled_of(metrics: dict) -> tuple[int, int] | None:
    """``(fooled, n)`` of a score's ``metrics``, or None when they do not say.

    ``metrics["fooled"]`` (counted by the evaluation since the cycle matrix, ``count_fooled``) is used
    when present; else, for a score with ``accuracy`` and ``n`` (every classifier's evaluation), fooled =
    round((1 - accuracy) * n), exact since accuracy was computed as correct / n. A QA score from before
    the count has only mean F1 and exact match, which do not give the count under the F1 rule: None.
    """
    n = metrics.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return None
    fooled = metrics.get("fooled")
    if isinstance(fooled, int) and not isinstance(fooled, bool) and 0 <= fooled <= n:
        return fooled, n
    acc = metrics.get("accuracy")
    if isinstance(acc, int | float) and not isinstance(acc, bool) and 0 <= acc <= 1:
        return round((1 - acc) * n), n
    return None


@dataclass(frozen=True)
class CycleCell:
    """A model on a dataset: ``fooled`` of ``n`` items wrong, ``rate`` = fooled / n, and the Wilson 95%
    interval ``[low, high]`` of the rate (fractions in [0, 1]). All None when there is no figure:
    ``missing`` says why (``"not evaluated"``: no finished score; ``"not counted"``: a score from before
    the evaluation stored the count, to be re-evaluated)."""

    fooled: int | None = None
    n: int | None = None
    rate: float | None = None
    low: float | None = None
    high: float | None = None
    missing: str = ""
    #: The ids of the items wrong and the digest of the items scored (``leaderboards.evaluation.
    #: items_digest``), for the paired test; None for a score from before they were stored.
    fooled_items: frozenset[int] | None = field(default=None, repr=False, compare=False)
    items_digest: str | None = None

    @property
    def measured(self) -> bool:
        return self.rate is not None

    @property
    def rate_text(self) -> str:
        """The rate as a percentage with one decimal, e.g. ``"40.0%"``; ``"–"`` when not measured."""
        return _percent(self.rate) if self.measured else "–"

    @property
    def interval_text(self) -> str:
        """The interval in percent, e.g. ``"21.9–61.3%"``; ``""`` when not measured."""
        return f"{100 * self.low:.1f}–{100 * self.high:.1f}%" if self.measured else ""


def cell_for(score: Score | None) -> CycleCell:
    """The ``CycleCell`` of one score (None: the model has no finished score on the dataset)."""
    if score is None:
        return CycleCell(missing="not evaluated")
    counts = fooled_of(score.metrics or {})
    if counts is None:
        return CycleCell(missing="not counted")
    fooled, n = counts
    low, high = wilson_interval(fooled, n)
    metrics = score.metrics or {}
    ids, digest = metrics.get("fooled_items"), metrics.get("items_digest")
    paired = (
        isinstance(ids, list)
        and len(ids) == fooled
        and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
        and isinstance(digest, str)
    )
    return CycleCell(
        fooled=fooled,
        n=n,
        rate=fooled / n,
        low=low,
        high=high,
        fooled_items=frozenset(ids) if paired else None,
        items_digest=digest if paired else None,
    )


def paired(a: CycleCell, b: CycleCell) -> PairedComparison | None:
    """McNemar's exact test of two cells of one column (``core.paired``: ``only_first`` the items only
    ``a``'s model got wrong), or None when they were not scored on the same recorded items."""
    if a.fooled_items is None or b.fooled_items is None or a.items_digest != b.items_digest or a.n != b.n:
        return None
    return compare_fooled(a.fooled_items, b.fooled_items, a.n)


@dataclass(frozen=True)
class CycleColumn:
    """A dataset of the matrix: its id, slug and name; ``round`` its round number (None for a static set)."""

    dataset_id: int
    slug: str
    name: str
    round: int | None


@dataclass(frozen=True)
class CycleRow:
    """A model: ``model_id``, ``name`` as the viewer is shown it (``selectors.display_name``),
    ``target_of`` the round numbers it was a target of (ascending; empty: not a target), and one cell
    per column of its table, in column order."""

    model_id: int
    name: str
    target_of: tuple[int, ...]
    cells: list[CycleCell]

    @property
    def is_target(self) -> bool:
        return bool(self.target_of)

    @property
    def target_text(self) -> str:
        """E.g. ``"target of round 2"``, ``"target of rounds 1, 2"``, ``"not a target"``."""
        if not self.target_of:
            return "not a target"
        rounds = ", ".join(str(n) for n in self.target_of)
        return f"target of round{'s' if len(self.target_of) > 1 else ''} {rounds}"


@dataclass(frozen=True)
class CycleNote:
    """Two adjacent target rows of one column: ``later`` (the lower row) and ``earlier`` (the row above
    it) by model id, and ``text`` in words. Compared pairwise (McNemar): ``p_value``, ``differs`` and
    the discordant items (``only_later``, ``only_earlier``: wrong for that model alone); without the
    items recorded, only a pair whose intervals overlap has a note, its text ending with
    ``INSIDE_THE_INTERVAL`` and the test's fields None."""

    dataset_id: int
    later: int
    earlier: int
    text: str
    p_value: float | None = None
    differs: bool | None = None
    only_later: int | None = None
    only_earlier: int | None = None


@dataclass(frozen=True)
class CycleTable:
    """One matrix: ``key`` (``"rounds"`` or ``"static"``), ``title``, ``columns`` (datasets), ``rows``
    (models, the same in both tables) and its ``notes``."""

    key: str
    title: str
    columns: list[CycleColumn]
    rows: list[CycleRow]
    notes: list[CycleNote] = field(default_factory=list)

    @property
    def caption(self) -> str:
        what = "round test set" if self.key == "rounds" else "static test set"
        return (
            f"Fooling rate of {len(self.rows)} model{'s' if len(self.rows) != 1 else ''} on "
            f"{len(self.columns)} {what}{'s' if len(self.columns) != 1 else ''}, with n and 95% interval"
        )

    @property
    def empty_text(self) -> str:
        if self.key == "rounds":
            return "No round has validated test examples yet (a round's test set is built from its settled examples)."
        return "This task has no static test set."


@dataclass(frozen=True)
class CycleMatrix:
    """The cycle of a task: ``rounds`` (a column per round's test dataset, by round) and ``static`` (a
    column per static set, by name); ``rule`` how a wrong answer is decided, in words."""

    task: str
    rule: str
    rounds: CycleTable
    static: CycleTable

    @property
    def tables(self) -> list[CycleTable]:
        """``[rounds, static]``, in the page's order."""
        return [self.rounds, self.static]


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def overlapping(a: CycleCell, b: CycleCell) -> bool:
    """True when both cells are measured and their intervals overlap (share at least one point).

    Overlapping 95% intervals do not prove the rates equal; they mean the data cannot tell them apart at
    that level, which is what the note says. (Non-overlap is the stricter test: two rates can differ
    significantly while their intervals overlap slightly.)
    """
    if not (a.measured and b.measured):
        return False
    return max(a.low, b.low) <= min(a.high, b.high)


def interval_notes(columns: list[CycleColumn], rows: list[CycleRow]) -> list[CycleNote]:
    """A note per column and pair of adjacent target rows (a later target below an earlier one), column
    by column, top to bottom: McNemar's exact test when both were scored on the same recorded items
    (``paired``), else, where their intervals overlap (``overlapping``), that the difference is inside
    the interval. Rows that are not targets are not compared."""
    targets = [row for row in rows if row.is_target]
    notes = []
    for index, column in enumerate(columns):
        for earlier, later in zip(targets, targets[1:], strict=False):
            a, b = earlier.cells[index], later.cells[index]
            if not (a.measured and b.measured):
                continue
            both = (
                f"{column.name}: {later.name} ({later.target_text}) {_percent(b.rate)} "
                f"[{_percent(b.low)}, {_percent(b.high)}] against {earlier.name} ({earlier.target_text}) "
                f"{_percent(a.rate)} [{_percent(a.low)}, {_percent(a.high)}]"
            )
            test = paired(b, a)
            if test is not None:
                verdict = "they differ" if test.differs else "no measured difference"
                text = (
                    f"{both}: {verdict} (McNemar's exact test on the {test.n} items both answered: "
                    f"{test.only_first} wrong for {later.name} alone, {test.only_second} for "
                    f"{earlier.name} alone; p {_p(test.p_value)})."
                )
                notes.append(
                    CycleNote(
                        column.dataset_id,
                        later.model_id,
                        earlier.model_id,
                        text,
                        test.p_value,
                        test.differs,
                        test.only_first,
                        test.only_second,
                    )
                )
            elif overlapping(a, b):
                text = f"{both}: {INSIDE_THE_INTERVAL}."
                notes.append(CycleNote(column.dataset_id, later.model_id, earlier.model_id, text))
    return notes


def _p(value: float) -> str:
    """A p-value as the notes write it after "p": "= 0.031", "< 0.001"."""
    return "< 0.001" if value < 0.001 else f"= {value:.3f}"


def cycle_matrix(task: Task, user) -> CycleMatrix:
    """The cycle matrix of ``task`` as ``user`` may see it.

    Columns: the task's round datasets of the test split (one per round that has validated test
    examples) and its static sets, among the datasets ``user`` may see (``datasets_visible_to``).
    Rows: the models ``user`` may see (``models_visible_to``) that were a target of some round of the
    task, ordered by the first round they were a target of, then their position in it, then id; then
    the other ready models with a finished score on one of the columns, by the name shown. Anonymous
    models are named as the viewer is shown them.

    Returns:
        A ``CycleMatrix``; its tables have no rows when no model qualifies, no columns when the task has
        no such dataset (nor for a red-teaming task, whose targets are generative models).
    """
    # A red-teaming task's targets are generative models, ranked on the generative leaderboard.
    datasets: list[Dataset] = []
    if not rules_for(task.cfg).generative:
        datasets = list(
            datasets_visible_to(user)
            .filter(task=task)
            .filter(
                Q(kind=Dataset.Kind.ROUND, split="test", round__isnull=False) | Q(kind=Dataset.Kind.STATIC)
            )
            .select_related("round")
            .order_by("round__number", "name", "id")
        )
    round_columns = [
        CycleColumn(d.pk, d.slug, d.name, d.round.number) for d in datasets if d.kind == Dataset.Kind.ROUND
    ]
    static_columns = [
        CycleColumn(d.pk, d.slug, d.name, None)
        for d in sorted(datasets, key=lambda d: (d.name, d.pk))
        if d.kind == Dataset.Kind.STATIC
    ]

    visible = models_visible_to(user, task)
    target_rounds: dict[int, list[tuple[int, int]]] = {}
    for model_id, number, position in (
        RoundTarget.objects.filter(round__task=task, model__in=visible)
        .values_list("model_id", "round__number", "position")
        .order_by("round__number", "position", "pk")
    ):
        target_rounds.setdefault(model_id, []).append((number, position))

    scores = {
        (s.model_id, s.dataset_id): s
        for s in Score.objects.filter(
            dataset__in=[d.pk for d in datasets], model__in=visible, status=Score.Status.DONE
        ).only("model_id", "dataset_id", "metrics")
    }
    scored_ids = {model_id for model_id, _ in scores}
    # A target is listed whatever its status (its row says "not evaluated"); another model only once
    # it is ready and has a figure here.
    models = list(
        visible.filter(
            Q(pk__in=list(target_rounds)) | Q(pk__in=list(scored_ids), status=RegisteredModel.Status.READY)
        )
    )
    numbers = anonymous_numbers(task)
    owner = task.is_owner(user)
    names = {model.pk: display_name(user, model, numbers, owner) for model in models}

    def order(model: RegisteredModel):
        if model.pk in target_rounds:
            first_round, position = target_rounds[model.pk][0]
            return (0, first_round, position, "", model.pk)
        # By the name shown: an anonymous model's real name must not show through its place.
        return (1, 0, 0, names[model.pk].casefold(), model.pk)

    def rows_for(columns: list[CycleColumn]) -> list[CycleRow]:
        return [
            CycleRow(
                model_id=model.pk,
                name=names[model.pk],
                target_of=tuple(sorted({n for n, _ in target_rounds.get(model.pk, [])})),
                cells=[cell_for(scores.get((model.pk, c.dataset_id))) for c in columns],
            )
            for model in sorted(models, key=order)
        ]

    round_rows, static_rows = rows_for(round_columns), rows_for(static_columns)
    rule = rules_for(task.cfg).cycle_rule(task.cfg)
    return CycleMatrix(
        task=task.slug,
        rule=rule,
        rounds=CycleTable(
            "rounds",
            "Round targets on each round's validated test examples",
            round_columns,
            round_rows,
            interval_notes(round_columns, round_rows),
        ),
        static=CycleTable(
            "static",
            "Error rate on the static test sets",
            static_columns,
            static_rows,
            interval_notes(static_columns, static_rows),
        ),
    )


def task_page_section(request, task: Task) -> PageSection | None:
    """The cycle matrix as a section of the task page (``tasks.page_sections``, registered in
    ``LeaderboardsConfig.ready``); None for a red-teaming task, whose targets are generative models
    ranked on the generative leaderboard instead."""
    if rules_for(task.cfg).generative:
        return None
    return PageSection("cycle/_cycle_matrix.html", {"cycle": cycle_matrix(task, request.user)})
