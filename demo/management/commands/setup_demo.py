import os

from core.audit import OperatorCommand
from demo.setup import setup_demo


class Command(OperatorCommand):
    help = "Set up the local demo: import the real data, train the targets, create demo accounts. Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--recipe", choices=["quick", "finetune"], default="quick")
        parser.add_argument("--password", default=None, help="Default: $DEMO_PASSWORD, else generated once.")
        parser.add_argument(
            "--tasks", nargs="+", default=None, metavar="SLUG", help="Only these demo tasks (default: all)."
        )
        parser.add_argument(
            "--worker-running",
            action="store_true",
            help="A job worker may be running: leave jobs marked running alone (demo.sh's background setup).",
        )

        parser.add_argument(
            "--skip-evaluations",
            action="store_true",
            help="Lay out the tasks and train their targets, but leave the round datasets and evaluations "
            "to a later run (demo.sh serves sooner; its background run evaluates).",
        )

        parser.add_argument(
            "--no-pilot",
            action="store_true",
            help="Leave the red-teaming round empty instead of running its simulated pilot "
            "(docs/demo.md, a few minutes on 2 cores); DEMO_PILOT=0 (or false, no, off) in the environment does the same.",
        )

    def handle(self, *args, recipe, password, tasks, worker_running, skip_evaluations, no_pilot, **options):
        report = setup_demo(
            recipe=recipe,
            password=password or os.environ.get("DEMO_PASSWORD"),
            tasks=tasks,
            log=self.stdout.write,
            worker_running=worker_running,
            evaluate=not skip_evaluations,
            pilot=not no_pilot
            and os.environ.get("DEMO_PILOT", "1").strip().lower() not in ("0", "false", "no", "off"),
        )
        for slug, task_report in report.tasks.items():
            for number, name in task_report.models.items():
                self.stdout.write(f"  {slug} round {number}: target {name}")
        if report.reused:
            self.stdout.write(f"Reused trained models: {', '.join(report.reused)}")
        if report.evaluation_failures:
            self.stdout.write(self.style.WARNING("Evaluations that failed:"))
            for failure in report.evaluation_failures:
                self.stdout.write(f"  {failure}")
        if skip_evaluations:
            self.stdout.write(
                self.style.SUCCESS("Demo tasks laid out; their leaderboards fill when evaluated.")
            )
        else:
            self.stdout.write(self.style.SUCCESS("Demo ready."))
        self.stdout.write("  accounts: demo-owner (owner of every demo task, admin) and demo-annotator")
        self.stdout.write(f"  password: {report.password}   ({report.password_source})")
