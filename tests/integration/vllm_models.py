"""Tiny random-weight Llama models for the real-vLLM suite, made at test time with the vLLM venv's python
and cached by this file's hash: the target, and as drafts itself, `noisy` (acceptance about 0.3) and
`random` (about 0.05). Run alone: `VENV/bin/python tests/integration/vllm_models.py OUT_DIR`."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

VOCABULARY = 512
NOISE = {"noisy": 0.02, "random": 0.1}
SEEDS = {"noisy": 2, "random": 3}
STAMP = "models.json"
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


@dataclass(frozen=True)
class VllmModels:
    target: Path
    noisy: Path
    random: Path

    def draft(self, kind: str) -> Path | None:
        """The draft model of a server kind: nodraft / same / noisy / random."""
        return {"nodraft": None, "same": self.target, "noisy": self.noisy, "random": self.random}[kind]


def recipe_hash() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def make_models(python: Path, cache: Path, log: object = print) -> VllmModels:
    """The cached models, made now with `python` (the vLLM venv's) when missing; a lock serialises makers."""
    directory = cache / f"models-{recipe_hash()}"
    models = VllmModels(directory / "tiny", directory / "noisy", directory / "random")
    if (directory / STAMP).is_file():
        return models
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".models.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (directory / STAMP).is_file():
            return models
        staging = cache / f".models-{recipe_hash()}.staging"
        shutil.rmtree(staging, ignore_errors=True)
        done = subprocess.run(
            [str(python), __file__, str(staging)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"making the models failed ({done.returncode}): {done.stderr[-3000:]}")
        shutil.rmtree(directory, ignore_errors=True)
        staging.rename(directory)
    return models


def _build(out: Path) -> None:  # runs in the vLLM venv
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    words = ["<unk>", "<s>", "</s>", *(f"w{i}" for i in range(VOCABULARY - 3))]
    vocab = {word: index for index, word in enumerate(words)}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<unk>"
    )
    fast.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=VOCABULARY,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(20261201)
    target = LlamaForCausalLM(config)
    with torch.no_grad():
        for parameter in target.parameters():
            parameter.normal_(0.0, 0.5)
        # End of sequence scores 0 where the best word scores far above: greedy requests run to max_tokens.
        target.lm_head.weight[2].zero_()
    state = {name: tensor.clone() for name, tensor in target.state_dict().items()}

    def save(name: str, model: LlamaForCausalLM) -> None:
        model.to(torch.bfloat16).save_pretrained(out / name, safe_serialization=True)
        fast.save_pretrained(out / name)

    save("tiny", target)
    for name, std in NOISE.items():
        draft = LlamaForCausalLM(config)
        generator = torch.Generator().manual_seed(SEEDS[name])
        with torch.no_grad():
            for key, parameter in draft.state_dict().items():
                noise = torch.randn(parameter.shape, generator=generator) * std
                parameter.copy_(state[key].float() + noise)
        save(name, draft)
    (out / STAMP).write_text(json.dumps({"vocabulary": VOCABULARY, "noise": NOISE}))


if __name__ == "__main__":
    _build(Path(sys.argv[1]))
