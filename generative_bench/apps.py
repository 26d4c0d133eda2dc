from django.apps import AppConfig


class GenerativeBenchConfig(AppConfig):
    name = "generative_bench"
    verbose_name = "Generative benchmarking"
