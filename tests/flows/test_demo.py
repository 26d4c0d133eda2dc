"""The demo's password handling and its schedules (the data and training are tested elsewhere)."""

import io
from pathlib import Path

import pytest

from annotation.jobs import RETRY_SCHEDULE
from crowd.jobs import ABANDON_SCHEDULE
from demo import setup as demo
from tests.helpers.data import data_path


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_no_test_writes_the_checkouts_demo_password(tmp_path):
    """Every test's var/ is its own (tests/conftest.py), so setting up the demo in a test leaves the
    running demo's password alone."""
    from django.conf import settings

    assert Path(settings.VAR_DIR) == tmp_path / "var"
    demo.demo_password("pw-of-a-test-1234")
    assert (tmp_path / "var" / "demo_password").read_text() == "pw-of-a-test-1234"


def test_generated_password_is_remembered_and_printed_again(var_dir):
    first, source = demo.demo_password(None)
    assert "generated now" in source
    assert (var_dir / "demo_password").read_text() == first
    assert oct((var_dir / "demo_password").stat().st_mode & 0o777) == "0o600"
    again, source = demo.demo_password(None)
    assert (again, "remembered" in source) == (first, True)


def test_demo_password_from_the_environment_replaces_the_remembered_one(var_dir):
    demo.demo_password(None)
    given, source = demo.demo_password("Second-pass-555")
    assert (given, "from DEMO_PASSWORD" in source) == ("Second-pass-555", True)
    assert demo.demo_password(None)[0] == "Second-pass-555"


@pytest.mark.django_db
def test_demo_users_keep_a_changed_password_unless_asked(hate_task, django_user_model):
    demo.ensure_demo_users(hate_task, "first-password-1", reset_password=False)
    owner = django_user_model.objects.get(username="demo-owner")
    assert owner.check_password("first-password-1") and owner.is_superuser
    assert hate_task.owners.filter(pk=owner.pk).exists()
    demo.ensure_demo_users(hate_task, "other-password-2", reset_password=False)
    owner.refresh_from_db()
    assert owner.check_password("first-password-1")
    demo.ensure_demo_users(hate_task, "other-password-2", reset_password=True)
    owner.refresh_from_db()
    assert owner.check_password("other-password-2")
    annotator = django_user_model.objects.get(username="demo-annotator")
    assert not annotator.is_staff and annotator.check_password("other-password-2")


def _schedule_rows() -> dict[str, tuple]:
    from django_q.models import Schedule

    return {s.name: (s.func, s.schedule_type, s.minutes, s.repeats) for s in Schedule.objects.all()}


@pytest.mark.django_db
def test_the_demo_creates_every_schedule_ensure_schedules_creates_once(settings, tmp_path):
    """The demo starts the same job cluster as ``make serve``: the same recurring jobs, the crowd app's
    "abandon expired participations" included (its own list once missed it)."""
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("ensure_schedules", stdout=io.StringIO())
    served = _schedule_rows()
    Schedule.objects.all().delete()

    settings.VAR_DIR = tmp_path
    for _ in range(2):  # a second run updates, never duplicates
        demo.setup_demo(password="pw-one-1234", tasks=[], log=lambda _: None)
    assert _schedule_rows() == served
    assert {RETRY_SCHEDULE, ABANDON_SCHEDULE} <= served.keys()
    assert Schedule.objects.get(name=ABANDON_SCHEDULE).func == "crowd.jobs.abandon_expired_job"


@pytest.fixture
def demo_models(hate_task, tmp_path, settings):
    """The three demo targets, already 'trained' (tiny real models), so setup_demo only lays out rounds."""
    from models_registry.services import register_local_model
    from tests.helpers.tiny_models import build_tiny_classifier

    settings.VAR_DIR = tmp_path
    for rounds in ((1,), (1, 2), (1, 2, 3)):
        name = demo.model_name(rounds, "quick")
        path = build_tiny_classifier(tmp_path / name)
        register_local_model(task=hate_task, name=name, path=str(path), card={})


@pytest.mark.django_db(transaction=True)
def test_the_uncertainty_mode_task_takes_hate_speechs_target_and_its_pilot_runs_once(
    hate_task, demo_models, settings
):
    from annotation.models import Example
    from models_registry.models import RegisteredModel, RoundTarget
    from models_registry.round_targets import set_round_targets
    from tasks.models import Task
    from tasks.services import ensure_round
    from validation.models import Validation

    data_path(settings, "hatemoji_build")  # the pilot's statements
    # The hate-speech task as its demo lays it out, without importing its data: round 4's target.
    source = RegisteredModel.objects.get(task=hate_task, name="minilm-quick-r1-2-3")
    set_round_targets(round=ensure_round(task=hate_task, number=4), models=[source])
    for _ in range(2):  # a second run finds the target and the pilot's examples, and adds nothing
        demo.setup_demo(password="pw-one-1234", tasks=["hate-speech-unsure"], log=lambda _: None, pilot=True)
    task = Task.objects.get(slug="hate-speech-unsure")
    assert task.cfg.uncertainty.rule == "top probability under 0.7"
    assert task.current_round.number == 1 and not task.current_round.is_closed
    target = RoundTarget.objects.get(round=task.current_round).model
    source = RegisteredModel.objects.get(task=hate_task, name="minilm-quick-r1-2-3")
    assert (target.task, target.name, target.path, target.status) == (task, source.name, source.path, "ready")
    examples = Example.objects.filter(round=task.current_round)
    assert examples.count() == 48 and not examples.filter(model_unsure__isnull=True).exists()
    validated = Validation.objects.filter(example__round=task.current_round)
    assert not validated.exclude(example__model_unsure=True).exists()
    for example in examples.filter(model_unsure=True):
        assert (
            example.validations.count() == 3
            and example.validations.filter(given_target__isnull=False).count() == 3
        )


@pytest.mark.django_db(transaction=True)
def test_second_run_keeps_the_owners_rounds_and_targets(hate_task, demo_models, settings):
    from models_registry.models import RegisteredModel, RoundTarget
    from tasks.services import close_round, ensure_round, set_current_round

    data_path(settings, "hatemoji_build")
    first = demo.setup_demo(password="pw-one-1234", tasks=["hate-speech"], log=lambda _: None)
    hate_task.refresh_from_db()
    assert hate_task.current_round.number == 4
    assert first.trained == [] and first.tasks["hate-speech"].models[4] == "minilm-quick-r1-2-3"
    assert [r.is_closed for r in hate_task.rounds.order_by("number")] == [True, True, True, False]

    # The owner closes round 4, opens round 5 and gives round 4 another target.
    close_round(round_=hate_task.current_round)
    round5 = ensure_round(task=hate_task, number=5)
    set_current_round(task=hate_task, round_=round5)
    other = RegisteredModel.objects.get(name="minilm-quick-r1")
    RoundTarget.objects.filter(round__number=4, round__task=hate_task).update(model=other)

    second = demo.setup_demo(tasks=["hate-speech"], log=lambda _: None)
    hate_task.refresh_from_db()
    assert hate_task.current_round == round5
    assert second.tasks["hate-speech"].models[4] == "minilm-quick-r1"
    assert second.evaluated == 0


def test_every_demo_task_module_names_a_builtin_task():
    from demo.demo_tasks import demo_tasks
    from tasks.services import BUILTIN_TASKS

    specs = demo_tasks()
    slugs = [spec.slug for spec in specs]
    assert slugs == ["hate-speech", "hate-speech-unsure", "red-team", "sentiment", "nli", "qa"]
    for spec in specs:
        assert spec.slug in BUILTIN_TASKS
        # A task with trained targets trains its open round's; the red-teaming target is not trained.
        assert spec.open_round in spec.target_training_rounds or not spec.target_training_rounds


@pytest.mark.parametrize("worker_running, cleaned", [(False, True), (True, False)])
def test_interrupted_jobs_are_failed_only_when_no_worker_runs(
    db, settings, tmp_path, monkeypatch, worker_running, cleaned
):
    # demo.sh sets up the later tasks in the background while the worker runs: a job marked running
    # then is really running and must not be marked interrupted.
    calls = []
    monkeypatch.setattr(demo, "fail_interrupted_training_jobs", lambda: calls.append("training"))
    monkeypatch.setattr(demo, "fail_interrupted_evaluations", lambda: calls.append("evaluations"))
    settings.VAR_DIR = tmp_path
    demo.setup_demo(password="pw-one-1234", tasks=[], log=lambda _: None, worker_running=worker_running)
    assert calls == (["training", "evaluations"] if cleaned else [])


def test_an_evaluation_cut_off_by_a_stop_is_run_again_but_a_real_failure_is_not(db, hate_task, monkeypatch):
    from leaderboards.models import Dataset, DatasetItem, Score
    from leaderboards.scheduling import EVALUATION_INTERRUPTED
    from models_registry.models import RegisteredModel

    model = RegisteredModel.objects.create(task=hate_task, name="m", status="ready", is_published=True)
    scores = {}
    for slug, error in (("cut-off", EVALUATION_INTERRUPTED), ("broken", "RuntimeError: the model crashed")):
        dataset = Dataset.objects.create(
            task=hate_task, slug=slug, name=slug, kind=Dataset.Kind.STATIC, access=Dataset.Access.SCORING
        )
        DatasetItem.objects.create(dataset=dataset, inputs={"statement": "x"}, target="hateful")
        scores[slug] = Score.objects.create(
            model=model, dataset=dataset, status="failed", error_message=error
        )
    ran = []

    def fake_run(score_id, progress=None):
        ran.append(score_id)
        Score.objects.filter(pk=score_id).update(status="done", perf=0.5)
        return "done"

    monkeypatch.setattr(demo, "run_evaluation_job", fake_run)
    report = demo.DemoReport()
    demo.evaluate_demo(hate_task, report, log=lambda _: None, wait_seconds=0)
    assert ran == [scores["cut-off"].pk]
    assert Score.objects.get(pk=scores["broken"].pk).status == "failed"


@pytest.mark.django_db(transaction=True)
def test_skipping_evaluations_lays_out_the_task_and_the_next_run_evaluates(
    hate_task, demo_models, settings, monkeypatch
):
    """demo.sh's first step (``--skip-evaluations``) opens the task without evaluating; the background
    run then evaluates each pending pair once."""
    from leaderboards.models import Score

    data_path(settings, "hatemoji_build")
    # Jobs are queued for a worker, as in the demo, not run inline when a dataset or model is saved.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    ran = []
    real_run = demo.run_evaluation_job
    monkeypatch.setattr(
        demo, "run_evaluation_job", lambda score_id: ran.append(score_id) or real_run(score_id)
    )
    first = demo.setup_demo(password="pw-one-1234", tasks=["hate-speech"], log=lambda _: None, evaluate=False)
    hate_task.refresh_from_db()
    assert hate_task.current_round.number == 4
    assert (first.evaluated, ran) == (0, [])
    assert not Score.objects.exclude(status=Score.Status.PENDING).exists()

    second = demo.setup_demo(tasks=["hate-speech"], log=lambda _: None)
    assert second.evaluated == len(ran) == len(set(ran)) > 0
    assert not Score.objects.filter(status__in=[Score.Status.PENDING, Score.Status.RUNNING]).exists()
    # Every round dataset that is not hidden got its evaluation (the train splits are hidden).
    evaluated = set(Score.objects.values_list("dataset__slug", flat=True))
    assert {"round-1-test", "round-1-dev"} <= evaluated and "round-1-train" not in evaluated
