"""Checks of a task config that need an app above ``tasks`` (docs/architecture.md, "Reaching up without
an import"): the config names things those apps keep, such as an annotation assistant's generative model
in the registry. An app registers a check in its ``AppConfig.ready()`` (``register``); where a config is
saved (the admin's task form) ``check_config`` runs the schema and cross-field rules
(``config.validate_config``), then every registered check.
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError

from .config import validate_config

#: ``(config, task) -> [problem, ...]``: each problem a sentence starting with the JSON path it is about;
#: ``task`` the task the config is for (None for a task not yet stored).
ConfigCheck = Callable[[dict, object], list[str]]

_checks: list[ConfigCheck] = []


def register(check: ConfigCheck) -> ConfigCheck:
    """Add ``check`` (once); returns it, so it serves as a decorator."""
    if check not in _checks:
        _checks.append(check)
    return check


def check_config(config, task=None) -> None:
    """``validate_config``, then every registered check on a config that passed it, for ``task`` (None:
    a task not yet stored).

    Raises:
        ValidationError: one message per problem found.
    """
    validate_config(config)
    problems = [problem for check in _checks for problem in check(config, task)]
    if problems:
        raise ValidationError(problems)
