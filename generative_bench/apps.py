from django.apps import AppConfig


class GenerativeBenchConfig(AppConfig):
    name = "generative_bench"
    verbose_name = "Generative benchmarking"

    def ready(self):
        # The task page (tasks, below) shows the side-by-side ratings per model through its section
        # registry, named as the arena names them.
        from tasks import page_sections

        from .arena.side_by_side import task_page_section

        page_sections.register(task_page_section)
