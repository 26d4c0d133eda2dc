"""The annotator leaderboard page: ``/tasks/<slug>/annotators/?round=N`` (public)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from core.text_rules import ascii_id
from tasks.models import Round
from tasks.selectors import rounds_of, task_or_404

from .board import annotator_board

PAGE_SIZE = 50


def annotator_leaderboard(request, slug: str):
    """Every round (no ``round``, or ``round=all``) or one round; a competition round shows its final
    table. An unknown round is a 404."""
    task = task_or_404(slug)
    raw = request.GET.get("round", "")
    round_ = None
    if raw not in ("", "all"):
        number = ascii_id(raw)
        round_ = Round.objects.filter(task=task, number=number).first() if number else None
        if round_ is None:
            raise Http404("No such round.")
    board = annotator_board(task, round_)
    page = Paginator(board.rows, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "leaderboards/annotators.html",
        {"task": task, "board": board, "page": page, "rounds": rounds_of(task)},
    )
