"""``manage.py check_red_team_contexts [--task SLUG] [--flag --actor OWNER]``: find the red-teaming rows
stored without the context (passage) their task needs, and optionally take them out of validation and
the verified counts (docs/operations.md, "Red-teaming rows without a passage").

Until ``annotation.red_team.conversations.check_context`` refused it, ``POST
/api/tasks/<slug>/conversations/`` with ``{}`` opened a conversation with no passage on a task whose
passage is required: the model answered without it, and the judged conversation became an example that
validators were served and the attack success rate counted. This lists every such conversation and
example (``annotation.red_team.selectors.stored_without_context``). Nothing changes without ``--flag``.

With ``--flag`` (``--actor`` naming an owner of the task, or a superuser), through the same services as
the pages, so the history, the audit log and the crowd ledger see it as any owner's decision:

* an open conversation without a passage is abandoned (it could not be judged any more, and the page
  could not show it): ``abandon_conversation``;
* a pending example gets an owner verdict ``flagged`` (``submit_validation`` in owner mode): it leaves
  the validation queue;
* an example settled ``validated_correct`` or ``validated_incorrect`` is overturned to ``flagged``
  (``overturn_verdict``): a verified failure judged without its passage no longer counts as one;
* one already flagged or retracted is left as it is; one the services refuse (an owner verdict given
  before) is reported with why.

Every owner verdict carries the reason ``REASON``. Run twice, the second run changes nothing.
"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.models import Conversation, Example
from annotation.red_team.conversations import abandon_conversation
from annotation.red_team.selectors import stored_without_context
from core.audit import OperatorCommand
from tasks.models import Task
from validation.services import VerdictError, overturn_verdict, submit_validation

#: The reason of the owner verdicts this command gives.
REASON = "No passage: stored without the context the task needs (check_red_team_contexts)."


def _who(row) -> str:
    return row.annotator.username if row.annotator_id else "nobody"


class Command(OperatorCommand):
    help = (
        "List the red-teaming conversations and examples stored without the context (passage) their task "
        "needs; with --flag and --actor <owner>, abandon the open conversations and flag the examples "
        "(owner verdicts: out of the validation queue and the verified failures). "
        "Example: python manage.py check_red_team_contexts --task red-team --flag --actor alice"
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", default=None, help="Only this task (its slug).")
        parser.add_argument(
            "--flag",
            action="store_true",
            help="Abandon the open conversations and flag the examples found (needs --actor, an owner).",
        )

    def handle(self, *args, task=None, flag=False, **options):
        only = None
        if task is not None:
            only = Task.objects.filter(slug=task).first()
            if only is None:
                raise CommandError(f"There is no task {task!r}.")
        if flag and self.actor is None:
            raise CommandError("--flag records owner verdicts: name the owner with --actor <username>.")
        conversations, examples = stored_without_context(only)
        conversations, examples = list(conversations), list(examples)
        for conversation in conversations:
            turns = conversation.turns.count()
            line = (
                f"{conversation.round.task.slug} round {conversation.round.number}: conversation "
                f"{conversation.pk} by {_who(conversation)} ({conversation.status}, {turns} turn(s)"
                + (f", example {conversation.example_id}" if conversation.example_id else "")
                + ")"
            )
            if flag and conversation.status == Conversation.Status.OPEN:
                abandon_conversation(conversation=conversation, annotator=conversation.annotator)
                line += ": abandoned"
            self.stdout.write(line)
        for example in examples:
            line = (
                f"{example.round.task.slug} round {example.round.number}: example {example.pk} by "
                f"{_who(example)} ({example.metadata.get('mode')}, {self._state(example)})"
            )
            if flag:
                line += f": {self._flag(example)}"
            self.stdout.write(line)
        self.stdout.write(
            f"{len(conversations)} conversation(s) and {len(examples)} example(s) stored without the "
            "context their task needs."
        )
        if (conversations or examples) and not flag:
            self.stdout.write(
                "Nothing changed. Run with --flag --actor <owner> to abandon the open conversations and "
                "flag the examples (docs/operations.md)."
            )

    @staticmethod
    def _state(example: Example) -> str:
        claim = {True: "a claimed failure", False: "judged good", None: "no verdict"}[example.model_wrong]
        return f"{'retracted' if example.is_retracted else example.status}, {claim}"

    def _flag(self, example: Example) -> str:
        """Flag ``example`` by an owner verdict of ``self.actor``; what happened, said in a few words."""
        if example.is_retracted:
            return "left as it is (retracted by its author)"
        if example.status == Example.Status.FLAGGED:
            return "left as it is (already flagged)"
        try:
            if example.status == Example.Status.PENDING:
                submit_validation(
                    example=example, validator=self.actor, verdict="flagged", reason=REASON, owner_mode=True
                )
                return "flagged"
            previous = example.status
            overturn_verdict(example=example, owner=self.actor, verdict="flagged", reason=REASON)
            return f"overturned from {previous} to flagged"
        except VerdictError as exc:
            return "not flagged: " + " ".join(m for ms in exc.errors.values() for m in ms)
