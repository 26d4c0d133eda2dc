"""``python manage.py retry_predictions [--limit N]``: score examples whose target model failed."""

from django.core.management.base import BaseCommand

from annotation.predictions import retry_failed_predictions


class Command(BaseCommand):
    """Re-run failed target-model predictions and print how many examples are now scored."""

    help = "Re-run the target models on examples whose prediction failed and store model_wrong."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=None, help="At most this many examples.")

    def handle(self, *args, limit=None, **options):
        counts = retry_failed_predictions(limit=limit)
        self.stdout.write(
            f"examples tried: {counts['examples']}, completed: {counts['completed']}, "
            f"still failing: {counts['still_failed']}"
        )
