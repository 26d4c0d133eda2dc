"""Artefact probes (cycle/probes/): the input-only baseline and the annotator-identity probe on
synthetic rounds whose answer is known, bad data, the job queued when a round stops collecting, the round
page, the API, the release card, the command and the admin action."""

from __future__ import annotations

import copy
import random

import pytest
from django.core.management import call_command
from django.urls import reverse

from core.text_probe import NotMeasurable, cross_validated_accuracy
from cycle.models import ArtefactProbe
from cycle.probes.services import MIN_AUTHOR_EXAMPLES, run_round_probes
from cycle.releases.services import create_release, release_dir
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Task
from tasks.services import close_round, ensure_round, set_current_round
from tests.factories.accounts import UserFactory
from tests.factories.annotation import make_example
from tests.factories.tasks import open_round

SETTLED = "validated_correct"
#: Filler words, none of them a cue: drawn at random for every text, from so many that two texts rarely
#: share one (a shared filler word would be a chance cue of its own).
WORDS = [f"w{i}" for i in range(5000)]


def filler(rng: random.Random, k: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(k))


def probes(round_) -> dict[str, ArtefactProbe]:
    """The round's stored probes by kind."""
    return {p.kind: p for p in ArtefactProbe.objects.filter(round=round_)}


def run(round_) -> dict[str, ArtefactProbe]:
    """Run the round's probes now; the new rows by kind."""
    return {p.kind: p for p in run_round_probes(round_=round_)}


@pytest.fixture
def writers(db):
    return [UserFactory(username=f"writer{i}") for i in range(4)]


@pytest.fixture
def cue_round(hate_round, writers):
    """40 validated examples, 20 per label: every hateful text holds "xyz", nothing else tells them apart;
    written in turn by the four writers (10 each, no habit of their own)."""
    rng = random.Random(1)
    for i in range(40):
        label = "hateful" if i % 2 == 0 else "not-hateful"
        text = filler(rng) + (" xyz" if label == "hateful" else "")
        make_example(hate_round, writers[i % 4], label=label, status=SETTLED, inputs={"statement": text})
    return hate_round


def test_a_word_that_gives_the_label_away_is_found(cue_round):
    input_only = run(cue_round)["input_only"]
    assert input_only.status == "done"
    # 40 of 40 right out of fold; chance = 20 / 40.
    assert (input_only.accuracy, input_only.chance) == (1.0, 0.5)
    assert (input_only.n, input_only.n_classes, input_only.folds) == (40, 2, 5)
    assert input_only.details["fields"] == ["statement"]
    assert input_only.details["classes"] == {"hateful": 20, "not-hateful": 20}
    assert input_only.details["top_features"]["hateful"][0] == "xyz"
    assert input_only.details["fold_accuracies"] == [1.0] * 5
    low, high = input_only.details["interval"]
    assert low > 0.5 and high == 1.0


def test_writers_with_a_signature_word_are_told_apart(hate_round):
    """Three writers, ten examples each, each ending every text with their own word; labels at random."""
    rng = random.Random(2)
    authors = [UserFactory(username=f"sig{i}") for i in range(3)]
    for author, signature in zip(authors, ["alpha", "beta", "gamma"], strict=True):
        for _ in range(10):
            make_example(
                hate_round,
                author,
                label=rng.choice(["hateful", "not-hateful"]),
                status=SETTLED,
                inputs={"statement": f"{filler(rng)} {signature}"},
            )
    author = run(hate_round)["author"]
    assert author.status == "done"
    # 30 of 30 right; the most prolific author wrote 10 of 30.
    assert author.accuracy == 1.0
    assert author.chance == pytest.approx(10 / 30)
    assert (author.n, author.n_classes, author.folds) == (30, 3, 5)
    assert author.details["authors"] == 3 and author.details["authors_total"] == 3
    assert author.details["examples_per_author"] == [10, 10, 10]
    # Nobody is named: no user id or name in what is stored.
    stored = repr(author.details)
    assert not any(a.username in stored for a in authors)
    assert "classes" not in author.details


def test_random_words_stay_near_chance(hate_round, writers):
    """No cue at all: labels and authors drawn independently of the random words (seed 3)."""
    rng = random.Random(3)
    for i in range(60):
        make_example(
            hate_round,
            writers[i % 3],
            label="hateful" if i % 2 else "not-hateful",
            status=SETTLED,
            inputs={"statement": filler(rng)},
        )
    rows = run(hate_round)
    input_only, author = rows["input_only"], rows["author"]
    assert input_only.chance == 0.5 and author.chance == pytest.approx(20 / 60)
    # With this seed: within 0.15 of chance, and the 95% interval holds chance.
    assert abs(input_only.accuracy - 0.5) < 0.15
    assert abs(author.accuracy - 1 / 3) < 0.15
    for row in (input_only, author):
        low, high = row.details["interval"]
        assert low <= row.chance <= high


def test_the_nli_baseline_reads_the_hypothesis_only(nli_task, writers):
    """The premise gives the label away, the hypothesis does not: the hypothesis-only baseline stays near
    chance. Then hypotheses with "not" for every contradiction: it finds them."""
    round_ = open_round(nli_task)
    rng = random.Random(4)
    labels = ["entailment", "neutral", "contradiction"]
    for i in range(30):
        label = labels[i % 3]
        context = Context.objects.create(
            task=nli_task, round=round_, data={"premise": f"{label} {filler(rng)}"}
        )
        make_example(
            round_, writers[i % 2], label=label, status=SETTLED, context=context,
            inputs={"hypothesis": filler(rng)},
        )  # fmt: skip
    baseline = run(round_)["input_only"]
    assert baseline.details["fields"] == ["hypothesis"]
    assert baseline.chance == pytest.approx(1 / 3)
    assert baseline.accuracy < 0.6

    round_2 = ensure_round(task=nli_task, number=2)
    for i in range(30):
        label = labels[i % 3]
        context = Context.objects.create(task=nli_task, round=round_2, data={"premise": filler(rng)})
        hypothesis = filler(rng) + (" not" if label == "contradiction" else "")
        make_example(
            round_2, writers[i % 2], label=label, status=SETTLED, context=context,
            inputs={"hypothesis": hypothesis},
        )  # fmt: skip
    baseline = run(round_2)["input_only"]
    # 10 contradictions found by "not"; the other two labels have no cue: at least 10 of 30 right.
    assert baseline.details["top_features"]["contradiction"][0] == "not"
    assert baseline.accuracy > baseline.chance


# --- what goes in -------------------------------------------------------------------------------------


def test_only_settled_validated_examples_written_by_people_go_in(hate_round, writers):
    for i in range(10):
        make_example(
            hate_round, writers[0], label="hateful", status=SETTLED, inputs={"statement": f"a{i} xyz"}
        )
        make_example(
            hate_round, writers[1], label="not-hateful", status=SETTLED, inputs={"statement": f"b{i}"}
        )
    make_example(hate_round, writers[2])  # pending
    make_example(hate_round, writers[2], status="validated_incorrect")
    make_example(hate_round, writers[2], status="flagged")
    make_example(hate_round, writers[2], status=SETTLED, is_retracted=True)
    make_example(hate_round, None, status=SETTLED, source="rating", model_wrong=None)
    make_example(hate_round, None, status=SETTLED, source="imported", inputs={"statement": "imported xyz"})
    rows = run(hate_round)
    # 20 written + 1 imported; the rating, pending, rejected, flagged and retracted ones are out.
    assert rows["input_only"].n == 21
    assert rows["input_only"].details["pending"] == 1
    assert rows["author"].n == 20
    assert rows["author"].details["left_out"] == {"no known author (imported)": 1}


def test_one_label_only_is_not_measurable_with_its_reason(hate_round, writers):
    for i in range(6):
        make_example(hate_round, writers[0], label="hateful", status=SETTLED, inputs={"statement": f"s{i}"})
    rows = run(hate_round)
    assert rows["input_only"].status == "not_measurable"
    assert rows["input_only"].accuracy is None
    assert "only one label (hateful) among 6 example(s)" in rows["input_only"].error
    # One author with 6 examples: fewer than two writers to tell apart.
    assert rows["author"].status == "not_measurable"
    assert rows["author"].error == (
        f"not measurable: 1 of the round's 1 known author(s) wrote at least {MIN_AUTHOR_EXAMPLES} "
        "validated examples; telling writers apart needs at least 2"
    )


def test_an_empty_round_is_not_measurable(hate_round):
    rows = run(hate_round)
    assert rows["input_only"].status == "not_measurable"
    assert "no validated example" in rows["input_only"].error
    assert rows["author"].status == "not_measurable"
    assert "0 of the round's 0 known author(s)" in rows["author"].error


def test_empty_emoji_and_right_to_left_texts_do_not_crash(hate_round, writers):
    """Blank texts are left out and counted; emoji and Arabic or Hebrew words are words like any other."""
    for i in range(6):
        make_example(hate_round, writers[0], label="hateful", status=SETTLED, inputs={"statement": f"🤬 {i}"})
        make_example(
            hate_round,
            writers[1],
            label="not-hateful",
            status=SETTLED,
            inputs={"statement": f"مرحبا שלום {i}"},
        )
    make_example(hate_round, writers[0], label="hateful", status=SETTLED, inputs={"statement": "   "})
    make_example(hate_round, writers[1], label="hateful", status=SETTLED, inputs={"statement": ""})
    rows = run(hate_round)
    baseline = rows["input_only"]
    assert baseline.status == "done" and baseline.n == 12
    assert baseline.details["left_out"] == {"empty text (no word or symbol)": 2}
    assert baseline.accuracy == 1.0  # the emoji and the two scripts tell the labels apart
    assert baseline.details["top_features"]["hateful"][0] == "🤬"
    assert rows["author"].status == "done" and rows["author"].accuracy == 1.0


def test_a_label_with_a_single_example_is_named():
    with pytest.raises(NotMeasurable, match="the label b has a single example"):
        cross_validated_accuracy(["x a", "y a", "z b"], ["a", "a", "b"], what="label")


def test_folds_shrink_to_the_smallest_class():
    texts = ["cue one", "cue two", "cue three", "plain one", "plain two", "plain three", "plain four"]
    figures = cross_validated_accuracy(texts, ["c", "c", "c", "p", "p", "p", "p"])
    assert figures.folds == 3 and figures.n == 7 and figures.chance == pytest.approx(4 / 7)


def test_red_teaming_and_span_tasks(qa_round, writers):
    red = Task.objects.create(slug="red", name="Red", config=copy.deepcopy(RED_TEAM_CONFIG))
    red_round = ensure_round(task=red, number=1)
    rows = run(red_round)
    assert {r.status for r in rows.values()} == {"not_applicable"}
    assert rows["author"].error.startswith("not applicable: a red-teaming task's examples are conversations")

    context = qa_round.contexts.first()
    for i in range(10):
        for w, word in ((0, "when"), (1, "who")):
            make_example(
                qa_round, writers[w], status=SETTLED, context=context, inputs={"question": f"{word} q{i}?"},
                target={"answer": "x", "answer_start": 0},
            )  # fmt: skip
    rows = run(qa_round)
    assert rows["input_only"].status == "not_applicable"
    assert (
        rows["input_only"].error == "not applicable: the target is an answer span in the passage, not a label"
    )
    assert rows["author"].status == "done" and rows["author"].accuracy == 1.0


def test_running_again_replaces_the_rounds_probes(cue_round, writers):
    first = {kind: p.accuracy for kind, p in run(cue_round).items()}
    again = {kind: p.accuracy for kind, p in run(cue_round).items()}
    assert first == again  # the same data, the same seed
    assert ArtefactProbe.objects.filter(round=cue_round).count() == 2
    make_example(cue_round, writers[0], label="hateful", status=SETTLED, inputs={"statement": "more xyz"})
    run_round_probes(round_=cue_round)
    assert ArtefactProbe.objects.filter(round=cue_round).count() == 2
    assert probes(cue_round)["input_only"].n == 41


def test_a_crashing_probe_is_stored_as_failed_and_the_other_still_runs(cue_round, monkeypatch):
    from cycle.probes import services

    def crash(cfg, data):
        raise RuntimeError("boom")

    monkeypatch.setattr(services, "measure_author", crash)
    rows = run(cue_round)
    assert rows["author"].status == "failed" and rows["author"].error == "RuntimeError: boom"
    assert rows["input_only"].status == "done"


# --- when they run -----------------------------------------------------------------------------------


def test_closing_a_round_runs_its_probes(cue_round, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        close_round(round_=cue_round)
    assert len(callbacks) == 1  # round_ended queued the job; the service's save did not queue it twice
    assert probes(cue_round)["input_only"].accuracy == 1.0


def test_starting_another_round_runs_the_probes_of_the_one_it_replaces(
    cue_round, hate_task, django_capture_on_commit_callbacks
):
    round_2 = ensure_round(task=hate_task, number=2)
    with django_capture_on_commit_callbacks(execute=True):
        set_current_round(task=hate_task, round_=round_2)
    assert set(probes(cue_round)) == {"input_only", "author"}
    assert not probes(round_2)


def test_closing_in_the_round_admin_form_runs_them_once(cue_round, django_capture_on_commit_callbacks):
    cue_round.is_closed = True
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        cue_round.save()  # the Round admin's form: a whole-row save, no round_ended
    assert len(callbacks) == 1 and len(probes(cue_round)) == 2
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        cue_round.save()  # probed already: editing the closed round again queues nothing
    assert callbacks == []


def test_the_command_runs_them_now(cue_round, capsys):
    call_command("run_artefact_probes", "hate-speech", "1")
    out = capsys.readouterr().out
    assert (
        "hate-speech round 1, Input-only baseline: 100.0% against 50.0% by chance (50.0 points above)" in out
    )
    assert len(probes(cue_round)) == 2


def test_the_round_admin_action_queues_them_for_owners(
    client, cue_round, owner, outsider, password, django_capture_on_commit_callbacks
):
    outsider.is_staff = True
    outsider.save(update_fields=["is_staff"])
    assert client.login(username=outsider.username, password=password)
    action = {"action": "run_artefact_probes", "_selected_action": [cue_round.pk]}
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        client.post(reverse("admin:tasks_round_changelist"), action)
    assert callbacks == [] and not probes(cue_round)  # not an owner: nothing queued

    assert client.login(username=owner.username, password=password)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(reverse("admin:tasks_round_changelist"), action, follow=True)
    assert response.status_code == 200
    assert "the artefact probes are queued" in response.text
    assert len(callbacks) == 1
    assert probes(cue_round)["input_only"].accuracy == 1.0  # the job ran inline (Q_CLUSTER sync)


# --- where they show -----------------------------------------------------------------------------------


@pytest.fixture
def two_rounds(cue_round, hate_task, writers):
    """Round 1 (the cue round, probed) and round 2: 20 examples without a cue, probed."""
    run_round_probes(round_=cue_round)
    round_2 = ensure_round(task=hate_task, number=2)
    rng = random.Random(5)
    for i in range(20):
        make_example(
            round_2, writers[i % 2], label="hateful" if i % 2 else "not-hateful", status=SETTLED,
            inputs={"statement": filler(rng)},
        )  # fmt: skip
    run_round_probes(round_=round_2)
    return cue_round, round_2


def test_the_round_page_shows_the_probes_against_chance_and_earlier_rounds(client, two_rounds):
    round_1, round_2 = two_rounds
    page = client.get("/tasks/hate-speech/rounds/2/")
    assert page.status_code == 200
    text = page.text
    assert "Statement only (input-only baseline)" in text and "Annotator identity" in text
    assert "<caption>Statement only (input-only baseline), round by round</caption>" in text
    # The history table: round 1's 100.0% against 50.0% (n 40), linked, then this round.
    assert 'href="/tasks/hate-speech/rounds/1/">1</a></th>' in text
    assert '<td class="num">100.0%</td><td class="num">50.0%</td>' in text
    assert "2 (this round)" in text
    first = client.get("/tasks/hate-speech/rounds/1/").text
    assert "100.0% against 50.0% by chance (50.0 points above)" in first
    assert "the 95% interval of the accuracy lies above chance" in first
    assert "xyz" in first


def test_the_round_page_before_any_run_and_unknown_rounds(client, hate_round):
    page = client.get("/tasks/hate-speech/rounds/1/")
    assert page.status_code == 200 and "Not run yet" in page.text
    for bad in ("9", "0", "x", "-1", "99999999999999999999"):
        assert client.get(f"/tasks/hate-speech/rounds/{bad}/").status_code == 404
    assert client.get("/tasks/no-such-task/rounds/1/").status_code == 404


def test_the_task_page_links_each_round_to_its_page(client, hate_round):
    page = client.get(reverse("tasks:detail", args=["hate-speech"]))
    assert 'href="/tasks/hate-speech/rounds/1/"' in page.text


def test_the_api_gives_the_figures_and_the_history(api, two_rounds):
    response = api(None).get("/api/tasks/hate-speech/rounds/1/probes/")
    assert response.status_code == 200
    body = response.json()
    assert (body["task"], body["round"], body["applicable"]) == ("hate-speech", 1, True)
    baseline, author = body["probes"]
    assert baseline["kind"] == "input_only" and author["kind"] == "author"
    assert (baseline["status"], baseline["accuracy"], baseline["chance"], baseline["margin"]) == (
        "done",
        1.0,
        0.5,
        0.5,
    )
    assert (baseline["n"], baseline["n_classes"], baseline["folds"]) == (40, 2, 5)
    assert baseline["history"] == [{"round": 1, "status": "done", "accuracy": 1.0, "chance": 0.5, "n": 40}]
    later = api(None).get("/api/tasks/hate-speech/rounds/2/probes/").json()
    assert [h["round"] for h in later["probes"][0]["history"]] == [1, 2]
    assert api(None).get("/api/tasks/hate-speech/rounds/3/probes/").status_code == 404


def test_the_api_before_any_run(api, hate_round):
    body = api(None).get("/api/tasks/hate-speech/rounds/1/probes/").json()
    assert [p["status"] for p in body["probes"]] == ["not_run", "not_run"]


def test_the_release_card_has_an_artefact_probes_section(settings, tmp_path, two_rounds, owner):
    settings.DYNABENCH_RELEASES_DIR = tmp_path / "releases"
    round_1, round_2 = two_rounds
    release, _ = create_release(round_=round_2, user=owner)
    card = (release_dir(release) / "README.md").read_text(encoding="utf-8")
    section = card.split("## Artefact probes\n", 1)[1].split("## Licence", 1)[0]
    assert "* **Statement only (input-only baseline)**: " in section
    assert "By round (accuracy, chance, n): 1: 100.0%, 50.0%, 40; 2: " in section
    assert "n = 20, 2 labels, 5 folds" in section


def test_the_verdict_gives_the_difference_of_the_figures_it_shows():
    from cycle.models import ArtefactProbe
    from cycle.probes.selectors import verdict

    # 0.61976 and 0.33334 show as 62.0% and 33.3%; their difference unrounded is 28.64 points.
    probe = ArtefactProbe(
        status=ArtefactProbe.Status.DONE,
        accuracy=0.61976,
        chance=0.33334,
        details={"interval": [0.608, 0.631]},
    )
    assert verdict(probe).startswith("62.0% against 33.3% by chance (28.7 points above)")


def twins(pairs: int = 100):
    """Minimal pairs whose two texts hold the same words (so a bag of words cannot tell them apart) and
    opposite labels, as HatemojiBuild's perturbations nearly are: texts, labels, pair keys."""
    texts, labels, groups = [], [], []
    for i in range(pairs):
        texts += [f"word{i} filler{i % 6}", f"filler{i % 6} word{i}"]
        labels += ["hateful", "not-hateful"] if i % 2 else ["not-hateful", "hateful"]
        groups += [f"pair{i}", f"pair{i}"]
    return texts, labels, groups


def test_folds_that_split_a_pair_leak_and_grouped_folds_do_not():
    texts, labels, groups = twins()
    # Split apart, the twin in training carries the test text's words with the other label: every
    # prediction of a split pair is wrong. 17 of 200 right here (the pairs that stayed together).
    leaking = cross_validated_accuracy(texts, labels)
    assert leaking.accuracy == pytest.approx(17 / 200) and leaking.interval[1] < 0.5
    # Kept in one fold, the two texts get the same prediction: one right, one wrong: exactly 50%.
    grouped = cross_validated_accuracy(texts, labels, groups=groups)
    assert (grouped.accuracy, grouped.chance, grouped.groups, grouped.folds) == (0.5, 0.5, 100, 5)
    with pytest.raises(NotMeasurable, match="single group"):
        cross_validated_accuracy(texts[:4], labels[:4], groups=["one"] * 4)
    with pytest.raises(ValueError, match="groups"):
        cross_validated_accuracy(texts, labels, groups=groups[:3])


def test_groups_join_declared_groups_and_perturbation_pairs():
    from cycle.probes.data import (
        GROUPED_BY_DECLARED,
        GROUPED_BY_DECLARED_AND_PAIRS,
        GROUPED_BY_PAIRS,
        NOT_GROUPED,
        example_groups,
    )

    # a <-> b a pair, c names a partner that is not in the round, d and e share a declared group
    # and e is paired with f: {a, b}, {c}, {d, e, f}.
    keys, how = example_groups(
        ["a", "b", "c", "d", "e", "f"],
        [
            {"matched_id": "b"},
            {"matched_id": "a"},
            {"matched_id": "zz"},
            {"group": 7},
            {"group": "7", "matched_id": "f"},
            {},
        ],
    )
    assert how == GROUPED_BY_DECLARED_AND_PAIRS
    assert keys[0] == keys[1] and keys[3] == keys[4] == keys[5]
    assert len({keys[0], keys[2], keys[3]}) == 3
    assert example_groups(["a", "b"], [{"matched_id": "b"}, {}])[1] == GROUPED_BY_PAIRS
    assert example_groups(["", ""], [{"group": "x"}, {"group": "x"}])[1] == GROUPED_BY_DECLARED
    keys, how = example_groups(["", ""], [{"group": True}, {"matched_id": ""}])
    assert how == NOT_GROUPED and keys[0] != keys[1]


def test_a_round_of_twins_is_probed_with_pairs_in_one_fold(hate_round, writers, client):
    texts, labels, _ = twins(30)
    for i, (text, label) in enumerate(zip(texts, labels, strict=True)):
        partner = i + 1 if i % 2 == 0 else i - 1
        make_example(
            hate_round,
            writers[(i // 2) % 4],
            label=label,
            status=SETTLED,
            inputs={"statement": text},
            external_id=f"e{i}",
            metadata={"matched_id": f"e{partner}"},
        )
    probe = run(hate_round)["input_only"]
    assert probe.accuracy == 0.5 and probe.details["groups"] == 30
    assert probe.details["folds_grouped_by"].startswith("perturbation pairs")
    html = client.get(reverse("cycle:round", args=[hate_round.task.slug, hate_round.number])).content.decode()
    assert (
        "grouped by perturbation pairs (an example and its minimally edited twin, metadata matched_id): 30 groups"
        in html
    )


def test_an_accuracy_below_chance_is_a_fold_leak_not_an_absent_cue():
    from cycle.models import ArtefactProbe
    from cycle.probes.selectors import verdict

    probe = ArtefactProbe(
        status=ArtefactProbe.Status.DONE, accuracy=0.431, chance=0.5, details={"interval": [0.41, 0.453]}
    )
    text = verdict(probe)
    assert "a fold leak" in text and "no measured cue" not in text
