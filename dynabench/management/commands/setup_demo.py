import os

from django.core.management.base import BaseCommand

from dynabench.demo import setup_demo


class Command(BaseCommand):
    help = "Set up the local demo: import the real data, train the targets, create demo accounts. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--recipe", choices=["quick", "finetune"], default="quick")
        parser.add_argument("--password", default=None, help="Default: $DEMO_PASSWORD, else generated once.")

    def handle(self, *args, recipe, password, **options):
        report = setup_demo(
            recipe=recipe, password=password or os.environ.get("DEMO_PASSWORD"), log=self.stdout.write
        )
        for number, name in report.models.items():
            self.stdout.write(f"  round {number}: target {name}")
        if report.reused:
            self.stdout.write(f"Reused trained models: {', '.join(report.reused)}")
        self.stdout.write(self.style.SUCCESS("Demo ready."))
        self.stdout.write("  accounts: demo-owner (task owner, admin) and demo-annotator")
        self.stdout.write(f"  password: {report.password}   ({report.password_source})")
