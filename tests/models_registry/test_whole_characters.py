"""No answer ends inside a character (engine/runtime/whole_characters.py): the bytes of an incomplete
UTF-8 character at the end are held back, on SmolLM2's byte-level tokenizer and for text a remote server
decoded itself; a U+FFFD the model generated, or one followed by text, stays."""

from __future__ import annotations

import pytest

from engine.runtime.whole_characters import TextTail, WholeCharacters, incomplete_bytes

RAINBOW_WAVE = "🌈🌊"  # F0 9F 8C 88, F0 9F 8C 8A


@pytest.mark.parametrize(
    "data, held",
    [
        (b"", 0),
        (b"ok", 0),
        ("ok 🌈".encode()[:-1], 3),  # three bytes of four
        ("ok 🌈".encode()[:-3], 1),  # the lead byte alone
        ("ok 🌈".encode(), 0),
        ("عا".encode()[:-1], 1),  # half of an Arabic letter (two bytes)
        (b"\xe0\x80", 0),  # no character begins E0 80: invalid bytes, not incomplete ones
        ("\ufffd".encode(), 0),  # U+FFFD itself, whole
        (b"\xf0\x9f\x8c\x88\xf0\x9f", 2),  # a whole emoji, then half of the next
    ],
)
def test_the_incomplete_bytes_at_the_end_are_counted(data, held):
    assert incomplete_bytes(data) == held


def test_token_ids_cut_inside_an_emoji_decode_to_the_whole_characters_before_it(smollm2):
    tokenizer = smollm2.tokenizer
    ids = tokenizer(RAINBOW_WAVE, add_special_tokens=False)["input_ids"]
    assert len(ids) == 6  # three tokens per emoji on SmolLM2: each cut below is inside a character
    whole = WholeCharacters(tokenizer)
    assert whole.byte_level
    assert tokenizer.decode(ids[:4]) == "🌈\ufffd"  # what the tokenizer itself gives
    expected = ["", "", "🌈", "🌈", "🌈", "🌈🌊"]
    assert [whole.decode(ids[:n]) for n in range(1, 7)] == expected
    # With the end-of-turn token after the cut, skipped as the runners skip it.
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert whole.decode([*ids[:4], end], skip_special_tokens=True) == "🌈"
    assert whole.decode(ids[0]) == ""  # one id, as transformers' streamer passes it at a new line


def test_a_replacement_character_the_model_generated_stays(smollm2):
    tokenizer = smollm2.tokenizer
    whole = WholeCharacters(tokenizer)
    # U+FFFD generated whole (its bytes EF BF BD), last: an answer, not a cut.
    ids = tokenizer("ok \ufffd", add_special_tokens=False)["input_ids"]
    assert whole.decode(ids) == "ok \ufffd"
    # Half an emoji followed by text: bytes that are no character, which the model did generate.
    emoji = tokenizer("🌈", add_special_tokens=False)["input_ids"]
    after = tokenizer(" ok", add_special_tokens=False)["input_ids"]
    assert whole.decode([*emoji[:2], *after]) == "\ufffd ok"


def test_decoded_pieces_hold_back_a_trailing_replacement_until_text_follows():
    tail = TextTail()
    assert [tail.feed(piece) for piece in ("Hi ", "🌈", "\ufffd")] == ["Hi ", "🌈", ""]
    assert tail.text == "Hi 🌈"  # dropped when nothing follows: a character cut by the server
    assert tail.feed("!") == "\ufffd!"  # text came after it: it was the model's
    assert tail.text == "Hi 🌈\ufffd!"
