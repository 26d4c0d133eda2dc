"""A local generative model: the real SmolLM2-135M-Instruct (GGUF from PyPI, converted once per run)
answering conversations with its own chat template, streamed, with what produced each answer."""

from __future__ import annotations

import pytest

from engine.runtime.generative import (
    SMOLLM2_GGUF_BYTES,
    Decoding,
    InferenceError,
    PromptTooLong,
    check_file,
    check_messages,
    machine_cache_dir,
    smollm2_gguf,
)

CAPITAL = [{"role": "user", "content": "What is the capital of France?"}]


def test_the_packaged_gguf_is_the_expected_file_and_a_changed_copy_is_refused(tmp_path):
    gguf = smollm2_gguf()  # checks size and sha256
    assert gguf.stat().st_size == SMOLLM2_GGUF_BYTES == 98_362_432
    copy = tmp_path / gguf.name
    copy.write_bytes(gguf.read_bytes()[:-1] + b"\x00")  # same size, last byte changed
    with pytest.raises(InferenceError, match="expected sha256"):
        check_file(
            copy, SMOLLM2_GGUF_BYTES, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        )
    copy.write_bytes(b"short")
    with pytest.raises(InferenceError, match="5 bytes, not the expected 98,362,432"):
        check_file(copy, SMOLLM2_GGUF_BYTES, "0" * 64)


def test_the_machine_cache_is_the_named_folder_else_xdg_else_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DYNABENCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert machine_cache_dir() == tmp_path / "home" / ".cache" / "dynabench"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert machine_cache_dir() == tmp_path / "xdg" / "dynabench"
    monkeypatch.setenv("DYNABENCH_CACHE_DIR", str(tmp_path / "mine"))
    assert machine_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("DYNABENCH_CACHE_DIR", "")  # empty means unset, as for the other settings
    assert machine_cache_dir() == tmp_path / "xdg" / "dynabench"


def test_the_converted_folder_is_named_by_the_files_digest_and_the_transformers_release(smollm2_dir):
    from importlib.metadata import version

    # Another GGUF or another transformers (whose conversion may differ) gets a folder of its own.
    assert (
        smollm2_dir.name
        == f"SmolLM2-135M-Instruct.Q4_1-b179c9523d0e6a0f-transformers-{version('transformers')}"
    )
    assert smollm2_dir.parent.name == "gguf"


def test_the_converted_folder_reloads_as_a_chat_model(smollm2_dir, smollm2):
    names = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= names
    # SmolLM2's config: 8,192 positions, 134,515,008 parameters (30 layers of 576, tied embeddings).
    assert smollm2.context_limit == 8192
    assert sum(p.numel() for p in smollm2.model.parameters()) == 134_515_008
    # The chat template is the model's own (ChatML, with SmolLM's default system prompt).
    prompt = smollm2.tokenizer.decode(smollm2.encode(CAPITAL)["input_ids"][0])
    assert prompt == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    )


def test_a_greedy_answer_streams_and_records_what_produced_it(smollm2):
    stream = smollm2.stream(CAPITAL, Decoding(max_new_tokens=20))
    pieces = list(stream)
    generation = stream.generation
    assert "".join(pieces) == generation.text
    assert "Paris" in generation.text
    assert generation.finish_reason == "stop"  # the model ended its turn before 20 tokens
    assert generation.input_tokens == smollm2.count_tokens(CAPITAL) == 37
    assert 0 < generation.output_tokens < 20
    assert 0 < generation.first_token_ms <= generation.latency_ms
    assert generation.decoding == {
        "temperature": 0.0,
        "top_p": 1.0,
        "max_new_tokens": 20,
        "stop": [],
        "seed": None,
    }
    assert generation.seed is None and generation.model == "smollm2"
    # Greedy decoding is deterministic.
    assert smollm2.generate(CAPITAL, Decoding(max_new_tokens=20)).text == generation.text


def test_the_token_budget_ends_an_answer_with_length(smollm2):
    generation = smollm2.generate(
        [{"role": "user", "content": "Write a long story about a dragon."}], Decoding(max_new_tokens=5)
    )
    assert (generation.finish_reason, generation.output_tokens) == ("length", 5)


def test_a_seeded_sample_repeats_and_the_seed_is_recorded(smollm2):
    decoding = Decoding(temperature=0.9, top_p=0.95, max_new_tokens=12, seed=7)
    first = smollm2.generate(CAPITAL, decoding)
    assert smollm2.generate(CAPITAL, decoding).text == first.text
    assert first.seed == 7


def test_a_stop_sequence_ends_the_answer_before_it(smollm2):
    generation = smollm2.generate(
        [{"role": "user", "content": "List three colours, one per line."}],
        Decoding(max_new_tokens=60, stop=("\n",)),
    )
    assert "\n" not in generation.text and generation.text


def test_leaving_the_stream_early_stops_the_model_and_keeps_what_came(smollm2):
    stream = smollm2.stream(
        [{"role": "user", "content": "Tell me about the sea."}], Decoding(max_new_tokens=200)
    )
    first = next(stream) + next(stream)
    stream.close()
    generation = stream.generation
    assert generation.text == first
    # A reason of its own: ``stop`` says the model ended its turn, which it did not.
    assert (generation.finish_reason, generation.extra) == ("cut_short", {})
    assert generation.output_tokens < 200


# Greedy SmolLM2 answers these in emoji (three tokens each) or Arabic (two bytes a letter, often one byte a
# token): the budget of tokens ends inside a character, which the tokenizer alone decodes as U+FFFD.
EMOJI = [{"role": "user", "content": "Reply with three emoji only: 😀🎉🌊"}]
ARABIC = [{"role": "user", "content": "ما هي عاصمة فرنسا؟ أجب بالعربية"}]


@pytest.mark.parametrize(
    "messages, budget, whole",
    [(EMOJI, 5, "🌈"), (ARABIC, 8, "ما هي عا")],
    ids=["emoji", "arabic"],
)
def test_an_answer_cut_inside_a_character_ends_before_it_streamed_batched_or_not(
    smollm2, messages, budget, whole
):
    decoding = Decoding(max_new_tokens=budget)
    inputs = smollm2.encode(messages)
    ids = smollm2.model.generate(
        **inputs, max_new_tokens=budget, do_sample=False, temperature=None, top_p=None, top_k=None
    )
    # The case: the budget's last token holds the first bytes of a character.
    assert smollm2.tokenizer.decode(ids[0, inputs["input_ids"].shape[1] :]) == whole + "\ufffd"
    stream = smollm2.stream(messages, decoding)
    pieces = list(stream)
    streamed = stream.generation
    [batched, _] = smollm2.generate_batch([messages, CAPITAL], decoding)
    for generation in (streamed, smollm2.generate(messages, decoding), batched):
        assert (generation.text, generation.finish_reason) == (whole, "length")
        assert generation.output_tokens == budget  # the held-back token was generated: it is counted
    assert "".join(pieces) == whole and not any("\ufffd" in piece for piece in pieces)


def test_a_conversation_over_the_context_is_refused_with_the_counts(smollm2):
    long = [{"role": "user", "content": "word " * 9000}]
    tokens = smollm2.count_tokens(long)
    with pytest.raises(PromptTooLong) as refused:
        smollm2.generate(long, Decoding(max_new_tokens=64))
    assert (refused.value.tokens, refused.value.limit) == (tokens, 8192)
    assert str(refused.value) == (
        f"the conversation is {tokens:,} tokens; with 64 for the answer it exceeds the model's context of "
        "8,192 tokens"
    )


@pytest.mark.parametrize(
    "text",
    ["I 💜 🏳️‍🌈 you 👨🏿‍❤️‍👨🏻", "מה בירת צרפת?", "ما هي عاصمة فرنسا؟", "line one\r\nline two", "x" * 10_000],
    ids=["emoji", "hebrew", "arabic", "crlf", "10000-chars"],
)
def test_unusual_text_is_answered(smollm2, text):
    generation = smollm2.generate([{"role": "user", "content": text}], Decoding(max_new_tokens=4))
    assert generation.finish_reason in ("stop", "length") and generation.input_tokens > 0


@pytest.mark.parametrize(
    "messages, message",
    [
        ([], "the conversation is empty"),
        ([{"role": "robot", "content": "hi"}], "each message needs a role"),
        ([{"role": "user", "content": None}], "each message needs a role"),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "the last message must be the user's",
        ),
    ],
)
def test_malformed_conversations_are_refused(messages, message):
    with pytest.raises(InferenceError, match=message):
        check_messages(messages)


def test_decoding_settings_out_of_range_are_refused():
    for bad in (
        {"temperature": -0.1},
        {"temperature": 2.5},
        {"top_p": 0},
        {"max_new_tokens": 0},
        {"stop": ("",)},
    ):
        with pytest.raises(ValueError):
            Decoding(**bad)


# --- multiple choice by log-likelihood -----------------------------------------------------------------


def _log_likelihood_alone(smollm2, messages, option) -> float:
    """The option's log-likelihood computed on its own, unbatched: the reference for the batched one."""
    import torch

    prompt = smollm2.encode(messages)["input_ids"][0].tolist()
    continuation = smollm2.tokenizer(option, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + continuation])
    with torch.inference_mode():
        log_probs = torch.log_softmax(smollm2.model(input_ids=ids).logits.float(), dim=-1)[0]
    return sum(float(log_probs[len(prompt) + i - 1, token]) for i, token in enumerate(continuation))


def test_the_likeliest_option_is_picked_and_the_batch_matches_each_option_alone(smollm2):
    options = ["Paris", "Berlin", "Madrid"]
    scores = smollm2.choose(CAPITAL, options)
    assert scores.picked == scores.picked_unnormalised == 0
    for option, batched, normalised in zip(options, scores.log_likelihoods, scores.normalised, strict=True):
        assert batched == pytest.approx(_log_likelihood_alone(smollm2, CAPITAL, option), abs=1e-3)
        assert normalised == pytest.approx(batched / len(option.encode("utf-8")))
        assert batched < 0


def test_items_that_start_alike_read_their_shared_start_once_and_score_as_each_alone(smollm2, monkeypatch):
    # A judge's two questions about one answer: the prompts share all but the question.
    passage = "The Amazon is a river in South America. It is about 6,400 km long and crosses Brazil. " * 2
    items = [
        ([{"role": "user", "content": f"{passage}\nAnswer with one of: yes, no.\n{question}"}], options)
        for question, options in (
            ("Is the Amazon in South America?", ["yes", "no"]),
            ("Rate how sure you are, 1 to 3.", ["1", "2", "3"]),
        )
    ]
    read = []
    forward = smollm2.model.forward
    monkeypatch.setattr(
        smollm2.model, "forward", lambda *a, **k: read.append(k["input_ids"].shape) or forward(*a, **k)
    )
    together = smollm2.choose_each(items)
    prompts = [smollm2.encode(messages)["input_ids"].shape[1] for messages, _ in items]
    shared = read[0][1]
    # The shared start once, then each item's own rest and its options (one right-padded batch each).
    assert [shape[1] for shape in read[1::2]] == [n - shared for n in prompts]
    assert len(read) == 1 + 2 * len(items) and shared > 50
    monkeypatch.setattr(smollm2.model, "forward", forward)
    for (messages, options), scores in zip(items, together, strict=True):
        alone = smollm2.choose(messages, options)
        assert scores.picked == alone.picked
        assert scores.log_likelihoods == pytest.approx(alone.log_likelihoods, abs=1e-3)
        # And against the unbatched reference, for the option the model picked.
        option = options[scores.picked]
        reference = _log_likelihood_alone(smollm2, messages, option)
        assert scores.log_likelihoods[scores.picked] == pytest.approx(reference, abs=1e-3)
    assert smollm2.choose_each([]) == []


def test_a_long_option_with_a_predictable_start_wins_per_byte_but_not_in_sum(smollm2):
    """Why the sum's pick is kept beside the normalised one: measured on SmolLM2, "The capital of France is
    Madrid." has a lower log-likelihood than "Paris" (-13.5 against -4.1) but a higher one per byte
    (-0.42 against -0.82), as its first five words are easy to predict."""
    scores = smollm2.choose(CAPITAL, ["Paris", "The capital of France is Madrid."])
    assert (scores.picked, scores.picked_unnormalised) == (1, 0)
    assert scores.log_likelihoods[0] > scores.log_likelihoods[1]


def test_options_are_normalised_by_their_bytes():
    from engine.runtime.generative import ChoiceScores

    # -6.0 over "Paris" (5 bytes) is -1.2 a byte; -8.0 over "Île-de-France" (14 bytes: Î is two) is -0.571.
    assert len("Île-de-France".encode()) == 14
    assert ChoiceScores((-6.0, -8.0), (-6.0 / 5, -8.0 / 14), 1).picked == 1


def test_a_multiple_choice_item_needs_two_options(smollm2):
    with pytest.raises(InferenceError, match="at least two non-empty options"):
        smollm2.choose(CAPITAL, ["Paris"])
    with pytest.raises(InferenceError, match="at least two non-empty options"):
        smollm2.choose(CAPITAL, ["Paris", "  "])
