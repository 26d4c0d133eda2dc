"""A Prolific-style study walked end to end through the pages, on PostgreSQL (docs/crowd.md).

Three participants enter through the study's link, consent, read the tutorial, take the quiz (one fails
first), write two examples each against the round's target (the stand-in answers "hateful" exactly when
the statement contains "hate"), validate the other two participants' examples, and finish with the
completion code. One is refused past the task's daily cap. The owner then overturns a settled example,
exports the payments and freezes a release. Every figure below is computed by hand in the comments.
"""

from __future__ import annotations

import hashlib
import re
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlencode

import pytest
from auditlog.models import LogEntry
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Example
from crowd.models import LedgerEntry, Participation
from leaderboards.services import split_of
from tasks.models import Quiz, QuizQuestion, TutorialItem
from tests.factories.crowd import make_study

pytestmark = pytest.mark.django_db

CREATE = reverse("annotation:create", args=["hate-speech"])
VALIDATE = reverse("validation:validate", args=["hate-speech"])
TUTORIAL = reverse("tasks:tutorial", args=["hate-speech"])
QUIZ = reverse("tasks:quiz", args=["hate-speech"])

# What each participant writes: statements meant hateful with no "hate" in them, so every one fools the
# stand-in (only model-fooling examples go to validation in this task).
WRITES = {
    "p1": [
        ("they should all go back where they came from", "hateful"),
        ("those people are a disease", "hateful"),
    ],
    "p2": [("those people are vermin", "hateful"), ("keep them out of our streets", "hateful")],
    "p3": [("send every one of them away", "hateful"), ("they are not even human", "hateful")],
}
PIDS = {"p1": "60a1b2c3d4e5f60718293a41", "p2": "60a1b2c3d4e5f60718293a42", "p3": "60a1b2c3d4e5f60718293a43"}

# The verdict each validator casts, by the statement served ("correct" unless listed). Every example has
# exactly two possible validators (the participants who did not write it), so each gets two votes:
#   p1's two examples:   correct, correct      -> validated correct (verified model-fooling), twice
#   p2's first:          p1 correct, p3 incorrect -> no 2 matching votes: stays pending
#   p2's second:         correct, correct      -> validated correct (verified; the owner overturns it)
#   p3's first:          correct, correct      -> validated correct (verified model-fooling)
#   p3's second:         incorrect, incorrect  -> validated incorrect
VERDICTS = {
    ("p3", "those people are vermin"): "incorrect",
    ("p1", "they are not even human"): "incorrect",
    ("p2", "they are not even human"): "incorrect",
}


@pytest.fixture
def study_round(hate_task, hate_round, owner, rule_model):
    """hate-speech round 1 set up as an owner would: quorum 2, a daily cap of 2 examples, a tutorial, a
    two-question quiz with pass mark 1.0 and two attempts, and a Prolific study (2 examples and 4
    validations per submission; 0.50 per example, 0.10 per validation, 0.25 per verified model-fooling
    example, 1.00 reward; 3 places; GBP)."""
    hate_task.validation_quorum = 2
    hate_task.daily_example_cap = 2
    hate_task.save()
    TutorialItem.objects.create(
        task=hate_task,
        text="they are animals",
        label="hateful",
        model_answer="not-hateful",
        fooled_model=True,
        note="Dehumanising without a slur: the model missed it.",
    )
    quiz = Quiz.objects.create(task=hate_task, pass_mark=1.0, max_attempts=2)
    q1 = QuizQuestion.objects.create(
        quiz=quiz, position=1, text="Is 'they are animals' hateful?", choices=["yes", "no"], answer="yes"
    )
    q2 = QuizQuestion.objects.create(
        quiz=quiz,
        position=2,
        text="Does a slur make a statement hateful?",
        choices=["always", "not always"],
        answer="not always",
    )
    study = make_study(hate_round, examples_required=2, validations_required=4)
    return study, {
        "right": {f"q{q1.pk}": "yes", f"q{q2.pk}": "not always"},
        "wrong": {f"q{q1.pk}": "no", f"q{q2.pk}": "not always"},
    }


def _entry_link(study, pid: str, *, key: str | None = None) -> str:
    query = {"PROLIFIC_PID": pid, "STUDY_ID": "60aaaaaaaaaaaaaaaaaaaaaa", "SESSION_ID": f"session-{pid[-2:]}"}
    if key is not None:
        query = {"key": key, **query}
    return f"/study/{study.public_id}/enter/?{urlencode(query)}"


def _write(client: Client, statement: str, label: str):
    form = client.get(CREATE).context["form"]
    return client.post(
        CREATE,
        {
            "statement": statement,
            "label": label,
            "client_token": form["client_token"].value(),
            "started": form["started"].value(),
        },
    )


def _onboard(client: Client, study, pid: str, answers: dict, *, fail_first: dict | None = None):
    """Enter through the link, consent, read the tutorial, take the quiz; return the quiz pages' texts."""
    entered = client.get(_entry_link(study, pid, key=study.entry_key))
    assert entered.status_code == 302 and entered["Location"] == f"/study/{study.public_id}/consent/"
    consent = client.get(entered["Location"])
    assert "I agree to take part in this study." in consent.text
    to_work = client.post(entered["Location"])
    assert to_work["Location"] == CREATE
    # The create page sends a first-timer to the tutorial, then to the quiz.
    first = client.get(CREATE)
    assert first.status_code == 302 and first["Location"].startswith(TUTORIAL)
    assert "Dehumanising without a slur" in client.get(first["Location"]).text
    client.post(TUTORIAL, {"next": CREATE})
    to_quiz = client.get(CREATE)
    assert to_quiz.status_code == 302 and to_quiz["Location"].startswith(QUIZ)
    texts = []
    if fail_first is not None:
        texts.append(client.post(QUIZ, {**fail_first, "next": CREATE}).text)
        assert client.get(CREATE).status_code == 302  # still sent to the quiz
    texts.append(client.post(QUIZ, {**answers, "next": CREATE}).text)
    assert client.get(CREATE).status_code == 200
    return texts


def _validate_four(client: Client, who: str, statements: dict[int, str]):
    for _ in range(4):
        page = client.get(VALIDATE)
        served = int(re.search(r'name="example" value="(\d+)"', page.text).group(1))
        verdict = VERDICTS.get((who, statements[served]), "correct")
        data = {"example": served, "verdict": verdict, "round": 1}
        if verdict == "incorrect":
            data["corrected_label"] = "not-hateful"
        assert client.post(VALIDATE, data).status_code == 302


def test_a_prolific_study_end_to_end(study_round, hate_task, hate_round, owner, password, tmp_path, settings):
    study, answers = study_round
    settings.DYNABENCH_RELEASES_DIR = str(tmp_path / "releases")

    # Without the key, or with a wrong one, nobody enters and nothing is created.
    stranger = Client()
    assert stranger.get(_entry_link(study, PIDS["p1"])).status_code == 403
    assert stranger.get(_entry_link(study, PIDS["p1"], key=study.entry_key[:-2] + "xx")).status_code == 403
    assert Participation.objects.count() == 0

    clients = {who: Client() for who in PIDS}
    _onboard(clients["p1"], study, PIDS["p1"], answers["right"])
    _onboard(clients["p2"], study, PIDS["p2"], answers["right"])
    failed, passed = _onboard(clients["p3"], study, PIDS["p3"], answers["right"], fail_first=answers["wrong"])
    assert "1 of 2" in failed and "did not pass" in failed.lower()
    assert "2 of 2" in passed

    # Consent is recorded once, with its time.
    assert Participation.objects.filter(study=study, consented_at__isnull=False).count() == 3

    for who, pairs in WRITES.items():
        for statement, label in pairs:
            assert _write(clients[who], statement, label).status_code == 302
    # A third example today is past the task's daily cap of 2: refused, nothing stored.
    refused = _write(clients["p1"], "one more try", "hateful")
    assert "You have written 2 examples today, this task&#x27;s daily limit" in refused.text
    assert Example.objects.count() == 6
    examples = {e.inputs["statement"]: e for e in Example.objects.all()}
    assert all(e.model_wrong for e in examples.values())

    statements = {e.pk: s for s, e in examples.items()}
    for who in PIDS:
        _validate_four(clients[who], who, statements)

    status = {s: Example.objects.get(pk=e.pk).status for s, e in examples.items()}
    assert status == {
        "they should all go back where they came from": "validated_correct",
        "those people are a disease": "validated_correct",
        "those people are vermin": "pending",
        "keep them out of our streets": "validated_correct",
        "send every one of them away": "validated_correct",
        "they are not even human": "validated_incorrect",
    }

    # Each participant has done the study's amount: the completion code, and the redirect to Prolific.
    for who in PIDS:
        done = clients[who].get(f"/study/{study.public_id}/complete/")
        assert done.status_code == 200
        assert "C0DE1234" in done.text
        assert "https://app.prolific.com/submissions/complete?cc=C0DE1234" in done.text
    assert Participation.objects.filter(study=study, status="completed").count() == 3

    # The owner overturns p2's verified second example in the admin: a reversal row, an audit entry.
    overturned = examples[WRITES["p2"][1][0]]
    admin = Client()
    admin.login(username=owner.username, password=password)
    asked = admin.post(
        "/admin/annotation/example/",
        {"action": "overturn_incorrect", "_selected_action": [overturned.pk]},
        follow=True,
    )
    assert "Overturn 1 example to validated incorrect?" in asked.text  # the action asks first
    page = admin.post(
        "/admin/annotation/example/overturn/", {"verdict": "incorrect", "ids": [overturned.pk]}, follow=True
    )
    assert "Overturned 1 example(s) to incorrect." in page.text
    entry = LogEntry.objects.filter(object_pk=str(overturned.pk), content_type__model="example").latest(
        "timestamp"
    )
    assert entry.actor == owner
    assert entry.changes_dict["status"] == ["validated_correct", "validated_incorrect"]
    assert entry.additional_data["task_id"] == hate_task.pk

    # The ledger, by hand: 6 example rows at 0.50, 12 validation rows at 0.10, bonuses for the four
    # verified model-fooling examples (p1's two, p2's second, p3's first) at 0.25, the reversal of p2's,
    # 3 rewards at 1.00.
    rows = list(LedgerEntry.objects.values_list("worker__crowd_identity__participant_id", "kind", "amount"))
    by_kind: dict[str, list[Decimal]] = {}
    for _, kind, amount in rows:
        by_kind.setdefault(kind, []).append(amount)
    assert {k: (len(v), sum(v)) for k, v in by_kind.items()} == {
        "example": (6, Decimal("3.00")),
        "validation": (12, Decimal("1.20")),
        "bonus": (4, Decimal("1.00")),
        "reversal": (1, Decimal("-0.25")),
        "reward": (3, Decimal("3.00")),
    }
    assert sorted(pid for pid, kind, _ in rows if kind == "bonus") == [
        PIDS["p1"],
        PIDS["p1"],
        PIDS["p2"],
        PIDS["p3"],
    ]
    assert [pid for pid, kind, _ in rows if kind == "reversal"] == [PIDS["p2"]]

    # The round's cost (GBP): total 3.00 + 1.20 + 1.00 - 0.25 + 3.00 = 7.95; 6 collected examples ->
    # 1.325, shown 1.33 (half up); 5 settled (all but p2's pending one) -> 1.59; 3 verified model-fooling
    # (p1's two, p3's first) -> 2.65.
    # Krippendorff's alpha (nominal) over the 12 ordinary votes (the owner verdict is out): 9 "correct",
    # 3 "incorrect", one unit in disagreement: D_o = 2/12, D_e = 2*9*3/(12*11) = 54/132,
    # alpha = 1 - (2/12)/(54/132) = 16/27.
    stats = admin.get("/api/tasks/hate-speech/rounds/1/").json()["statistics"]
    assert stats["cost"] == {
        "currency": "GBP",
        "total": "7.95",
        "per_collected": "1.33",
        "per_validated": "1.59",
        "per_verified_fooling": "2.65",
    }
    assert stats["agreement_alpha"] == pytest.approx(16 / 27)

    # The payments file in Prolific's bulk-bonus format (the reward is paid by Prolific on approval):
    # p1 1.00 + 0.40 + 0.50 = 1.90; p2 1.00 + 0.40 + 0.25 - 0.25 = 1.40; p3 1.00 + 0.40 + 0.25 = 1.65.
    out = tmp_path / "bonus.csv"
    call_command(
        "export_payments", "--study", str(study.public_id), "--output", str(out), "--actor", owner.username
    )
    assert sorted(out.read_text().splitlines()) == sorted(
        [f"{PIDS['p1']},1.90", f"{PIDS['p2']},1.40", f"{PIDS['p3']},1.65"]
    )
    assert LedgerEntry.objects.filter(paid_at__isnull=True).count() == 0
    # A second export has nothing left to pay.
    again = tmp_path / "again.csv"
    call_command("export_payments", "--study", str(study.public_id), "--output", str(again))
    assert not again.exists() or again.read_text().strip() == ""

    # A release of the round: the validated-correct examples (p1's two, p3's first), loadable with datasets, with a hash of its files that a second request keeps.
    made = admin.post("/api/tasks/hate-speech/rounds/1/releases/")
    assert made.status_code == 201, made.content
    release = made.json()
    folder = Path(settings.DYNABENCH_RELEASES_DIR) / "hate-speech" / "round-1" / "v1"
    import datasets

    # Each example sits in the split the trainer gives it (leaderboards.services.split_of: a hash of its id),
    # so which files exist depends on the ids; every row is read from whichever split files there are.
    names = [
        n for n in ("train.jsonl", "dev.jsonl", "test.jsonl") if (folder / n).exists()
    ]  # the manifest's order
    loaded = datasets.load_dataset(
        "json", data_files={n.removesuffix(".jsonl"): str(folder / n) for n in names}
    )
    rows = [row for split in loaded for row in loaded[split]]
    assert sorted(row["inputs"]["statement"] for row in rows) == sorted(
        [
            "they should all go back where they came from",
            "those people are a disease",
            "send every one of them away",
        ]
    )
    for split in loaded:
        for row in loaded[split]:
            assert row["split"] == split == split_of(Example.objects.get(pk=row["example_id"]))
    manifest = "".join(
        f"{hashlib.sha256((folder / name).read_bytes()).hexdigest()}  {name}\n" for name in names
    )
    assert release["sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    second = admin.post("/api/tasks/hate-speech/rounds/1/releases/")
    assert second.status_code == 200 and second.json()["sha256"] == release["sha256"]
    assert second.json()["version"] == 1
