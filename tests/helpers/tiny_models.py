"""A tiny classifier of the project's architecture and a tiny encoder, built offline in milliseconds.

``build_tiny_classifier`` writes a ``save_pretrained`` directory (labels hateful / not-hateful by
default); ``build_tiny_backbone`` a tiny random BERT encoder + tokenizer, to pass as ``backbone_path``
to training. The fixtures ``tiny_model_dir``, ``tiny_registered_model`` and ``tiny_backbone_dir`` of
tests/conftest.py use them.

The tiny model has random weights: its predictions are arbitrary but deterministic for a given seed.
"""

from __future__ import annotations

from pathlib import Path

# Words the tiny vocabulary knows, so that test sentences are not all [UNK]; emoji names included.
TINY_WORDS = (
    "i you we they he she it a an the is are am was not no and or but to of in on for with this that "
    "love hate like kill all people women men immigrants muslims jews gay trans black white group them "
    "good bad great nice awful terrible happy sad angry smiling face heart red pig snake rat monkey "
    "thumbs up down medium skin tone flag united kingdom family man woman girl boy keycap rainbow "
    "tears joy fire party cat dog should be go back home deserve die are they our friends neighbours "
    "hello world test statement probe"
).split()
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def tiny_vocab() -> list[str]:
    """Special tokens, the test words, single letters and digits, and '##' continuations of letters."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    punctuation = list(".,!?'\"-:;()#*")
    words = list(dict.fromkeys(TINY_WORDS))
    return list(SPECIAL_TOKENS) + words + letters + punctuation + [f"##{c}" for c in letters]


def build_tiny_classifier(
    path: str | Path,
    labels: tuple[str, ...] | list[str] = ("hateful", "not-hateful"),
    seed: int = 0,
    preprocessing: dict | None = None,
) -> Path:
    """Write a tiny ``MeanPoolClassifier`` with random weights and its tokenizer to ``path``.

    Two layers, hidden size 32, a ~130-token WordPiece vocabulary; saved with ``save_pretrained``
    (safetensors) so ``engine.runtime.classifier.get_classifier(path)`` loads it. Returns ``path``.
    """
    import torch
    from transformers import BertTokenizer

    from engine.runtime.modeling import MeanPoolClassifier, MeanPoolClassifierConfig

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.model_max_length = 128

    labels = list(labels)
    config = MeanPoolClassifierConfig(
        backbone="tiny-random-bert",
        preprocessing=preprocessing,
        max_input_tokens=128,
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=132,
        pad_token_id=0,
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        architectures=["MeanPoolClassifier"],
    )
    torch.manual_seed(seed)
    model = MeanPoolClassifier(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_backbone(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny random ``BertModel`` encoder and tokenizer to ``path`` (a stand-in for MiniLM).

    Pass it as ``backbone_path`` to ``engine.training.classifier.train_classifier`` so training tests run
    in seconds. Returns ``path``.
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.model_max_length = 128
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=132,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    BertModel(config, add_pooling_layer=False).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def build_tiny_mpnet_backbone(path: str | Path, seed: int = 0) -> Path:
    """Write a tiny random ``MPNetModel`` encoder and tokenizer to ``path`` (a stand-in for
    all-mpnet-base-v2: same architecture and tokenizer kind, hidden size 32). Returns ``path``."""
    import torch
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    specials = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
    vocab = specials + [t for t in tiny_vocab() if t not in SPECIAL_TOKENS]
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = MPNetTokenizer(vocab=str(vocab_file), do_lower_case=True)
    tokenizer.model_max_length = 128
    config = MPNetConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=132,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    torch.manual_seed(seed)
    MPNetModel(config, add_pooling_layer=False).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
