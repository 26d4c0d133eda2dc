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

    def ready(self) -> None:
        from django_q.signals import post_spawn

        from .job_priority import lower_job_worker_priority

        post_spawn.connect(lower_job_worker_priority, dispatch_uid="core.lower_job_worker_priority")
