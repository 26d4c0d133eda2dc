"""The rubric of a red-teaming task: questions about a model's output that decide whether it failed.

The Dynabench paper (Kiela et al. 2021, section 4) proposes, for generation, to "ask people whether the
output is good enough" instead of comparing it with a gold answer. A task owner writes that as a rubric
in the task config (``red_team.rubric``): each question offers answers (yes/no, or the points of a scale)
and names the answers that count as a failure. The output failed when **any** question's answer is one
of its failure answers: a rubric lists the ways an answer can be bad, and one is enough.

The author of an example answers the rubric for the output they got, which decides ``model_wrong``;
validators answer the same rubric without seeing the author's answers, and the quorum settles it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError


@dataclass(frozen=True)
class RubricQuestion:
    """One question: ``answers`` offered in order, ``failure_answers`` a non-empty proper subset."""

    name: str
    question: str
    answers: tuple[str, ...]
    failure_answers: frozenset[str]
    help: str = ""
    level: str = ""

    @classmethod
    def from_config(cls, raw: dict) -> RubricQuestion:
        return cls(
            name=raw["name"],
            question=raw["question"],
            answers=tuple(raw["answers"]),
            failure_answers=frozenset(raw["failure_answers"]),
            help=raw.get("help", ""),
            level=raw.get("level", ""),
        )

    @property
    def measurement(self) -> str:
        """How validators' answers are compared for agreement: the config's ``level``, else
        ``"ordinal"`` when every answer is a number (a scale, ranked in the answers' order), else
        ``"nominal"``."""
        if self.level:
            return self.level
        try:
            [float(answer) for answer in self.answers]
        except ValueError:
            return "nominal"
        return "ordinal"


@dataclass(frozen=True)
class Rubric:
    """The questions of a task's rubric, in the config's order."""

    questions: tuple[RubricQuestion, ...]

    @classmethod
    def from_config(cls, raw: list[dict]) -> Rubric:
        return cls(tuple(RubricQuestion.from_config(q) for q in raw))

    def clean(self, answers) -> dict[str, str]:
        """The answers as ``{question name: answer}``, every question answered with one of its answers.

        Raises:
            ValidationError: not an object, a question unanswered, an unknown question, or an answer
                the question does not offer; one message per problem, naming the question.
        """
        if not isinstance(answers, dict):
            raise ValidationError("The rubric answers must be an object: {question name: answer}.")
        errors = []
        known = {q.name for q in self.questions}
        for name in sorted(set(answers) - known, key=str):
            errors.append(f"rubric: {name!r} is not a question of this task's rubric.")
        clean = {}
        for question in self.questions:
            answer = answers.get(question.name)
            if answer is None or answer == "":
                errors.append(f"rubric: answer {question.question!r}.")
            elif answer not in question.answers:
                offered = ", ".join(repr(a) for a in question.answers)
                errors.append(f"rubric: {question.name!r} takes one of {offered}, not {str(answer)[:50]!r}.")
            else:
                clean[question.name] = answer
        if errors:
            raise ValidationError(errors)
        return clean

    def failed(self, answers: dict[str, str]) -> bool:
        """True when any question's answer is one of its failure answers (``answers`` as ``clean``
        returns them)."""
        return any(answers[q.name] in q.failure_answers for q in self.questions)

    def failed_questions(self, answers: dict[str, str]) -> list[str]:
        """The names of the questions whose answers count as a failure, in the rubric's order."""
        return [q.name for q in self.questions if answers[q.name] in q.failure_answers]
