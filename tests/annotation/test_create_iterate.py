"""The create page that iterates: the verdict on the page (a fetch POST answered with an HTML fragment),
the text kept for a variation, the session tally (this browser session's examples written on this page
only, the last 500 kept), the probability bar and "close call", where the example stands with the
validators, instructions with the label definitions (every label of the built-in configs defined),
"Skip this context", the retract confirm step, and labelled choices. The plain POST (no script) still
redirects to the outcome page."""

from __future__ import annotations

import re
import uuid
from html.parser import HTMLParser

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotation import session_examples
from annotation.models import Example
from annotation.services import create_example, retract_example
from annotation.verdict import is_close_call, winning_margin
from models_registry import inference
from models_registry.round_targets import set_round_targets
from tasks.builtin_configs import HATE_SPEECH_CONFIG, NLI_CONFIG, SENTIMENT_CONFIG
from tasks.config import TaskConfig, validate_config
from tasks.models import Context
from tasks.services import close_round, ensure_round, set_current_round
from tests.factories.models_registry import make_stand_in, stand_in
from tests.factories.qualification import TutorialItemFactory, standing
from tests.factories.tasks import ContextFactory, builtin_task, open_round
from tests.helpers.fakes import rule_predict

URL = reverse("annotation:create", args=["hate-speech"])
FETCH = {"HTTP_X_REQUESTED_WITH": "fetch"}


def _form_values(client, url=URL) -> dict:
    form = client.get(url).context["form"]
    return {"client_token": str(form["client_token"].value()), "started": form["started"].value()}


def _post(client, statement, label, *, fetch=False, token=None, url=URL, **extra):
    data = {"statement": statement, "label": label, "client_token": str(token or uuid.uuid4()), **extra}
    return client.post(url, data, **(FETCH if fetch else {}))


def _data_attr(html: str, name: str) -> str:
    match = re.search(rf'{name}="([^"]*)"', html)
    assert match, f"{name} missing"
    return match.group(1)


# --- the in-page verdict -------------------------------------------------------------------------------


def test_a_fetch_post_gets_the_verdict_fragment_with_the_text_and_a_fresh_token(writer, annotator):
    sent = _form_values(writer)
    response = writer.post(URL, {"statement": "I hate them", "label": "not-hateful", **sent}, **FETCH)

    example = Example.objects.get()
    assert response.status_code == 200  # no redirect
    assert "Location" not in response
    html = response.text
    assert "<html" not in html  # a fragment, not the page
    assert 'class="create-result"' in html
    assert '<p class="statement wrap-anywhere" dir="auto">I hate them</p>' in html
    assert "You fooled the model!" in html
    assert "hateful: 0.875" in html
    assert reverse("annotation:outcome", args=[example.pk]) in html
    new_token = _data_attr(html, "data-client-token")
    assert uuid.UUID(new_token) and new_token != sent["client_token"]
    assert "X-Requested-With" in response["Vary"]
    assert example.annotator == annotator and example.client_token == uuid.UUID(sent["client_token"])


def test_the_fresh_token_makes_the_same_text_a_new_example_and_the_old_one_replays(writer):
    sent = _form_values(writer)
    first = writer.post(URL, {"statement": "I hate them", "label": "not-hateful", **sent}, **FETCH)
    again = writer.post(
        URL, {"statement": "I hate them", "label": "not-hateful", **sent}, **FETCH
    )  # double click
    assert Example.objects.count() == 1
    assert again.status_code == 200 and "You fooled the model!" in again.text

    fresh = {
        "client_token": _data_attr(first.text, "data-client-token"),
        "started": _data_attr(first.text, "data-started"),
    }
    variation = writer.post(URL, {"statement": "I hate them!", "label": "not-hateful", **fresh}, **FETCH)
    assert variation.status_code == 200
    assert Example.objects.count() == 2
    assert Example.objects.order_by("id").last().time_taken_ms is not None  # the signed start matched


def test_a_plain_post_still_redirects_to_the_outcome_page(writer):
    response = _post(writer, "I hate them", "not-hateful")
    example = Example.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:outcome", args=[example.pk])


def test_a_refused_fetch_post_is_a_422_fragment_with_the_message_and_stores_nothing(writer):
    sent = _form_values(writer)
    response = writer.post(URL, {"statement": "   ", "label": "hateful", **sent}, **FETCH)
    assert response.status_code == 422
    assert "Your example was not saved." in response.text
    # A message that names its box is not prefixed with the box's name again.
    assert "<li>Statement is required; write something that is not only spaces.</li>" in response.text
    no_label = writer.post(URL, {"statement": "I hate them", **sent}, **FETCH)
    assert no_label.status_code == 422
    assert "<li>Choose the label you intend.</li>" in no_label.text
    assert _data_attr(response.text, "data-client-token") == sent["client_token"]  # unspent: kept
    assert Example.objects.count() == 0


def test_a_fetch_post_after_the_round_closed_says_so(writer, hate_round):
    from tasks.services import close_round

    sent = _form_values(writer)
    close_round(round_=hate_round)
    response = writer.post(URL, {"statement": "I hate them", "label": "hateful", **sent}, **FETCH)
    assert response.status_code == 422
    assert "This task is not collecting examples right now; your example was not saved." in response.text
    assert Example.objects.count() == 0


def test_the_page_has_the_live_region_and_loads_the_script(writer):
    html = writer.get(URL).text
    assert '<div id="verdict" class="verdict-region" aria-live="polite"></div>' in html
    assert re.search(r'<script src="[^"]*annotation/create\.js" defer></script>', html)
    assert "<script>" not in html and "onclick" not in html  # CSP: no inline script or handler


# --- the session tally -------------------------------------------------------------------------------


def test_the_tally_counts_this_sessions_examples_in_the_round_by_hand(writer, hate_task, annotator):
    create_example(
        task=hate_task, annotator=annotator, inputs={"statement": "I hate them"}, target="not-hateful"
    )
    writer.get(URL)  # the example above was not written through this page: not counted
    assert writer.get(URL).context["tally"]["text"] == "No examples written in this session yet."

    _post(writer, "I hate them", "not-hateful")  # model says hateful: fooled
    _post(writer, "I love them", "hateful")  # model says not-hateful: fooled
    _post(writer, "I hate them so", "hateful")  # model right
    tally = writer.get(URL).context["tally"]
    assert (tally["fooled"], tally["written"]) == (2, 3)
    assert "2 of 3 fooled the model in this session." in writer.get(URL).text

    fragment = _post(writer, "we love rain", "not-hateful", fetch=True)  # model right: 2 of 4
    assert _data_attr(fragment.text, "data-tally") == "2 of 4 fooled the model in this session."

    retract_example(example=Example.objects.get(inputs__statement="I love them"), user=annotator)
    assert writer.get(URL).context["tally"]["text"] == "1 of 3 fooled the model in this session."

    reset = writer.post(reverse("annotation:reset_tally", args=["hate-speech"]))
    assert reset.status_code == 302 and reset["Location"] == URL
    assert writer.get(URL).context["tally"]["text"] == "No examples written in this session yet."


def test_the_tally_is_per_user(writer, client, hate_task, outsider):
    writer.get(URL)
    create_example(
        task=hate_task, annotator=outsider, inputs={"statement": "I hate them"}, target="not-hateful"
    )
    assert writer.get(URL).context["tally"]["written"] == 0


def test_reset_tally_needs_post(writer):
    assert writer.get(reverse("annotation:reset_tally", args=["hate-speech"])).status_code == 405


def test_api_submissions_in_the_same_window_are_not_counted(writer, api, annotator):
    writer.get(URL)
    _post(writer, "I hate them", "not-hateful")  # fooled, through this page
    for text in ("I love them", "we hate it"):  # the same user, the same minute, through the API
        created = api(annotator).post(
            "/api/tasks/hate-speech/examples/", {"statement": text, "label": "hateful"}, format="json"
        )
        assert created.status_code == 201
    assert Example.objects.count() == 3
    tally = writer.get(URL).context["tally"]
    assert (tally["fooled"], tally["written"]) == (1, 1)
    fragment = _post(writer, "we love rain", "not-hateful", fetch=True)  # right: 1 of 2
    assert 'data-tally="1 of 2 fooled the model in this session."' in fragment.text
    # a plain POST again with the same token (a replay) is not counted twice
    same = {"statement": "x hate", "label": "hateful", "client_token": str(uuid.uuid4())}
    writer.post(URL, same)
    writer.post(URL, same)
    assert writer.get(URL).context["tally"]["written"] == 3


def test_a_new_round_and_a_retraction_leave_the_tally(writer, annotator, hate_task, hate_round):
    _post(writer, "I hate them", "not-hateful")
    _post(writer, "I love them", "hateful")
    assert writer.get(URL).context["tally"]["written"] == 2
    retract_example(example=Example.objects.get(inputs__statement="I love them"), user=annotator)
    assert writer.get(URL).context["tally"]["text"] == "1 of 1 fooled the model in this session."
    close_round(round_=hate_round)
    set_current_round(task=hate_task, round_=ensure_round(task=hate_task, number=2))
    assert writer.get(URL).context["tally"]["text"] == "No examples written in this session yet."


def test_another_browser_session_has_its_own_tally(writer, annotator, password):
    _post(writer, "I hate them", "not-hateful")
    other = Client()
    other.login(username=annotator.username, password=password)
    assert other.get(URL).context["tally"]["written"] == 0
    assert writer.get(URL).context["tally"]["written"] == 1


def test_the_session_keeps_the_last_500_ids(rf, hate_task):
    request = rf.get("/")
    request.session = SessionStore()
    for pk in range(1, 503):
        session_examples.remember_example(request, hate_task, pk)
    session_examples.remember_example(request, hate_task, 300)  # again: moved to the end, not twice
    kept = request.session[session_examples.SESSION_EXAMPLES_KEY]["hate-speech"]
    assert len(kept) == session_examples.SESSION_EXAMPLES_KEPT == 500
    assert kept[0] == 3 and kept[-2:] == [502, 300] and kept.count(300) == 1
    request.session[session_examples.SESSION_EXAMPLES_KEY]["hate-speech"] = [1, "2", True, 3.5, 7]  # tampered
    assert session_examples.session_example_ids(request, hate_task) == [1, 7]


# --- probability bar and close call ------------------------------------------------------------------


def test_margin_and_close_call_by_hand():
    assert winning_margin({"hateful": 0.57, "not-hateful": 0.43}) == pytest.approx(0.14)
    assert is_close_call({"hateful": 0.57, "not-hateful": 0.43}, 0.2) is True
    assert is_close_call({"hateful": 0.2, "not-hateful": 0.8}, 0.2) is False
    assert is_close_call({"hateful": 0.6, "not-hateful": 0.4}, 0.2) is False  # exactly at the margin
    assert is_close_call({"a": 0.40, "b": 0.35, "c": 0.25}, 0.2) is True  # top two: 0.05
    assert is_close_call({"hateful": 1.0}, 0.2) is False


@pytest.fixture
def fixed_model(hate_task, hate_round, monkeypatch):
    """hate_round's target answers with the probabilities ``fixed_model["p"]`` gives (hateful first)."""
    holder = {"p": (0.57, 0.43)}

    def predict(model, inputs):
        hateful, not_hateful = holder["p"]
        label = "hateful" if hateful >= not_hateful else "not-hateful"
        return [
            {"label": label, "probabilities": {"hateful": hateful, "not-hateful": not_hateful}}
            for _ in inputs
        ]

    monkeypatch.setattr(inference, "predict", predict)
    make_stand_in(hate_task, hate_round)
    return holder


def _outcome_of(client, statement, label, **extra):
    response = _post(client, statement, label, **extra)
    return client.get(response["Location"]).text


def test_a_close_call_never_reads_as_apart_by_the_margin_itself():
    """0.598 against 0.402 is 0.196 apart: a close call under 0.2, which two decimals wrote "0.20 apart,
    under 0.20"."""
    from annotation.verdict import apart_under

    assert is_close_call({"hateful": 0.598, "not-hateful": 0.402}, 0.2) is True
    assert apart_under(0.196, 0.2) == ("0.196", "0.200")
    assert apart_under(0.14, 0.2) == ("0.14", "0.20")
    assert apart_under(0.19999, 0.2) == ("0.19999", "0.20000")


def test_close_call_for_043_057_and_not_for_02_08(client, annotator, password, fixed_model):
    client.login(username=annotator.username, password=password)
    html = _outcome_of(client, "a near miss", "not-hateful")
    assert "Close call" in html
    assert "(the top two labels were 0.14 apart, under 0.20)" in html
    fixed_model["p"] = (0.402, 0.598)
    assert "(the top two labels were 0.196 apart, under 0.200)" in _outcome_of(client, "nearer", "hateful")
    fixed_model["p"] = (0.57, 0.43)
    # The bar: the model's probability for the intended label (not-hateful), 0.43.
    assert '<meter min="0" max="1" value="0.4300"' in html and "43.0%" in html

    fixed_model["p"] = (0.2, 0.8)
    html = _outcome_of(client, "a clear one", "not-hateful")
    assert "Close call" not in html
    assert '<meter min="0" max="1" value="0.8000"' in html and "80.0%" in html


def test_the_task_config_sets_the_margin(client, annotator, password, hate_task, fixed_model):
    hate_task.config = {**hate_task.config, "close_call_margin": 0.1}
    hate_task.save()
    client.login(username=annotator.username, password=password)
    assert "Close call" not in _outcome_of(client, "a near miss", "not-hateful")  # 0.14 >= 0.1


def test_the_fetch_fragment_shows_the_close_call_too(client, annotator, password, fixed_model):
    client.login(username=annotator.username, password=password)
    response = _post(client, "a near miss", "hateful", fetch=True)
    assert response.status_code == 200
    assert "Close call" in response.text and "57.0%" in response.text


def test_config_schema_checks_the_new_keys():
    from tasks.builtin_configs import HATE_SPEECH_CONFIG

    validate_config({**HATE_SPEECH_CONFIG, "close_call_margin": 0.3, "label_descriptions": {"hateful": "x"}})
    with pytest.raises(ValidationError) as too_big:
        validate_config({**HATE_SPEECH_CONFIG, "close_call_margin": 1.5})
    assert "config['close_call_margin']: 1.5 is greater than the maximum of 1" in too_big.value.messages
    with pytest.raises(ValidationError) as unknown:
        validate_config({**HATE_SPEECH_CONFIG, "label_descriptions": {"spam": "Unsolicited."}})
    assert unknown.value.messages == [
        "config['label_descriptions']: 'spam' is not one of the target's labels."
    ]
    assert TaskConfig(HATE_SPEECH_CONFIG).close_call_margin == 0.2
    validate_config(NLI_CONFIG)
    assert set(TaskConfig(NLI_CONFIG).label_descriptions) == {"entailment", "neutral", "contradiction"}


# --- where the example stands ------------------------------------------------------------------------


def test_the_outcome_says_waiting_for_validation_or_why_not(writer, hate_task, annotator):
    fooled = _outcome_of(writer, "I hate them", "not-hateful")
    assert "Waiting for validation: other people will check that your label is right." in fooled
    right = _outcome_of(writer, "I hate them so", "hateful")
    assert "Not sent for validation: in this task only examples that fool the model are validated." in right

    hate_task.config = {**hate_task.config, "validate_non_fooling": True}
    hate_task.save()
    assert "Waiting for validation" in _outcome_of(writer, "I hate them a lot", "hateful")


def test_a_settled_example_states_its_status(writer, annotator):
    _post(writer, "I hate them", "not-hateful")
    example = Example.objects.get()
    Example.objects.filter(pk=example.pk).update(status=Example.Status.VALIDATED_CORRECT)
    html = writer.get(reverse("annotation:outcome", args=[example.pk])).text
    assert "Status: validated correct." in html and "Waiting for validation" not in html


# --- outcome actions: write another, try a variation -------------------------------------------------


def test_outcome_offers_write_another_and_try_a_variation(writer):
    html = _outcome_of(writer, "I hate them", "not-hateful")
    example = Example.objects.get()
    assert f'<a class="button primary" href="{URL}">Write another example</a>' in html
    assert f'<a class="button secondary" href="{URL}?variation={example.pk}">Try a variation</a>' in html


def test_variation_prefills_the_authors_own_example(writer):
    _post(writer, "I hate them 🌧️", "not-hateful")
    example = Example.objects.get()
    response = writer.get(f"{URL}?variation={example.pk}")
    assert response.status_code == 200
    assert re.search(r"<textarea [^>]*name=\"statement\"[^>]*>\s*I hate them 🌧️</textarea>", response.text)
    assert re.search(r'<input type="radio" name="label" value="not-hateful"[^>]* checked>', response.text)
    # A fresh token: sending it is a new example.
    assert response.context["form"]["client_token"].value() != str(example.client_token)


@pytest.mark.parametrize("pk", ["other", "999999", "abc", "9" * 40])
def test_variation_of_someone_elses_or_an_unknown_example_is_404(writer, client, hate_task, outsider, pk):
    theirs = create_example(
        task=hate_task, annotator=outsider, inputs={"statement": "theirs"}, target="hateful"
    )[0]
    pk = str(theirs.pk) if pk == "other" else pk
    response = writer.get(f"{URL}?variation={pk}")
    assert response.status_code == 404
    assert "theirs" not in response.text


def test_variation_keeps_the_context_of_the_example(client, annotator, password, prompt_task, monkeypatch):
    monkeypatch.setattr(inference, "predict", rule_predict)
    set_round_targets(round=prompt_task.current_round, models=[stand_in(prompt_task, "stand-in")])
    a, b = (
        Context.objects.create(task=prompt_task, round=prompt_task.current_round, data={"prompt": p})
        for p in ("first", "second")
    )
    client.login(username=annotator.username, password=password)
    example = create_example(
        task=prompt_task, annotator=annotator, inputs={"statement": "x"}, target="hateful", context=b
    )[0]
    for _ in range(3):
        assert (
            client.get(f"{reverse('annotation:create', args=['prompted'])}?variation={example.pk}").context[
                "served_context"
            ]
            == b
        )


# --- skip this context -------------------------------------------------------------------------------


@pytest.fixture
def prompted(client, annotator, password, prompt_task, monkeypatch):
    monkeypatch.setattr(inference, "predict", rule_predict)
    set_round_targets(round=prompt_task.current_round, models=[stand_in(prompt_task, "stand-in")])
    client.login(username=annotator.username, password=password)
    return client


def test_skip_serves_another_context(prompted, prompt_task):
    url = reverse("annotation:create", args=["prompted"])
    a = ContextFactory(round=prompt_task.current_round, data={"prompt": "first"})
    b = ContextFactory(round=prompt_task.current_round, data={"prompt": "second"})
    page = prompted.get(url)
    served = page.context["served_context"]
    assert f'href="{url}?skip={served.pk}">Skip this context</a>' in page.text
    for skipped, other in ((a, b), (b, a), (a, b)):
        assert prompted.get(f"{url}?skip={skipped.pk}").context["served_context"] == other


def test_skip_with_one_context_serves_it_and_says_so(prompted, prompt_task):
    url = reverse("annotation:create", args=["prompted"])
    only = ContextFactory(round=prompt_task.current_round, data={"prompt": "only"})
    page = prompted.get(f"{url}?skip={only.pk}")
    assert page.context["served_context"] == only
    assert "There is no other context to serve in this round." in page.text


def test_skip_with_a_malformed_id_is_ignored(prompted, prompt_task):
    url = reverse("annotation:create", args=["prompted"])
    ContextFactory(round=prompt_task.current_round, data={"prompt": "only"})
    assert prompted.get(f"{url}?skip=%C2%B2").status_code == 200


# --- retract confirm step ----------------------------------------------------------------------------


def test_retract_goes_through_a_confirm_step(writer):
    _post(writer, "I hate them", "not-hateful")
    example = Example.objects.get()
    outcome = writer.get(reverse("annotation:outcome", args=[example.pk])).text
    confirm_url = reverse("annotation:retract_confirm", args=[example.pk])
    assert f'<form method="get" action="{confirm_url}" class="retract">' in outcome
    assert 'class="danger">Retract this example…</button>' in outcome
    assert f'<form method="post" action="{reverse("annotation:retract", args=[example.pk])}"' not in outcome

    confirm = writer.get(confirm_url)
    assert confirm.status_code == 200
    assert "<h1>Retract this example?</h1>" in confirm.text
    assert f'<form method="post" action="{reverse("annotation:retract", args=[example.pk])}"' in confirm.text
    assert '<button type="submit" class="danger">Retract</button>' in confirm.text
    assert f'href="{reverse("annotation:outcome", args=[example.pk])}">Cancel</a>' in confirm.text
    example.refresh_from_db()
    assert example.is_retracted is False  # the GET changed nothing

    writer.post(reverse("annotation:retract", args=[example.pk]))
    example.refresh_from_db()
    assert example.is_retracted is True
    again = writer.get(confirm_url)
    assert again.status_code == 302 and again["Location"] == reverse("annotation:outcome", args=[example.pk])


def test_the_confirm_step_of_someone_elses_example_is_404(writer, client, hate_task, outsider):
    theirs = create_example(
        task=hate_task, annotator=outsider, inputs={"statement": "theirs"}, target="hateful"
    )[0]
    assert writer.get(reverse("annotation:retract_confirm", args=[theirs.pk])).status_code == 404


# --- instructions and labelled choices ---------------------------------------------------------------


class _Labels(HTMLParser):
    """The ids of the page's inputs, textareas and selects (not hidden), and every ``<label for>``."""

    def __init__(self):
        super().__init__()
        self.controls: list[str] = []
        self.label_for: list[str] = []
        self.legends = 0
        self.fieldsets = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("input", "textarea", "select") and attrs.get("type") != "hidden":
            self.controls.append(attrs.get("id") or "")
        elif tag == "label":
            self.label_for.append(attrs.get("for", "<none>"))
        elif tag == "legend":
            self.legends += 1
        elif tag == "fieldset":
            self.fieldsets += 1


def _labels_of(html: str) -> _Labels:
    parser = _Labels()
    parser.feed(html)
    return parser


def test_the_label_radios_are_a_fieldset_with_a_legend_and_each_has_a_label(writer):
    html = writer.get(URL).text
    assert "<legend>The label you intend</legend>" in html
    found = _labels_of(html)
    assert found.fieldsets == found.legends == 1
    assert found.controls == ["id_statement", "id_label_0", "id_label_1"]
    assert set(found.controls) <= set(found.label_for)
    assert "" not in found.label_for  # no empty <label for="">


def test_every_box_on_the_outcome_page_is_labelled(writer):
    html = _outcome_of(writer, "I hate them", "not-hateful")
    found = _labels_of(html)
    assert "id_explanation" in found.controls and "id_reason" in found.controls
    assert set(found.controls) <= set(found.label_for)
    assert '<label for="id_explanation">Your explanation</label>' in html


def test_nli_page_has_collapsible_instructions_with_label_definitions(client, annotator, password, nli_task):
    round_ = open_round(nli_task)
    ContextFactory(round=round_, data={"premise": "It rained all day."})
    client.login(username=annotator.username, password=password)
    html = client.get(reverse("annotation:create", args=["nli"])).text
    assert '<details class="instructions">' in html
    assert "<summary>Instructions and label definitions</summary>" in html
    assert "<dt>entailment</dt><dd>The premise makes the hypothesis true" in html
    # Beside each choice too, inside its label.
    assert re.search(
        r'<label for="id_label_2"><span class="choice-label">contradiction</span> '
        r'<span class="muted">The premise makes the hypothesis false',
        html,
    )


def test_the_builtin_configs_define_every_label(db):
    for config in (HATE_SPEECH_CONFIG, SENTIMENT_CONFIG):
        validate_config(config)
        cfg = TaskConfig(config)
        assert list(cfg.label_descriptions) == cfg.labels
    hate = TaskConfig(builtin_task("hate-speech").config).label_descriptions
    assert "targets a protected group or its members for being a part of that group" in hate["hateful"]
    assert "abuse that is not aimed at a protected group" in hate["not-hateful"]
    assert (
        builtin_task("sentiment")
        .cfg.label_descriptions["neutral"]
        .startswith("The sentence expresses no sentiment")
    )


def test_the_hate_speech_page_shows_the_definitions(writer):
    html = writer.get(URL).text
    assert "<summary>Instructions and label definitions</summary>" in html
    assert "<dt>hateful</dt><dd>Abuse that targets a protected group" in html
    assert re.search(
        r'<label for="id_label_1"><span class="choice-label">not-hateful</span> '
        r'<span class="muted">Anything else, including abuse',
        html,
    )


def test_worked_examples_are_in_the_instructions(writer, hate_task, annotator):
    TutorialItemFactory(task=hate_task, text="a worked example 🌈", note="It used a digit for a letter.")
    standing(hate_task, annotator, tutorial_seen_at="2026-01-01T00:00:00Z")  # the tutorial is seen
    html = writer.get(URL).text
    assert "<summary>Instructions, worked examples and label definitions</summary>" in html
    assert "<h3>Example 1</h3>" in html and "a worked example 🌈" in html
    assert "It used a digit for a letter." in html


def test_a_fetch_post_on_a_context_gone_asks_for_the_plain_post(prompted, prompt_task, hate_round):
    url = reverse("annotation:create", args=["prompted"])
    ContextFactory(round=prompt_task.current_round, data={"prompt": "still here"})
    elsewhere = ContextFactory(round=hate_round, data={"prompt": "another task's"})
    gone = _post(prompted, "I hate rain", "not-hateful", fetch=True, url=url, context=str(elsewhere.pk))
    assert gone.status_code == 422 and "data-reload" in gone.text
    assert "The prompt you wrote for is no longer available, so your example was not saved." in gone.text
    served = prompt_task.current_round.contexts.get()
    empty = _post(prompted, "  ", "not-hateful", fetch=True, url=url, context=str(served.pk))
    assert empty.status_code == 422 and "data-reload" not in empty.text  # the context is fine: no reload
    assert Example.objects.count() == 0
