"""Rows for the judges' tests: a red-teaming task whose models answer on the loopback chat server, human
conversations as ``submit_conversation`` stores them, replayed answers and their rating examples, built
with the ORM (settled directly: the tests are about reading verdicts, not reaching a quorum)."""

from __future__ import annotations

import copy

from annotation.models import Conversation, Example
from generative_bench.models import Judge, JudgeVerdict, Replay, ReplayAnswer
from models_registry.models import RegisteredModel, RoundTarget
from tasks.builtin_configs import RED_TEAM_CONFIG
from tasks.models import Context, Round, Task
from tasks.services import ensure_round, set_current_round

PASSAGE = "The Amazon river flows through Brazil. It is about 6,400 km long."
URL = "http://127.0.0.1:9/v1"  # a model never called: the tests that use it read stored verdicts
VC, VI = Example.Status.VALIDATED_CORRECT, Example.Status.VALIDATED_INCORRECT
UNREADABLE, FAILED = JudgeVerdict.Status.UNREADABLE, JudgeVerdict.Status.FAILED
GOOD = {"supported": "yes", "helpful": "5"}
BAD = {"supported": "no", "helpful": "2"}


def red_team_task(slug: str = "red-team", *, active: bool = True) -> Task:
    """A red-teaming task (``RED_TEAM_CONFIG``, copied) with round 1 current."""
    task = Task.objects.create(
        slug=slug, name="Red-team", config=copy.deepcopy(RED_TEAM_CONFIG), is_active=active
    )
    set_current_round(task=task, round_=ensure_round(task=task, number=1))
    return task


def chat_model(
    task: Task, name: str, base_url: str, *, chat_model_name: str | None = None
) -> RegisteredModel:
    """A ready, published model of ``task`` on the chat server at ``base_url`` (no key)."""
    return RegisteredModel.objects.create(
        task=task,
        is_published=True,
        name=name,
        source=RegisteredModel.Source.CHAT_ENDPOINT,
        endpoint_url=base_url,
        chat_model_name=chat_model_name or name,
        status=RegisteredModel.Status.READY,
        generation={"max_new_tokens": 12, "temperature": 0.7},
    )


def round_of(task: Task, number: int, target: RegisteredModel | None = None) -> Round:
    round_ = ensure_round(task=task, number=number)
    if target is not None:
        RoundTarget.objects.get_or_create(round=round_, model=target)
    return round_


def passage(round_: Round, text: str = PASSAGE) -> Context:
    return Context.objects.create(task=round_.task, round=round_, data={"title": "Amazon", "passage": text})


def conversation(
    round_: Round,
    annotator,
    model: RegisteredModel,
    *,
    failed: bool,
    status: str = Example.Status.PENDING,
    prompt: str = "How long is the Amazon?",
    answer: str = "About 6,400 km.",
    earlier: list[dict] | None = None,
    context: Context | None = None,
    **fields,
) -> Example:
    """A human-judged conversation as ``submit_conversation`` stores it (``earlier`` turns first), its
    author's verdict ``failed``, with the ``Conversation`` row that held it with ``model``."""
    messages = [
        *(earlier or []),
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": answer},
    ]
    example = Example.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        inputs={"messages": messages},
        target=BAD if failed else GOOD,
        model_wrong=failed,
        tags=["fabrication"] if failed else [],
        status=status,
        metadata={"mode": "conversation", "model": model.name, "turns": len(messages) // 2, "cost": None},
        **fields,
    )
    Conversation.objects.create(
        round=round_,
        context=context,
        annotator=annotator,
        model=model,
        status=Conversation.Status.SUBMITTED,
        example=example,
    )
    return example


def replay_of(round_: Round, model: RegisteredModel) -> Replay:
    return Replay.objects.create(round=round_, model=model, status=Replay.Status.DONE)


def replayed(
    replay: Replay,
    example: Example,
    answer: str,
    *,
    rating_status: str | None = None,
    status: str = ReplayAnswer.Status.OK,
) -> ReplayAnswer:
    """``replay.model``'s answer to ``example`` (messages as the keep mode sends them: the passage as the
    system message, then the conversation up to its last user turn), and, with ``rating_status``, its
    rating example (source ``rating``, no author, ``model_wrong`` None) settled so."""
    messages = [m for m in example.inputs["messages"][:-1]]
    if example.context_id:
        messages = [{"role": "system", "content": f"Passage: {example.context.data['passage']}"}, *messages]
    rating = None
    if rating_status is not None:
        rating = Example.objects.create(
            round=replay.round,
            context=example.context,
            annotator=None,
            inputs={"messages": [*example.inputs["messages"][:-1], {"role": "assistant", "content": answer}]},
            target={},
            model_wrong=None,
            source=Example.Source.RATING,
            status=rating_status,
            metadata={"mode": "conversation"},
        )
    return ReplayAnswer.objects.create(
        replay=replay,
        example=example,
        status=status,
        messages=messages,
        answer=answer if status == ReplayAnswer.Status.OK else "",
        answers=[answer] if status == ReplayAnswer.Status.OK else [],
        rating_example=rating,
    )


def judge_of(task: Task, model: RegisteredModel, *, name: str = "Judge", floor: float = 0.4) -> Judge:
    from generative_bench.judges.prompts import DEFAULT_TEMPLATE

    return Judge.objects.create(
        task=task, model=model, name=name, prompt_template=DEFAULT_TEMPLATE, agreement_floor=floor
    )


def verdict(judge: Judge, item, failed: bool | None, status: str = JudgeVerdict.Status.OK) -> JudgeVerdict:
    """The judge's verdict on ``item`` (an ``Example`` or a ``ReplayAnswer``), stored as the job would."""
    key = {"example": item} if isinstance(item, Example) else {"replay_answer": item}
    answers = {} if failed is None else (BAD if failed else GOOD)
    return JudgeVerdict.objects.create(
        judge=judge, status=status, failed=failed if status == JudgeVerdict.Status.OK else None,
        rubric_answers=answers if status == JudgeVerdict.Status.OK else {}, **key,
    )  # fmt: skip


def agreement_world(annotator) -> dict:
    """Ten outputs both people and the judge judged, with (people say failed, judge says failed):

    round 1, six human conversations (author's claim, settled status -> people):
      claimed failed, validated_correct -> T; judge T
      claimed good,   validated_incorrect -> T; judge T   (the claim overturned)
      claimed failed, validated_correct -> T; judge T
      claimed failed, validated_correct -> T; judge F
      claimed failed, validated_incorrect -> F; judge T
      claimed good,   validated_correct -> F; judge F
    round 2, four replayed answers rated by people (validated_incorrect = failed):
      model A: rated incorrect -> T, judge T; rated correct -> F, judge T
      model B: rated correct -> F, judge F; rated correct -> F, judge F

    Beside them, left out of the agreement: in round 1 an unreadable and a failed verdict on settled
    conversations (counted as left out), and ok verdicts on a pending, a flagged and a retracted
    conversation (no settled human verdict); in round 2 a verdict on a replayed answer whose rating is
    pending, and two settled human conversations the judge has no verdict on.
    """
    task = red_team_task()
    r1 = task.rounds.get(number=1)
    r2 = round_of(task, 2)
    target = chat_model(task, "target", URL)
    for round_ in (r1, r2):
        RoundTarget.objects.create(round=round_, model=target)
    model_a, model_b = chat_model(task, "model-a", URL), chat_model(task, "model-b", URL)
    judge = judge_of(task, chat_model(task, "judge-model", URL))

    def human(round_, failed, status, **fields):
        return conversation(round_, annotator, target, failed=failed, status=status, **fields)

    for claimed, status, judged in [
        (True, VC, True),
        (False, VI, True),
        (True, VC, True),
        (True, VC, False),
        (True, VI, True),
        (False, VC, False),
    ]:
        verdict(judge, human(r1, claimed, status), judged)
    verdict(judge, human(r1, True, VC), None, UNREADABLE)
    verdict(judge, human(r1, False, VC), None, FAILED)
    verdict(judge, human(r1, True, Example.Status.PENDING), False)
    verdict(judge, human(r1, True, Example.Status.FLAGGED), True)
    verdict(judge, human(r1, True, VC, is_retracted=True), True)

    first, second = human(r2, True, VC), human(r2, False, VC)
    replay_a, replay_b = replay_of(r2, model_a), replay_of(r2, model_b)
    verdict(judge, replayed(replay_a, first, "A1", rating_status=VI), True)
    verdict(judge, replayed(replay_a, second, "A2", rating_status=VC), True)
    verdict(judge, replayed(replay_b, first, "B1", rating_status=VC), False)
    verdict(judge, replayed(replay_b, second, "B2", rating_status=VC), False)
    third = human(r2, False, Example.Status.PENDING)
    verdict(judge, replayed(replay_b, third, "B3", rating_status=Example.Status.PENDING), True)
    return {
        "task": task,
        "judge": judge,
        "r1": r1,
        "r2": r2,
        "target": target,
        "model_a": model_a,
        "model_b": model_b,
    }
