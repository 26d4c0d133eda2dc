"""Provenance of generated answers (engine/runtime/provenance.py): the digests a local answer records
are those of the files that produced it; a remote answer records the server's fingerprint."""

from __future__ import annotations

import hashlib
from pathlib import Path

from engine.runtime.generative import Decoding
from engine.runtime.provenance import file_sha256, local_provenance, remote_provenance


def test_a_local_answer_records_the_weights_tokenizer_and_template_that_produced_it(smollm2, smollm2_dir):
    messages = [{"role": "user", "content": "Say hello."}]
    [generation] = smollm2.generate_batch([messages], Decoding(max_new_tokens=4, temperature=0.0))
    provenance = generation.as_dict()["provenance"]
    weights = sorted(Path(smollm2_dir).glob("*.safetensors"))
    assert weights and provenance["weights"] == {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in weights
    }
    template = smollm2.tokenizer.chat_template
    assert provenance["chat_template"] == hashlib.sha256(template.encode("utf-8")).hexdigest()
    tokenizer = hashlib.sha256()
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.json",
        "merges.txt",
        "special_tokens_map.json",
    ):
        path = Path(smollm2_dir) / name
        if path.is_file():
            tokenizer.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    assert provenance["tokenizer"] == tokenizer.hexdigest()
    import torch
    import transformers

    libraries = provenance["libraries"]
    assert (libraries["torch"], libraries["transformers"]) == (
        torch.__version__,
        transformers.__version__,
    )


def test_digests_are_cached_per_file_state(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"abc")
    assert file_sha256(path) == hashlib.sha256(b"abc").hexdigest()
    path.write_bytes(b"abcd")  # another size: hashed again
    assert file_sha256(path) == hashlib.sha256(b"abcd").hexdigest()
    (tmp_path / "tokenizer.json").write_text("{}")
    got = local_provenance(tmp_path, None)
    assert got["weights"] == {"w.safetensors": hashlib.sha256(b"abcd").hexdigest()}
    assert got["chat_template"] is None
    assert got["tokenizer"] == hashlib.sha256(b"tokenizer.json\0{}\0").hexdigest()


def test_a_remote_answer_records_the_server_model_and_fingerprint():
    got = remote_provenance("smol", "fp_123")
    assert (got["server_model"], got["system_fingerprint"]) == ("smol", "fp_123")
    assert "openai" in got["libraries"]
    # The HTTP client under it too, whichever the openai release uses.
    assert {"httpx", "httpx2"} & set(got["libraries"])
