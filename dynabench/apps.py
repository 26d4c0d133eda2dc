from django.apps import AppConfig


class DynabenchConfig(AppConfig):
    """The project package doubles as an app so project-wide commands (``setup_demo``) and templates live here."""

    name = "dynabench"
