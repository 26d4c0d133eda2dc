"""Multiple-choice items with hard negatives: the second mode of a red-teaming task (docs/generative.md,
"Multiple choice"; Kiela et al. 2021, section 4).

    example = write_choice_item(round_=round_, annotator=user, context=context, question="...",
                                answer="...", negatives=["...", "..."], client_token=token)

The annotator writes a question (on a context where the task has them), its correct answer and at least
``min_negatives`` hard negatives. The options are shuffled once, with a seed drawn from the item, so the
correct one is not always first; the server then asks the round's target which option it picks
(``models_registry.generative.choose``) and decides ``model_wrong`` itself, as for classifiers.

The example stores ``inputs = {"question": str, "options": [str, ...]}`` (the order shown, to the model
and to validators), ``target = {"answer": i}`` (the index of the correct option) and, in ``metadata``,
``mode: "multiple_choice"`` with the target's ``picked`` index and its scores. A ``Prediction`` row keeps
the target's pick (``label`` is the picked index as text), as for a classifier's answer.
"""

from __future__ import annotations

import random
import uuid

from django.db import IntegrityError, transaction

from annotation import signals
from annotation.chat_format import context_message
from annotation.models import Example, Prediction
from core.api.permissions import can_contribute
from core.text_rules import lone_surrogate_path, model_text_problem, normalise_newlines
from models_registry.serving import InferenceError, PromptTooLong, QueueFull, choose
from tasks import qualification
from tasks.kinds import conversational
from tasks.models import Context, Round

from .conversations import ConversationError, check_context, round_target

#: The longest question and option, in characters.
MAX_QUESTION = 2000
MAX_OPTION = 500
MODE = "multiple_choice"


def choice_messages(context: Context | None, question: str, round_: Round) -> list[dict]:
    """The chat messages a model reads before the options: the context as a system message (as in a
    conversation, ``context_message``), then the question as the user's message."""
    messages = []
    system = context_message(round_.task.cfg, context)
    if system:
        messages.append(system)
    messages.append({"role": "user", "content": question})
    return messages


def _clean_text(value, label: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ConversationError(f"{label}: write some text.", code="invalid")
    if lone_surrogate_path(value) is not None:
        raise ConversationError(f"{label} holds a lone surrogate, which is not text.", code="invalid")
    value = normalise_newlines(value).strip()
    problem = model_text_problem(value, label, limit)
    if problem:
        raise ConversationError(problem, code="invalid")
    return value


def clean_item(cfg, question, answer, negatives) -> tuple[str, str, list[str]]:
    """The item's texts checked: question, answer and negatives are text (no lone surrogate, not blank,
    within ``MAX_QUESTION`` / ``MAX_OPTION`` characters), at least ``cfg.min_negatives`` negatives,
    at most ``cfg.max_options`` options in all, no two options the same (ignoring case and spaces).

    Raises:
        ConversationError: code ``invalid``, the problem named.
    """
    question = _clean_text(question, "The question", MAX_QUESTION)
    answer = _clean_text(answer, "The correct answer", MAX_OPTION)
    if not isinstance(negatives, (list, tuple)):
        raise ConversationError("The wrong answers must be a list of texts.", code="invalid")
    negatives = [n for n in negatives if not (isinstance(n, str) and not n.strip())]  # blank boxes
    negatives = [_clean_text(n, f"Wrong answer {i}", MAX_OPTION) for i, n in enumerate(negatives, 1)]
    if len(negatives) < cfg.min_negatives:
        raise ConversationError(
            f"Write at least {cfg.min_negatives} wrong answers (hard negatives); you wrote {len(negatives)}.",
            code="invalid",
        )
    if len(negatives) + 1 > cfg.max_options:
        raise ConversationError(
            f"At most {cfg.max_options} options in all: the correct answer and "
            f"{cfg.max_options - 1} wrong ones.",
            code="invalid",
        )
    seen = [" ".join(o.casefold().split()) for o in [answer, *negatives]]
    if len(set(seen)) != len(seen):
        raise ConversationError("Two options are the same; each option must differ.", code="invalid")
    return question, answer, negatives


def write_choice_item(
    *,
    round_: Round,
    annotator,
    question,
    answer,
    negatives,
    context: Context | None = None,
    client_token: uuid.UUID | None = None,
) -> tuple[Example, bool]:
    """Store a multiple-choice item of ``round_`` and let its first ready target pick an option.

    Returns:
        ``(example, created)``: ``created`` is False when ``client_token`` was already used by this
        annotator (a double submit): the stored example is returned and the target is not asked again.

    Raises:
        ConversationError: a user who may not contribute (``blocked``), not a red-teaming task or one
            without multiple choice (``not_red_team``), a round that is not open (``round_closed``), a
            context of another round or none where the task needs one (``bad_context``,
            ``conversations.check_context``), bad texts (``invalid``, see ``clean_item``), no ready
            target (``no_target``), a prompt over the target's context (``too_long``, with the counts)
            or the target failing (``model_error``).
            Nothing is stored on any of these.
        QueueFull: the line for the local target's generation slot is full; nothing is stored.
        tasks.qualification.NotQualified: the task's rules refuse the annotator.
    """
    if not can_contribute(annotator):
        raise ConversationError("Your account cannot write examples.", code="blocked")
    cfg = round_.task.cfg
    if not conversational(cfg) or MODE not in cfg.red_team_modes:
        raise ConversationError("This task takes no multiple-choice items.", code="not_red_team")
    if client_token is not None:
        stored = Example.objects.filter(annotator=annotator, client_token=client_token).first()
        if stored is not None:
            return stored, False
    if not round_.is_open:
        raise ConversationError("This round is closed; nothing was stored.", code="round_closed")
    check_context(round_, context, what="A multiple-choice item")
    qualification.check_can_contribute(round_.task, annotator, qualification.WRITE, lock=False)
    question, answer, negatives = clean_item(cfg, question, answer, negatives)
    options = [answer, *negatives]
    random.Random(f"{question}\x00{client_token}").shuffle(options)
    correct = options.index(answer)
    model = round_target(round_)
    messages = choice_messages(context, question, round_)
    try:
        scores = choose(model, messages, options)
    except QueueFull:  # the line for the target is full: 503 with Retry-After, nothing stored
        raise
    except PromptTooLong as exc:
        raise ConversationError(f"The model could not score the options: {exc}", code="too_long") from None
    except InferenceError as exc:
        raise ConversationError(f"The model could not score the options: {exc}", code="model_error") from None
    wrong = scores.picked != correct
    try:
        with transaction.atomic():
            example = Example.objects.create(
                round=round_,
                context=context,
                annotator=annotator,
                inputs={"question": question, "options": options},
                target={"answer": correct},
                model_wrong=wrong,
                prediction_status=Example.PredictionStatus.OK,
                client_token=client_token,
                metadata={
                    "mode": MODE,
                    "model": model.name,
                    "picked": scores.picked,
                    "method": scores.method,
                    "picked_unnormalised": scores.picked_unnormalised,
                    "log_likelihoods": list(scores.log_likelihoods),
                    "normalised": list(scores.normalised),
                },
            )
            Prediction.objects.create(
                example=example,
                model=model,
                label=str(scores.picked),
                output={"options": len(options), "normalised": list(scores.normalised)},
                model_wrong=wrong,
            )
            signals.example_created.send(sender=Example, example=example)
    except IntegrityError:  # the same client_token sent twice at once: the first one stored wins
        stored = Example.objects.filter(annotator=annotator, client_token=client_token).first()
        if stored is None:
            raise
        return stored, False
    return example, True
