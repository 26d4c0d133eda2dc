"""The arena's pages (docs/benchmarking.md, "Arena"): write a prompt or take one from a round, read two
anonymous answers side by side, vote, then see which models answered; and the public ranking.

Plain forms that work without JavaScript (post, redirect, get); ``static/generative_bench/arena.js`` only
disables the buttons while the models answer and says so. The model names are not in a battle's page
at all until its vote is recorded.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from generative_bench.kinds import benchmarked
from models_registry.serving import QueueFull
from tasks import qualification
from tasks.models import Task
from tasks.selectors import task_or_404

from ..models import Battle
from ..pairwise.presenting import pairwise_figures
from . import selectors, services
from .forms import PromptForm, RoundPromptForm, VoteForm

#: HTTP status of a page showing a refusal of the services (``ArenaError.code``).
STATUS_OF_CODE = {
    "invalid": 400,
    "too_long": 400,
    "blocked": 403,
    "not_enough_models": 409,
    "not_ready": 409,
    "not_found": 404,
}


def _arena_task(slug: str) -> Task:
    task = task_or_404(slug)
    if not benchmarked(task.cfg):
        raise Http404("Not a red-teaming task.")
    return task


def _owned_arena_task(request, slug: str) -> Task:
    """The arena task ``slug`` if the user owns it; a 404 otherwise, as for a page they may not see."""
    task = _arena_task(slug)
    if not task.is_owner(request.user):
        raise Http404("No such page.")
    return task


def _refusal(request, task: Task):
    """Why the user may not vote in the arena of ``task`` (a message), a redirect to the page that lifts
    it (tutorial, quiz), or None when they may: the rule of ``services.check_may_battle``."""
    try:
        services.check_may_battle(task, request.user)
    except services.ArenaError as exc:
        return str(exc)
    except qualification.NotQualified as exc:
        if exc.url:
            return redirect(qualification.with_next(exc.url, request.get_full_path()))
        return exc.message
    return None


def _arena_page(request, task: Task, *, prompt: str = "", error: str = "", status: int = 200):
    refusal = _refusal(request, task)
    if isinstance(refusal, HttpResponse):
        return refusal
    n_models = selectors.arena_models(task).count()
    return render(
        request,
        "generative_bench/arena/arena.html",
        {
            "task": task,
            "cfg": task.cfg,
            "refusal": refusal,
            "error": error,
            "prompt": prompt,
            "n_models": n_models,
            # Each form its own token: a page gone back to sends another prompt, not the first battle.
            "rounds": [(number, count, uuid.uuid4()) for number, count in selectors.rounds_with_prompts(task)]
            if refusal is None
            else [],
            "client_token": uuid.uuid4(),
            "max_length": f"{task.cfg.max_length_of(task.cfg.input_fields[0]):,}",
        },
        status=403 if refusal is not None and status == 200 else status,
    )


@login_required
def arena(request, slug: str):
    """The arena: a box for a prompt, "Use a prompt from round N" for each round with settled
    conversations, and "Send to two models". A person who may not contribute to the task is told why
    (403); one who must first take the quiz is sent to it."""
    return _arena_page(request, _arena_task(slug))


@login_required
@require_POST
def start(request, slug: str):
    """Start a battle on the posted prompt (``prompt``) or on one from round ``round``; then its page. A
    refused prompt comes back in the box with why above it."""
    task = _arena_task(slug)
    refusal = _refusal(request, task)
    if refusal is not None:
        return _arena_page(request, task)
    from_round = "round" in request.POST
    form = RoundPromptForm(request.POST) if from_round else PromptForm(request.POST)
    if not form.is_valid():
        return _arena_page(request, task, error="Write a prompt, or take one from a round.", status=400)
    data = form.cleaned_data
    prompt = "" if from_round else data["prompt"]
    try:
        if from_round:
            example = selectors.pick_round_prompt(task, data["round"], request.user)
            if example is None:
                raise services.ArenaError(
                    f"Round {data['round']} has no settled conversation to take a prompt from.",
                    code="invalid",
                )
            battle = services.start_battle(
                task=task, voter=request.user, source_example=example, client_token=data["client_token"]
            )
        else:
            battle = services.start_battle(
                task=task, voter=request.user, prompt=prompt, client_token=data["client_token"]
            )
    except services.ArenaError as exc:
        return _arena_page(
            request, task, prompt=prompt, error=str(exc), status=STATUS_OF_CODE.get(exc.code, 409)
        )
    except qualification.NotQualified as exc:
        return _arena_page(request, task, prompt=prompt, error=exc.message, status=403)
    return redirect("generative_bench:arena_battle", slug=task.slug, pk=battle.pk)


def _own_battle(request, task: Task, pk: int) -> Battle:
    battle = selectors.own_battle(request.user, pk)
    if battle is None or battle.task_id != task.pk:
        raise Http404("No such battle.")
    return battle


def _prompt_parts(battle: Battle) -> tuple[str, str]:
    """``(passage, prompt)`` of a battle's messages: the system message's text (empty without one) and the
    last user message's."""
    system = next((m["content"] for m in battle.messages if m.get("role") == "system"), "")
    user = next((m["content"] for m in reversed(battle.messages) if m.get("role") == "user"), "")
    return system, user


def _earlier_turns(battle: Battle) -> list[tuple[str, str]]:
    """``[(user message, kept answer)]`` of the turns before ``battle``'s last user message."""
    turns = [m for m in battle.messages if m.get("role") in ("user", "assistant")][:-1]
    return [(turns[i]["content"], turns[i + 1]["content"]) for i in range(0, len(turns) - 1, 2)]


@login_required
def battle(request, slug: str, pk: int):
    """One of the person's battles: the prompt, answers A and B side by side, and the vote form while it
    is ready; once voted, which model gave each answer and "Next battle". Another user's battle is a
    404."""
    task = _arena_task(slug)
    battle = _own_battle(request, task, pk)
    services.fail_stale_battles(voter=request.user)
    battle.refresh_from_db()
    return _battle_page(request, task, battle)


def _battle_page(
    request, task: Task, battle: Battle, *, error: str = "", follow_up: str = "", status: int = 200
):
    """The battle's page; ``error`` above the vote form and ``follow_up`` back in its box (a refused next
    message is not lost)."""
    names = {}
    if battle.revealed:
        names = selectors.shown_names(request.user, task, [battle.model_a, battle.model_b])
    passage, prompt = _prompt_parts(battle)
    following = Battle.objects.filter(parent=battle).only("pk").first()
    return render(
        request,
        "generative_bench/arena/battle.html",
        {
            "task": task,
            "battle": battle,
            "passage": passage,
            "prompt": prompt,
            "source_round": battle.round.number if battle.source_example_id and battle.round_id else None,
            # Only after the vote: before it, neither name is anywhere in the page.
            "name_a": names.get(battle.model_a_id),
            "name_b": names.get(battle.model_b_id),
            "votes": Battle.Vote.choices,
            "vote_label": battle.get_vote_display() if battle.vote else "",
            # The conversation so far (a vote per turn): each earlier user message and the answer kept.
            "earlier": _earlier_turns(battle),
            "may_continue": battle.turn < task.cfg.max_turns,
            "max_turns": task.cfg.max_turns,
            "following": following,
            "error": error,
            "follow_up": follow_up,
            "message_max_length": task.cfg.max_length_of(task.cfg.input_fields[0]),
        },
        status=status,
    )


@login_required
@require_POST
def vote(request, slug: str, pk: int):
    """Vote on one of the person's battles (``vote``: ``a``, ``b``, ``tie``, ``both_bad``); then the battle's
    page, which now names the models. A second vote (a double click, another tab) changes nothing and is
    told so."""
    task = _arena_task(slug)
    battle = _own_battle(request, task, pk)
    form = VoteForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose A is better, B is better, Tie or Both are bad.")
        return redirect("generative_bench:arena_battle", slug=task.slug, pk=battle.pk)
    follow_up = form.cleaned_data["follow_up"] or None
    try:
        battle, recorded = services.vote(
            battle=battle, voter=request.user, vote=form.cleaned_data["vote"], follow_up=follow_up
        )
    except services.ArenaError as exc:
        if exc.code == "not_found":
            raise Http404("No such battle.") from None
        battle.refresh_from_db()
        if follow_up is not None and battle.status == Battle.Status.READY:
            # Refused before anything was stored: the page again, the message kept in its box.
            status = STATUS_OF_CODE.get(exc.code, 409)
            return _battle_page(request, task, battle, error=str(exc), follow_up=follow_up, status=status)
        messages.error(request, str(exc))
    except qualification.NotQualified as exc:
        messages.error(request, exc.message)
    except QueueFull as exc:
        messages.error(request, f"Your vote is recorded, but the next turn could not start: {exc}")
    else:
        following = Battle.objects.filter(parent=battle).first()
        if recorded:
            done = "Next turn:" if following is not None else ""
            messages.success(request, f"Your vote is recorded: {battle.get_vote_display()}. {done}".strip())
        else:
            # A double click, or another tab that voted first: said even when that tab went on to a next
            # turn, so a different vote or next message from this tab is not dropped without a word.
            went_on_with = following.messages[-1]["content"] if following is not None else None
            unsent = (  # compared as words: a double click's text comes back with CRLF and spaces as sent
                " Your next message here was not sent: this conversation went on with the one sent first."
                if follow_up is not None
                and went_on_with is not None
                and follow_up.split() != went_on_with.split()
                else ""
            )
            messages.info(
                request,
                f"Your vote on this battle was already recorded ({battle.get_vote_display()}); "
                f"it counts once.{unsent}",
            )
        if following is not None:
            return redirect("generative_bench:arena_battle", slug=task.slug, pk=following.pk)
    return redirect("generative_bench:arena_battle", slug=task.slug, pk=battle.pk)


def ranking(request, slug: str):
    """The arena's ranking, public as the leaderboard is: each model's Bradley-Terry score with its 95%
    interval, its rank and votes; the votes per pair; how many votes were left out and why."""
    task = _arena_task(slug)
    summary = selectors.arena_summary(task)
    return render(
        request,
        "generative_bench/arena/ranking.html",
        {
            "task": task,
            "table": selectors.ranking_table(task, request.user, summary),
            # The pairwise judges of the battles: position bias, agreement with these votes.
            "pairwise": pairwise_figures(task, request.user),
            # The task's owners only: who is flagged by the voter-integrity tests, and why.
            "voters": selectors.voter_check_table(task, request.user),
            "leak": selectors.latest_leak(task, request.user),
            "is_owner": task.is_owner(request.user),
        },
    )


@login_required
@require_POST
def measure_leak(request, slug: str):
    """Queue a leak-rate measurement of the arena (the task's owners only; anyone else gets a 404); then
    the ranking page, which shows the figure once the job has run."""
    task = _owned_arena_task(request, slug)
    if services.request_leak_measurement(task):
        messages.success(request, "The leak rate is being measured; reload this page in a minute to see it.")
    else:
        messages.error(request, "The job queue cannot be reached; try again later.")
    return redirect("generative_bench:arena_ranking", slug=task.slug)


@login_required
@require_POST
def hold_voters(request, slug: str):
    """Hold for review every voter the voter-integrity tests flag (the task's owners only; anyone else
    gets a 404, as for a page they may not see); then the ranking page, which says how many were held."""
    task = _owned_arena_task(request, slug)
    checks = selectors.voter_checks(task)
    names = selectors.shown_names(request.user, task, task.models.all())
    held = services.hold_flagged_voters(task=task, checks=checks, names=names)
    messages.success(
        request,
        f"Held for review: {len(held)} voter{'s' if len(held) != 1 else ''}; their votes leave the ranking "
        'until you release them (in the admin: Task workers, "Release the selected workers\' holds").',
    )
    return redirect("generative_bench:arena_ranking", slug=task.slug)
