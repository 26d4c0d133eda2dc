from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The one-command demo: ``manage.py setup_demo`` (real data, real targets, two accounts) and
    ``manage.py demo_server``. It sits above every app (it lays out tasks, trains, evaluates) and no app
    imports it. It owns no model."""

    name = "demo"
