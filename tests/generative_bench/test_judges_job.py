"""Making a judge and running it (``generative_bench.judges.services`` and ``jobs``): against the loopback
chat server answering what each test chooses, and once against the real SmolLM2. The job judges the
task's human-judged conversations and its replayed answers, greedily, reads awkward replies, stores
unreadable and failed ones, resumes, and never settles anything."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from annotation.models import Example, Prediction
from generative_bench.judges import jobs, prompts
from generative_bench.judges.jobs import run_judge_job
from generative_bench.judges.services import JudgeError, create_judge, run_judge
from generative_bench.models import Judge, JudgeVerdict, ReplayAnswer
from models_registry.models import RegisteredModel
from tasks.rubric import Rubric
from tests.generative_bench.judge_world import (
    chat_model,
    conversation,
    passage,
    red_team_task,
    replay_of,
    replayed,
)
from tests.helpers.chat_server import ChatServer
from validation.models import Validation

pytestmark = pytest.mark.django_db

BAD_REPLY = 'Sure! Here is my judgement:\n```json\n{"Supported": "NO", "helpful": 2}\n```'
GOOD_REPLY = '{"supported": "yes", "helpful": "5", "explanation": "The passage says so."}'
GARBLED_REPLY = "I cannot decide 🤔."


def output_of(request) -> str:
    """The answer judged, as the default template shows it between <<< and >>>."""
    content = request["messages"][-1]["content"]
    return content.split("<<<\n", 1)[1].split("\n>>>", 1)[0]


def choose_reply(request) -> str:
    output = output_of(request)
    if "GARBLE" in output:
        return GARBLED_REPLY
    return BAD_REPLY if "WRONG" in output else GOOD_REPLY


@pytest.fixture
def server():
    with ChatServer(None) as running:
        running.reply = choose_reply
        yield running


@pytest.fixture
def world(server, annotator, owner):
    """Round 1 of a red-teaming task: three human conversations to judge (one the judge will not read),
    three that are not (retracted, imported, a multiple-choice item), and a replay with two answers to
    judge and a failed one."""
    task = red_team_task()
    task.owners.add(owner)
    round_ = task.rounds.get(number=1)
    context = passage(round_)
    target = chat_model(task, "target", server.base_url)
    other = chat_model(task, "other", server.base_url)
    judge_model = chat_model(task, "judge", server.base_url)

    def human(answer, failed, **fields):
        return conversation(
            round_, annotator, target, failed=failed, answer=answer, context=context, **fields
        )

    bad = human("The Amazon is WRONG: 9,000 km.", True, status=Example.Status.VALIDATED_CORRECT)
    good = human(
        "About 6,400 km 🌊.",
        False,
        prompt="And in miles?",
        earlier=[
            {"role": "user", "content": "How long is the Amazon?"},
            {"role": "assistant", "content": "6,400 km."},
        ],
    )
    garbled = human("נהר GARBLE ארוך", True)
    human("The Amazon is WRONG.", True, is_retracted=True)
    human("The Amazon is WRONG.", True, source=Example.Source.IMPORTED)
    Example.objects.create(
        round=round_, annotator=annotator, inputs={"question": "Where?", "options": ["a", "b"]},
        target={"answer": 0}, model_wrong=True, metadata={"mode": "multiple_choice"},
    )  # fmt: skip
    replay = replay_of(round_, other)
    replayed_bad = replayed(replay, bad, "WRONG again: 9,000 km.")
    replayed_good = replayed(replay, good, "Some 4,000 miles.")
    replayed(replay, garbled, "", status=ReplayAnswer.Status.FAILED)
    judge = create_judge(task=task, model=judge_model, name="Remote judge")
    return {
        "task": task,
        "judge": judge,
        "context": context,
        "items": {"bad": bad, "good": good, "garbled": garbled},
        "replayed": {"bad": replayed_bad, "good": replayed_good},
    }


def _run(judge, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run_judge(judge=judge, user=owner)
    assert len(callbacks) == 1
    judge.refresh_from_db()
    return judge


def _snapshot():
    examples = list(
        Example.objects.order_by("pk").values_list("pk", "status", "model_wrong", "settled_at", "updated_at")
    )
    return examples, Validation.objects.count(), Prediction.objects.count()


def test_the_judge_answers_every_output_and_never_settles(
    world, server, owner, django_capture_on_commit_callbacks
):
    before = _snapshot()
    judge = _run(world["judge"], owner, django_capture_on_commit_callbacks)
    assert (judge.status, judge.progress) == (
        "done",
        "Done: 5 outputs judged: 4 read, 1 unreadable, 0 failed.",
    )
    assert _snapshot() == before  # no example, validation or prediction touched

    items, answers = world["items"], world["replayed"]
    got = {
        (v.example_id, v.replay_answer_id): (v.status, v.failed, v.rubric_answers)
        for v in JudgeVerdict.objects.filter(judge=judge)
    }
    bad, good = {"supported": "no", "helpful": "2"}, {"supported": "yes", "helpful": "5"}
    assert got == {
        (items["bad"].pk, None): ("ok", True, bad),
        (items["good"].pk, None): ("ok", False, good),
        (items["garbled"].pk, None): ("unreadable", None, {}),
        (None, answers["bad"].pk): ("ok", True, bad),
        (None, answers["good"].pk): ("ok", False, good),
    }
    unreadable = JudgeVerdict.objects.get(status="unreadable")
    assert unreadable.raw == GARBLED_REPLY
    assert JudgeVerdict.objects.get(example=items["bad"]).raw == BAD_REPLY

    # Greedy, with room for the JSON of a two-question rubric: 48 + 24 * 2 = 96 tokens.
    assert len(server.requests) == 5
    assert {(r["model"], r["temperature"], r["max_tokens"]) for r in server.requests} == {("judge", 0.0, 96)}
    stored = JudgeVerdict.objects.get(example=items["good"]).generation
    assert (stored["decoding"]["temperature"], stored["decoding"]["max_new_tokens"]) == (0.0, 96)
    # The human conversation with an earlier turn, as the judge read it.
    [asked] = [r for r in server.requests if output_of(r) == "About 6,400 km 🌊."]
    rubric = Rubric.from_config(world["task"].config["red_team"]["rubric"])
    assert asked["messages"] == [
        {
            "role": "user",
            "content": prompts.render(
                prompts.DEFAULT_TEMPLATE,
                context="Article: Amazon\n\nPassage: The Amazon river flows through Brazil. It is about 6,400 km long.",
                conversation=[
                    {"role": "user", "content": "How long is the Amazon?"},
                    {"role": "assistant", "content": "6,400 km."},
                    {"role": "user", "content": "And in miles?"},
                ],
                output="About 6,400 km 🌊.",
                rubric=rubric,
            ),
        }
    ]
    # The replayed answer is judged on its own conversation (the system message is the passage).
    [replay_asked] = [r for r in server.requests if output_of(r) == "Some 4,000 miles."]
    assert (
        "Conversation before the answer:\nUser: How long is the Amazon?\n\nAssistant: 6,400 km.\n\n"
        in (replay_asked["messages"][0]["content"])
    )


def test_a_second_run_resumes_and_retries_only_what_it_could_not_read(
    world, server, owner, django_capture_on_commit_callbacks
):
    judge = _run(world["judge"], owner, django_capture_on_commit_callbacks)
    first = {v.pk: (v.status, v.created_at) for v in JudgeVerdict.objects.filter(judge=judge)}
    server.reply = lambda request: '{"supported": "no", "helpful": "1"}'  # now it reads everything
    judge = _run(judge, owner, django_capture_on_commit_callbacks)
    assert len(server.requests) == 5 + 1  # only the unreadable one was asked again
    garbled = JudgeVerdict.objects.get(example=world["items"]["garbled"])
    assert (garbled.status, garbled.failed, garbled.raw) == (
        "ok",
        True,
        '{"supported": "no", "helpful": "1"}',
    )
    assert garbled.pk in first  # replaced in place, not added
    assert JudgeVerdict.objects.filter(judge=judge).count() == 5
    assert judge.progress == "Done: 1 outputs judged: 1 read, 0 unreadable, 0 failed."
    judge = _run(judge, owner, django_capture_on_commit_callbacks)
    assert len(server.requests) == 6
    assert judge.progress == "Done: nothing left to judge."


def test_a_model_that_fails_leaves_failed_verdicts_with_why(
    world, server, owner, django_capture_on_commit_callbacks
):
    broken = chat_model(world["task"], "broken", server.base_url, chat_model_name="fault-401")
    judge = create_judge(task=world["task"], model=broken, name="Broken judge")
    judge = _run(judge, owner, django_capture_on_commit_callbacks)
    assert judge.status == "done" and judge.progress.endswith("0 read, 0 unreadable, 5 failed.")
    errors = set(JudgeVerdict.objects.filter(judge=judge).values_list("status", "failed", "error"))
    assert errors == {
        ("failed", None, "the chat server answered 401 unauthorized: check the API key the operator named")
    }
    # A later run asks each failed one once more.
    asked = len(server.requests)
    _run(judge, owner, django_capture_on_commit_callbacks)
    assert len(server.requests) == asked + 5


def test_a_run_is_queued_once_and_claimed_once(
    world, server, owner, outsider, django_capture_on_commit_callbacks
):
    judge = world["judge"]
    with pytest.raises(JudgeError) as refused:
        run_judge(judge=judge, user=outsider)
    assert refused.value.code == "not_owner"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run_judge(judge=judge, user=owner)
        with pytest.raises(JudgeError) as twice:
            run_judge(judge=judge, user=owner)  # a double click
    assert twice.value.code == "busy" and len(callbacks) == 1
    assert Judge.objects.get(pk=judge.pk).status == "queued"
    assert run_judge_job(judge.pk) == "done"
    assert run_judge_job(judge.pk) == "done"  # delivered twice: the second finds it done and does nothing
    assert len(server.requests) == 5
    assert run_judge_job(999_999) == "missing"


def test_a_run_lost_with_its_worker_may_be_asked_for_again(world, owner, django_capture_on_commit_callbacks):
    judge = world["judge"]
    Judge.objects.filter(pk=judge.pk).update(status="running", updated_at=timezone.now())
    with pytest.raises(JudgeError) as refused:
        run_judge(judge=judge, user=owner)
    assert refused.value.code == "busy"
    Judge.objects.filter(pk=judge.pk).update(updated_at=timezone.now() - datetime.timedelta(hours=3))
    with django_capture_on_commit_callbacks(execute=False):
        assert run_judge(judge=judge, user=owner).status == "queued"


def test_a_switched_off_judge_or_a_model_not_ready_is_not_run(world, owner):
    judge = world["judge"]
    Judge.objects.filter(pk=judge.pk).update(is_active=False)
    with pytest.raises(JudgeError) as off:
        run_judge(judge=judge, user=owner)
    Judge.objects.filter(pk=judge.pk).update(is_active=True)
    RegisteredModel.objects.filter(pk=judge.model_id).update(status="failed")
    with pytest.raises(JudgeError) as not_ready:
        run_judge(judge=judge, user=owner)
    assert (off.value.code, not_ready.value.code) == ("inactive", "not_ready")
    assert Judge.objects.get(pk=judge.pk).status == ""


def test_a_crash_inside_the_run_fails_it_with_why(
    world, monkeypatch, django_capture_on_commit_callbacks, owner
):
    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(jobs, "_generate", crash)
    judge = _run(world["judge"], owner, django_capture_on_commit_callbacks)
    assert (judge.status, judge.progress) == ("failed", "The run failed: RuntimeError: disk full")


# --- create_judge ---------------------------------------------------------------------------------------


def test_a_judge_gets_the_default_template_unless_given_one(world, server):
    task = world["task"]
    model = RegisteredModel.objects.get(task=task, name="other")
    judge = create_judge(task=task, model=model, name="  Second judge 🧑‍⚖️  ", prompt_template="   ")
    assert (judge.name, judge.prompt_template, judge.agreement_floor) == (
        "Second judge 🧑‍⚖️",
        prompts.DEFAULT_TEMPLATE,
        0.4,
    )
    own = create_judge(
        task=task,
        model=model,
        name="Third",
        prompt_template="Judge:\r\n{output}\r\n{rubric}",
        agreement_floor="0.6",
    )
    assert (own.prompt_template, own.agreement_floor) == ("Judge:\n{output}\n{rubric}", 0.6)


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        ({"name": ""}, "bad_name", "Give the judge a name."),
        ({"name": "a\u202eb"}, "bad_name", None),
        ({"name": "x" * 201}, "bad_name", None),
        ({"name": "Remote judge"}, "name_taken", "This task already has a judge named 'Remote judge'."),
        ({"agreement_floor": 1.5}, "bad_floor", "The agreement floor is a kappa between -1 and 1, e.g. 0.4."),
        ({"agreement_floor": "abc"}, "bad_floor", None),
        ({"agreement_floor": float("nan")}, "bad_floor", None),
        ({"agreement_floor": True}, "bad_floor", None),
        ({"prompt_template": "{output} {passage}"}, "bad_template", None),
        ({"model": "not_ready"}, "not_ready", None),
        ({"model": "other_task"}, "other_task", None),
        ({"model": "classifier"}, "not_generative", None),
    ],
)
def test_a_bad_judge_is_refused_and_nothing_stored(world, server, hate_task, change, code, message):
    task = world["task"]
    model = RegisteredModel.objects.get(task=task, name="other")
    if change.get("model") == "not_ready":
        model.status = RegisteredModel.Status.CHECKING
        model.save()
    elif change.get("model") == "other_task":
        model = chat_model(red_team_task("elsewhere"), "elsewhere", server.base_url)
    elif change.get("model") == "classifier":
        model = RegisteredModel.objects.create(task=task, name="clf", source="endpoint", status="ready")
    arguments = {"task": task, "model": model, "name": "New judge", **change}
    arguments["model"] = model
    before = Judge.objects.count()
    with pytest.raises(JudgeError) as refused:
        create_judge(**arguments)
    assert refused.value.code == code
    if message:
        assert str(refused.value) == message
    if code == "bad_template":
        assert "Unknown placeholder {passage}" in str(refused.value)
        assert "The template must contain {rubric}" in str(refused.value)
    assert Judge.objects.count() == before


def test_a_task_that_is_not_red_teaming_has_no_judges(hate_task, make_model):
    with pytest.raises(JudgeError) as refused:
        create_judge(task=hate_task, model=make_model("clf"), name="Judge")
    assert refused.value.code == "not_red_team"


# --- the real SmolLM2 -----------------------------------------------------------------------------------


def test_smollm2_as_the_judge_stores_what_it_says_read_or_not(smollm2_dir, annotator, owner):
    from tests.factories.red_team import make_passage, make_red_team_round

    # A long timeout: the judge's 96 tokens on a busy 2-core machine can take more than the default 60 s.
    round_ = make_red_team_round(
        smollm2_dir, generation={"max_new_tokens": 12, "temperature": 0.0, "timeout": 600}
    )
    task = round_.task
    smollm2 = RegisteredModel.objects.get(task=task, name="smollm2")
    example = conversation(
        round_, annotator, smollm2, failed=True, context=make_passage(round_),
        prompt="How long is the Amazon?", answer="The Amazon is 9,000 km long and flows through Peru.",
    )  # fmt: skip
    judge = create_judge(task=task, model=smollm2, name="SmolLM2 judge")
    Judge.objects.filter(pk=judge.pk).update(status="queued")
    assert run_judge_job(judge.pk) == "done"
    verdict = JudgeVerdict.objects.get(judge=judge, example=example)
    rubric = task.cfg.rubric
    # A local judge answers each question by constrained choice: always readable, one of the offered
    # answers, the one whose per-byte score is the highest.
    assert verdict.status == "ok" and verdict.failed == rubric.failed(verdict.rubric_answers), verdict.error
    assert verdict.generation["method"] == "choice" and verdict.generation["model"] == "smollm2"
    assert set(verdict.generation["choice_scores"]) == {q.name for q in rubric.questions}
    for question in rubric.questions:
        scores = verdict.generation["choice_scores"][question.name]
        assert len(scores) == len(question.answers)
        assert verdict.rubric_answers[question.name] == question.answers[scores.index(max(scores))]
    assert prompts.parse(verdict.raw, rubric) == verdict.rubric_answers
    example.refresh_from_db()
    assert (example.status, example.model_wrong) == ("pending", True)
