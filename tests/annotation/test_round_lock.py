"""The round lock of ``create_example`` on PostgreSQL: inserts into one round hold its row in share mode.

Three real transactions on three connections (threads), each held open at a known point:
- two inserts into the same round do not wait for each other (the lock is shared);
- closing the round waits for an insert in flight, and the insert is stored before the round closes;
- an insert that reaches the lock while a close is uncommitted waits for it, then is refused.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotation import signals
from annotation.models import Example
from annotation.services import ExampleError, create_example
from tasks.models import Round
from tasks.services import close_round
from tasks.signals import round_ended
from tests.factories.accounts import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

# Long enough for a blocked transaction to show it is blocked on a busy machine; the test passes in
# about this much time when the lock works as it should.
BLOCKED = 1.5


class Gate:
    """A signal receiver that holds the first transaction that reaches it until ``release()``."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()
        self.held_one = False
        self._lock = threading.Lock()

    def __call__(self, **kwargs) -> None:
        with self._lock:
            first, self.held_one = not self.held_one, True
        if first:
            self.reached.set()
            assert self.released.wait(30), "the gate was never released"

    def release(self) -> None:
        self.released.set()


def _in_thread(func) -> tuple[threading.Thread, dict]:
    """Run ``func`` on its own connection; its result or exception lands in the returned dict."""
    out: dict = {}

    def run():
        try:
            out["result"] = func()
        except Exception as exc:  # noqa: BLE001 - the test asserts on it
            out["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def _create(task, user, statement: str):
    return create_example(task=task, annotator=user, inputs={"statement": statement}, target="hateful")


@pytest.fixture
def gate_on_insert():
    gate = Gate()
    signals.example_created.connect(gate, dispatch_uid="test-round-lock-insert")
    yield gate
    gate.release()
    signals.example_created.disconnect(dispatch_uid="test-round-lock-insert")


@pytest.fixture
def gate_on_close():
    gate = Gate()
    round_ended.connect(gate, dispatch_uid="test-round-lock-close")
    yield gate
    gate.release()
    round_ended.disconnect(dispatch_uid="test-round-lock-close")


def test_two_inserts_into_one_round_do_not_wait_for_each_other(
    hate_task, annotator, rule_model, gate_on_insert
):
    first, first_out = _in_thread(lambda: _create(hate_task, annotator, "held open"))
    assert gate_on_insert.reached.wait(30)
    # The first insert holds the round's lock (its transaction is open, its example inserted); a second
    # writer's insert commits meanwhile.
    second, second_out = _in_thread(lambda: _create(hate_task, UserFactory(), "not kept waiting"))
    second.join(BLOCKED * 4)
    assert not second.is_alive(), "the second insert waited for the first one's transaction"
    assert "error" not in second_out
    assert Example.objects.filter(inputs__statement="not kept waiting").count() == 1
    gate_on_insert.release()
    first.join(30)
    assert "error" not in first_out
    assert Example.objects.count() == 2


def test_closing_the_round_waits_for_an_insert_in_flight(
    hate_task, hate_round, annotator, rule_model, gate_on_insert
):
    writer, writer_out = _in_thread(lambda: _create(hate_task, annotator, "in flight"))
    assert gate_on_insert.reached.wait(30)
    closer, closer_out = _in_thread(lambda: close_round(round_=Round.objects.get(pk=hate_round.pk)))
    closer.join(BLOCKED)
    assert closer.is_alive(), "the round closed under an insert that had checked it was open"
    assert Round.objects.get(pk=hate_round.pk).is_closed is False
    gate_on_insert.release()
    writer.join(30)
    closer.join(30)
    assert "error" not in writer_out and "error" not in closer_out
    example = Example.objects.get()
    assert example.round_id == hate_round.pk
    assert Round.objects.get(pk=hate_round.pk).is_closed is True
    # Closed now: the next insert is refused before the models run.
    with pytest.raises(ExampleError, match="closed"):
        _create(hate_task, annotator, "too late")


def test_an_insert_waits_for_a_close_in_flight_then_is_refused(
    hate_task, hate_round, annotator, rule_model, gate_on_close
):
    closer, closer_out = _in_thread(lambda: close_round(round_=Round.objects.get(pk=hate_round.pk)))
    assert gate_on_close.reached.wait(30)
    # The close has updated the round's row and not committed: an insert checked the round open before
    # the models ran, then waits for the close at the lock.
    writer, writer_out = _in_thread(lambda: _create(hate_task, annotator, "arrives during the close"))
    writer.join(BLOCKED)
    assert writer.is_alive(), "the insert did not wait for the uncommitted close"
    gate_on_close.release()
    closer.join(30)
    writer.join(30)
    assert "error" not in closer_out
    assert isinstance(writer_out.get("error"), ExampleError)
    assert "closed while the model was answering" in writer_out["error"].errors["__all__"][0]
    assert not Example.objects.exists()
