"""The judges page's figures as plain data, for the page and ``GET /api/tasks/{slug}/judges/`` alike
(``selectors.judge_panels``, with model names as the viewer may see them)."""

from __future__ import annotations

from models_registry.selectors import ModelLabels
from tasks.models import Task

from . import selectors


def _agreement(a: selectors.JudgeAgreement) -> dict:
    return {
        "n": a.n,
        "kappa": a.kappa,
        "kappa_undefined": a.kappa_undefined,
        "kappa_interval": list(a.kappa_interval) if a.kappa_interval else None,
        "raw": a.raw,
        "raw_interval": list(a.raw_interval) if a.raw_interval else None,
        "left_out": a.left_out,
    }


def _rate(rate: selectors.Rate) -> dict:
    across = rate.clustered.as_dict() if rate.clustered is not None else None
    return {"judged": rate.judged, "failed": rate.failed, "rate": rate.rate, "across_people": across}


def judges_figures(task: Task, user, *, samples: int = 1000) -> dict:
    """The figures of ``task``'s active judges as ``user`` may see them:

    ``{"task": slug, "min_items": selectors.MIN_TRUSTED_ITEMS, "failures_only": bool, "judges": [{"id",
    "name", "model", "agreement_floor", "trusted", "status", "progress", "agreement": {n, kappa,
    kappa_undefined, kappa_interval [low, high], raw, raw_interval, left_out}, "rounds": [{"round" (number), "agreement": {...}, "judge":
    {judged, failed, rate, across_people}, "people": {attempts, verified, attack_success_rate,
    across_people}, "corrected": {observed, outputs, corrected, interval, refused, undefined_share,
    errors: {n, sensitivity, sensitivity_interval, specificity, specificity_interval, failed_by_people,
    not_failed_by_people}}, "sensitivity_by_kind": [{kind, caught, n, sensitivity, interval}]}], "models": [{"round",
    "model", "is_target", "judged", "failed", "rate", "people": {judged, failed, rate} or None}]}]}``
    (``people``: people's failure rate on the same model and round, ``ModelRow.people``).
    ``across_people`` is a rate's interval across the people who wrote the conversations
    (``core.clustered.ClusteredRate.as_dict``: rate, interval, people, effective_sample_size,
    interval_method, n), None with nothing judged.

    Rates are fractions in [0, 1] (None with nothing judged); kappa in [-1, 1], or None with
    ``kappa_undefined`` saying why (``core.agreement.NO_ITEMS``, ``ONE_LABEL``). ``failures_only``: the
    task validates only conversations claimed failed (``validate_non_fooling`` off), so people's
    verdicts on conversations, and the agreement with them, hold only claimed failures (replayed answers
    people rated are served whatever the setting). A model is named as on
    the leaderboard ("Anonymous model N" for an anonymous one the viewer may not identify); a model the
    viewer may not see is left out of ``models`` and named ``models_registry.selectors.HIDDEN_MODEL`` as a judge.
    """
    label = ModelLabels(user, task)

    judges = []
    for panel in selectors.judge_panels(task, samples=samples):
        judge = panel.judge
        judges.append(
            {
                "id": judge.pk,
                "name": judge.name,
                "model": label(judge.model),
                "agreement_floor": judge.agreement_floor,
                "trusted": panel.trusted,
                "status": judge.status,
                "progress": judge.progress,
                "agreement": _agreement(panel.agreement),
                "rounds": [
                    {
                        "round": row.round.number,
                        "agreement": _agreement(row.agreement),
                        "judge": _rate(row.judge_rate),
                        "corrected": row.corrected.as_dict() if row.corrected is not None else None,
                        "sensitivity_by_kind": [k.as_dict() for k in row.by_kind],
                        "people": {
                            "attempts": row.people.attempts,
                            "verified": row.people.verified,
                            "attack_success_rate": row.people.attack_success_rate,
                            "across_people": row.people.asr.as_dict() if row.people.asr else None,
                        },
                    }
                    for row in panel.rounds
                ],
                "models": [
                    {
                        "round": row.round.number,
                        "model": label(row.model),
                        "is_target": row.is_target,
                        **_rate(row.rate),
                        "people": None
                        if row.people is None
                        else {
                            "judged": row.people.judged,
                            "failed": row.people.failed,
                            "rate": row.people.rate,
                        },
                    }
                    for row in panel.models
                    if row.model.pk in label.visible
                ],
            }
        )
    return {
        "task": task.slug,
        "min_items": selectors.MIN_TRUSTED_ITEMS,
        # The validation queue's rule (validation.selectors): without validate_non_fooling, conversations
        # their authors judged good are never served to validators, so never settled.
        "failures_only": not task.cfg.validate_non_fooling,
        "judges": judges,
    }
