from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The kernel: code every app shares (text rules, env, the API toolkit, audit, metrics, job queue).

    Its label stays ``dynabench``, the label this code had while it lived in the project package, so the
    migration history (``django_migrations``), the ``dynabench_idempotencyrecord`` table, its content type
    and permissions are those of a database created before the move: ``manage.py migrate`` has nothing
    to do (docs/architecture.md, "Folders and layers").
    """

    name = "core"
    label = "dynabench"
    verbose_name = "Dynabench"
