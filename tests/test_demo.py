"""The demo's password handling and its retry schedule (the data and training are tested elsewhere)."""

import pytest

from dynabench import demo


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


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


@pytest.mark.django_db
def test_retry_schedule_is_created_once():
    from django_q.models import Schedule

    demo.ensure_retry_schedule()
    demo.ensure_retry_schedule()
    schedule = Schedule.objects.get(name=demo.RETRY_SCHEDULE)
    assert Schedule.objects.count() == 1
    assert (schedule.func, schedule.minutes) == ("annotation.jobs.retry_failed_predictions_job", 2)
