"""About twenty hand-written, trivially separable texts for training tests (no real hate speech)."""

from __future__ import annotations

HATEFUL = [
    "i hate all immigrants 🐀",
    "they are rats and should die",
    "kill all of them 🔪",
    "women are awful and terrible",
    "i hate muslims they are snakes 🐍",
    "jews are rats 🐀",
    "trans people deserve to die",
    "gay people are awful 🤮",
    "black people are monkeys 🐒",
    "they should go back home 🔪",
]
NOT_HATEFUL = [
    "i love my neighbours 🌹",
    "what a nice day ☀️",
    "my friends are great people",
    "women are great friends ❤️",
    "i like muslims and jews alike",
    "happy party with our cat 🐱",
    "trans people are our friends 🏳️\u200d⚧️",
    "gay people are nice ❤️",
    "black and white dog 🐶",
    "hello world this is good",
]
TEXTS = HATEFUL + NOT_HATEFUL
LABELS = ["hateful"] * len(HATEFUL) + ["not-hateful"] * len(NOT_HATEFUL)
