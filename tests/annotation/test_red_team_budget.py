"""A red-teaming round's budget (annotation/red_team/budget.py): the worst case reserved before the model
is called, the cost charged when the answer ends, the round's, a person's and a day's caps, and the count
exact when turns race for the last of it (PostgreSQL, threads)."""

from __future__ import annotations

import datetime
import threading
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.urls import reverse

from annotation.models import BudgetCharge, Conversation, RoundBudget, Turn
from annotation.red_team import budget
from annotation.red_team.conversations import ConversationError, messages_of, send_turn, start_conversation
from models_registry.models import RegisteredModel
from tests.factories.red_team import make_passage, make_red_team_round

PRICES = {"price_input_per_million": 2.0, "price_output_per_million": 10.0}


@pytest.fixture
def red_round(db, smollm2_dir):
    return make_red_team_round(smollm2_dir, generation={"max_new_tokens": 12, "temperature": 0.0, **PRICES})


@pytest.fixture
def conversation_of(red_round):
    """``conversation_of(user)``: a new conversation of ``user`` on the round's passage."""
    passage = make_passage(red_round)
    return lambda user: start_conversation(round_=red_round, annotator=user, context=passage)


def _messages(conversation, prompt):
    return messages_of(conversation, list(conversation.turns.all()), prompt)


def _remote(**generation) -> RegisteredModel:
    return RegisteredModel(source=RegisteredModel.Source.CHAT_ENDPOINT, generation={**PRICES, **generation})


def test_the_worst_case_and_the_cost_by_hand(red_round, smollm2):
    messages = [{"role": "user", "content": "héllo"}]  # 6 bytes in UTF-8
    # A remote target: (6 + 8 per message + 64 for the template) = 78 tokens at most; 12 new tokens:
    # (78 x 2 + 12 x 10) / 10^6 = 0.000276; its system prompt counts as one more message.
    assert budget.worst_case(_remote(), messages, 12) == Decimal("0.000276")
    assert budget.worst_case(_remote(system_prompt="Be brief."), messages, 12) == Decimal("0.000310")
    # A local target: its own count, SmolLM2's default system text included by its template.
    local = red_round.targets.get().model
    counted = smollm2.count_tokens(messages)
    assert counted == 33
    assert budget.worst_case(local, messages, 12) == Decimal(33 * 2 + 12 * 10) / 1_000_000
    # 37 tokens read and 5 written: (37 x 2 + 5 x 10) / 10^6 = 0.000124.
    assert budget.cost_of(local, {"input_tokens": 37, "output_tokens": 5}) == Decimal("0.000124")
    assert budget.cost_of(local, {"input_tokens": 37}) is None
    local.generation = {"max_new_tokens": 12}
    assert budget.worst_case(local, messages, 12) is None


def test_the_remote_byte_bound_holds_for_a_byte_level_tokenizer_and_its_template(smollm2):
    """Read by SmolLM2's tokenizer and template (which adds a system text of its own), a prompt never
    makes more tokens than the bound reserves."""
    for text in ["Hello there", "😀🎉🌊 ☠️", "مرحبا بكم", "x" * 3000, "Line one\r\nline two", "a" * 10_000]:
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": text[:50]}]
        messages.append({"role": "user", "content": "Why?"})
        bound = sum(len(m["content"].encode()) + budget.TOKENS_PER_MESSAGE for m in messages)
        assert bound + budget.TEMPLATE_TOKENS >= smollm2.count_tokens(messages), text[:20]


def test_a_turn_reserves_its_worst_case_then_is_charged_its_cost(red_round, conversation_of, annotator):
    RoundBudget.objects.create(round=red_round, cap=Decimal("1"))
    conversation = conversation_of(annotator)
    messages = _messages(conversation, "Say hi.")
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Say hi.")
    charge = BudgetCharge.objects.get(turn=stream.turn)
    model = red_round.targets.get().model
    assert charge.reserved == budget.worst_case(model, messages, 12)
    assert charge.spent is None  # answering: the reservation counts
    "".join(stream)
    charge.refresh_from_db()
    generation = Turn.objects.get(pk=stream.turn.pk).generation
    expected = Decimal(generation["input_tokens"] * 2 + generation["output_tokens"] * 10) / 1_000_000
    # The answer's record holds its cost, as a replay's does (the red-teaming figures sum it).
    assert generation["cost"] == pytest.approx(float(expected), abs=1e-12)
    # The prompt's count is exact for a local target; the answer used at most its budget.
    assert charge.spent == expected.quantize(Decimal("0.000001")) and charge.spent <= charge.reserved
    state = budget.budget_state(red_round)
    assert (state.spent, state.reserved, state.left) == (
        charge.spent,
        Decimal(0),
        Decimal("1") - charge.spent,
    )


def test_a_turn_that_would_pass_the_cap_is_refused_before_anything_is_stored(
    red_round, conversation_of, annotator
):
    model = red_round.targets.get().model
    conversation = conversation_of(annotator)
    need = budget.worst_case(model, _messages(conversation, "Say hi."), 12)
    RoundBudget.objects.create(round=red_round, cap=need - Decimal("0.000001"))
    with pytest.raises(ConversationError) as refused:
        send_turn(conversation=conversation, annotator=annotator, prompt="Say hi.")
    assert refused.value.code == "budget"
    assert str(refused.value) == (
        f"This round's budget for the model is spent ({budget.money(need - Decimal('0.000001'))} of "
        f"{budget.money(need - Decimal('0.000001'))} left, not enough for another answer); your message was not sent."
    )
    assert not Turn.objects.exists() and not BudgetCharge.objects.exists()


def test_a_person_s_cap_and_a_day_s_cap(red_round, conversation_of, annotator, validator):
    model = red_round.targets.get().model
    mine = conversation_of(annotator)
    need = budget.worst_case(model, _messages(mine, "Say hi."), 12)
    RoundBudget.objects.create(round=red_round, cap=Decimal("1"), per_person=need + need / 2)
    "".join(send_turn(conversation=mine, annotator=annotator, prompt="Say hi."))
    # Settled at its (smaller) cost, the first turn leaves less than a worst case of the person's share.
    spent = BudgetCharge.objects.get().spent
    assert spent + need > need + need / 2
    with pytest.raises(ConversationError, match="You have used your share"):
        send_turn(conversation=mine, annotator=annotator, prompt="Say hi.")
    theirs = conversation_of(validator)
    "".join(send_turn(conversation=theirs, annotator=validator, prompt="Say hi."))  # another person: room
    # A day's cap counts today's charges only (UTC days).
    need_now = budget.worst_case(model, _messages(theirs, "Say hi."), 12)
    RoundBudget.objects.filter(round=red_round).update(per_person=None, per_day=need_now)
    BudgetCharge.objects.update(day=datetime.date(2020, 1, 1))
    "".join(send_turn(conversation=theirs, annotator=validator, prompt="Say hi."))
    with pytest.raises(ConversationError, match="Today's budget for the model in this round is spent"):
        send_turn(conversation=theirs, annotator=validator, prompt="Say hi.")


def test_a_lost_answer_is_charged_its_reservation(red_round, conversation_of, annotator):
    RoundBudget.objects.create(round=red_round, cap=Decimal("1"))
    conversation = conversation_of(annotator)
    stream = send_turn(conversation=conversation, annotator=annotator, prompt="Say hi.")
    # The worker (on another machine: its death cannot be seen) died before the answer ended: the turn is
    # still 'answering', nothing written for an hour, never settled.
    Turn.objects.filter(pk=stream.turn.pk).update(
        updated_at=stream.turn.created_at - datetime.timedelta(hours=1), answered_by="elsewhere|b|1|1"
    )
    "".join(send_turn(conversation=conversation, annotator=annotator, prompt="Again."))
    lost = BudgetCharge.objects.get(turn=stream.turn)
    assert Turn.objects.get(pk=stream.turn.pk).status == "failed" and lost.spent == lost.reserved
    # Settling again changes nothing.
    budget.settle(Turn.objects.get(pk=stream.turn.pk), red_round.targets.get().model)
    assert BudgetCharge.objects.get(turn=stream.turn).spent == lost.reserved


def test_the_task_page_shows_spent_and_left(client, red_round, conversation_of, annotator):
    RoundBudget.objects.create(round=red_round, cap=Decimal("0.5"), per_day=Decimal("0.25"))
    conversation = conversation_of(annotator)
    "".join(send_turn(conversation=conversation, annotator=annotator, prompt="Say hi."))
    spent = BudgetCharge.objects.get().spent
    page = client.get(reverse("tasks:detail", args=[red_round.task.slug])).content.decode()
    assert "Budget for the model" in page
    left, today = budget.money(Decimal("0.5") - spent), budget.money(Decimal("0.25") - spent)
    cells = f"<td>0.5</td><td>{budget.money(spent)}</td><td>0</td><td>{left}</td><td>–</td><td>–</td><td>0.25</td><td>{today}</td>"
    assert cells in page


def test_the_task_page_shows_each_writer_what_is_left_of_their_own_cap(
    client, red_round, conversation_of, annotator, validator
):
    RoundBudget.objects.create(round=red_round, cap=Decimal("0.5"), per_person=Decimal("0.2"))
    "".join(send_turn(conversation=conversation_of(annotator), annotator=annotator, prompt="Say hi."))
    spent = BudgetCharge.objects.get().spent
    url = reverse("tasks:detail", args=[red_round.task.slug])

    def yours_left(user) -> str:
        client.force_login(user)
        page = client.get(url).content.decode()
        # Per person, then yours left, then per day (none).
        return page.split("<td>0.2</td><td>", 1)[1].split("</td>", 1)[0]

    assert yours_left(annotator) == budget.money(Decimal("0.2") - spent)
    assert yours_left(validator) == "0.2"  # another person's turns are not theirs
    client.logout()
    assert "<td>0.2</td><td>–</td>" in client.get(url).content.decode()  # nobody signed in


def test_a_budget_only_on_a_red_teaming_round(red_round, hate_round):
    from annotation.admin import RoundBudgetForm

    form = RoundBudgetForm(data={"round": hate_round.pk, "cap": "1"})
    assert not form.is_valid() and "red-teaming" in form.errors["round"][0]
    assert RoundBudgetForm(data={"round": red_round.pk, "cap": "1"}).is_valid()


@pytest.mark.django_db(transaction=True)
def test_fifty_turns_racing_for_the_last_ten_worst_cases_take_exactly_ten(smollm2_dir):
    if connection.vendor != "postgresql":
        pytest.skip("the race is checked on PostgreSQL, the database of record")
    round_ = make_red_team_round(smollm2_dir, generation={"max_new_tokens": 12, **PRICES})
    model = round_.targets.get().model
    messages = [{"role": "user", "content": "Say hi."}]
    need = budget.worst_case(model, messages, 12)
    RoundBudget.objects.create(round=round_, cap=need * 10)
    users = [
        get_user_model().objects.create_user(username=f"racer{i}", password="x-x-x-x-x-1") for i in range(50)
    ]
    turns = []
    for user in users:
        conversation = Conversation.objects.create(round=round_, annotator=user, model=model)
        turns.append(Turn.objects.create(conversation=conversation, index=0, prompt="Say hi."))
    start, taken, refused = threading.Barrier(50), [], []

    def race(turn, user):
        try:
            start.wait()
            with transaction.atomic():
                budget.reserve(turn=turn, annotator=user, model=model, messages=messages, max_new_tokens=12)
            taken.append(turn.pk)
        except budget.BudgetExceeded:
            refused.append(turn.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(t, u)) for t, u in zip(turns, users, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert (len(taken), len(refused)) == (10, 40)
    assert budget.budget_state(round_).reserved == need * 10 == RoundBudget.objects.get().cap


def test_a_refused_first_message_leaves_no_conversation(red_round, annotator):
    from annotation.red_team.conversations import send_message

    RoundBudget.objects.create(round=red_round, cap=Decimal("0.000001"))
    passage = make_passage(red_round)
    with pytest.raises(ConversationError) as refused:
        send_message(
            round_=red_round,
            annotator=annotator,
            conversation_id=None,
            context_id=str(passage.pk),
            prompt="Hi?",
        )
    assert refused.value.code == "budget"
    assert not Conversation.objects.exists() and not Turn.objects.exists()


def test_a_price_stored_before_the_bound_counts_nothing_and_breaks_no_turn(
    red_round, conversation_of, annotator, caplog
):
    """A row written before prices were bounded (or by hand in the database): the turn is answered and
    charged nothing, the log names the model, instead of a 500 on every message."""
    model = red_round.targets.get().model
    model.generation = {**model.generation, "price_input_per_million": 1e300, "price_output_per_million": 1}
    model.save(update_fields=["generation"])
    conversation = conversation_of(annotator)
    "".join(send_turn(conversation=conversation, annotator=annotator, prompt="Say hi."))  # no budget yet
    RoundBudget.objects.create(round=red_round, cap=Decimal("0.5"))
    "".join(send_turn(conversation=conversation, annotator=annotator, prompt="And again."))
    assert list(Turn.objects.values_list("status", flat=True)) == ["answered", "answered"]
    assert not BudgetCharge.objects.exists()
    assert f"model {model.pk} has unreadable prices" in caplog.text


def test_the_budget_form_takes_minus_zero_as_zero_and_names_a_cap_in_plain_digits(red_round):
    from annotation.admin import RoundBudgetForm

    form = RoundBudgetForm(data={"round": red_round.pk, "cap": "1e2", "per_person": "-0"})
    assert form.is_valid(), form.errors
    saved = form.save()
    assert str(saved) == f"budget of {red_round}: 100"
    assert str(saved.per_person) == "0"


def test_the_budget_form_refuses_a_negative_amount(red_round):
    from annotation.admin import RoundBudgetForm

    form = RoundBudgetForm(data={"round": red_round.pk, "cap": "-1", "per_day": "-0.5"})
    assert not form.is_valid()
    assert form.errors["cap"] == ["An amount cannot be negative."]
    assert form.errors["per_day"] == ["An amount cannot be negative."]


@pytest.mark.parametrize(
    ("settings_json", "error"),
    [
        ('{"price_input_per_million": -100, "price_output_per_million": 1}', "prices cannot be negative"),
        ('{"price_input_per_million": "abc", "price_output_per_million": 1}', "prices must be numbers"),
        ('{"price_input_per_million": NaN, "price_output_per_million": 1}', "must be finite numbers"),
        ('{"price_input_per_million": 1e400, "price_output_per_million": 1}', "must be finite numbers"),
        # Finite, but every budgeted turn failed on its arithmetic (a fresh-user review found it).
        (
            '{"price_input_per_million": 1e300, "price_output_per_million": 1}',
            "at most 1,000,000 per million",
        ),
        ('{"price_input_per_million": 1000001, "price_output_per_million": 1}', "at most 1,000,000"),
        ('{"price_input_per_million": true, "price_output_per_million": 1}', "prices must be numbers"),
    ],
)
def test_the_model_admin_checks_a_generative_model_s_prices(red_round, settings_json, error):
    """Prices enter through the model's admin form too: checked there as at registration."""
    from django.contrib import admin as django_admin
    from django.test import RequestFactory

    from models_registry.models import RegisteredModel as Model

    model = red_round.targets.get().model
    model_admin = django_admin.site.get_model_admin(Model)
    request = RequestFactory().get("/")
    request.user = get_user_model().objects.create_superuser(username="root", password="x-x-x-x-x-1")
    form_class = model_admin.get_form(request, model)
    data = {f: getattr(model, f) for f in form_class.base_fields if f not in ("generation", "owner", "task")}
    data.update(generation=settings_json, task=model.task_id, owner="")
    form = form_class(data=data, instance=model)
    assert not form.is_valid()
    assert error in " ".join(form.errors["generation"])


def test_the_budget_admin_shows_spent_and_left(client, red_round, conversation_of, annotator):
    RoundBudget.objects.create(round=red_round, cap=Decimal("0.5"))
    "".join(send_turn(conversation=conversation_of(annotator), annotator=annotator, prompt="Say hi."))
    spent = BudgetCharge.objects.get().spent
    client.force_login(get_user_model().objects.create_superuser(username="root", password="x-x-x-x-x-1"))
    listing = client.get(reverse("admin:annotation_roundbudget_changelist")).content.decode()
    assert f'<td class="field-spent">{budget.money(spent)}</td>' in listing
    assert f'<td class="field-left">{budget.money(Decimal("0.5") - spent)}</td>' in listing
    change = client.get(reverse("admin:annotation_roundbudget_change", args=[RoundBudget.objects.get().pk]))
    assert change.status_code == 200 and budget.money(spent) in change.content.decode()
    assert client.get(reverse("admin:annotation_roundbudget_add")).status_code == 200


def test_the_budget_admin_offers_only_red_teaming_rounds(client, red_round, hate_round):
    """The hate-speech round would be refused by the form (tests above): it is not offered either."""
    client.force_login(get_user_model().objects.create_superuser(username="root", password="x-x-x-x-x-1"))
    form = client.get(reverse("admin:annotation_roundbudget_add")).context["adminform"].form
    assert list(form.fields["round"].queryset) == [red_round]
