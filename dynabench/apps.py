from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project package: settings and wiring (URLs, WSGI/ASGI, the site's templates and static files, and
    the ``manage.py`` commands that span apps: ``ensure_schedules``, ``fetch_datasets``).

    It is an app only so that Django finds those commands, templates and static files. It owns no model;
    its label is ``project`` because the kernel (``core``) keeps the historical label ``dynabench``.
    """

    name = "dynabench"
    label = "project"
