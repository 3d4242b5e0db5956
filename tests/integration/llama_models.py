"""Tiny random-weight GGUF models (llama architecture, one SPM byte-fallback vocabulary) for llama-server:
the target, and as drafts its byte copy (accepts all), the target plus 7% noise (about 0.4) and unrelated
weights (near 0). Greedy decoding never picks a special or byte token, so every generation runs to
`max_tokens`."""

from __future__ import annotations

import shutil
import string
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
UNK_ID, BOS_ID, EOS_ID = 0, 1, 2
FIRST_NORMAL_ID = len(SPECIAL_TOKENS) + 256
WORDS = (
    "the", "model", "draft", "token", "accept", "speculative", "decode", "hello", "world", "server",
    "llama", "fast", "slow", "rate", "length", "mean", "batch", "cache", "prompt", "user", "assistant",
    "system", "what", "is", "a", "an", "of", "to", "and", "in", "on", "for", "with", "you", "it",
    "that", "this", "tell", "me", "story", "about", "count", "from", "one", "two", "three", "write",
    "poem",
)  # fmt: skip
NOISY_DRAFT_NOISE = 0.07  # about 0.4 acceptance: between the default warning (0.6) and critical (0.3)


@dataclass(frozen=True)
class ModelShape:
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    context_length: int = 2048


TARGET_SHAPE = ModelShape(n_layer=4, n_embd=256, n_head=4, n_head_kv=2, n_ff=704)
RANDOM_DRAFT_SHAPE = ModelShape(n_layer=2, n_embd=128, n_head=2, n_head_kv=1, n_ff=352)


@dataclass(frozen=True)
class ModelSet:
    target: Path
    draft_same: Path
    draft_noisy: Path
    draft_random: Path

    def draft(self, kind: str) -> Path | None:
        """The draft model of a server kind: nodraft / same / noisy / random."""
        return {
            "nodraft": None,
            "same": self.draft_same,
            "noisy": self.draft_noisy,
            "random": self.draft_random,
        }[kind]


def spm_vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and types of a small SentencePiece vocabulary with the 256 byte-fallback tokens."""
    pieces = ["▁", *(string.ascii_letters + string.digits + string.punctuation), *(f"▁{w}" for w in WORDS)]
    tokens = [*SPECIAL_TOKENS, *(f"<0x{byte:02X}>" for byte in range(256)), *pieces]
    types = [
        gguf.TokenType.UNKNOWN,
        *[gguf.TokenType.CONTROL] * (len(SPECIAL_TOKENS) - 1),
        *[gguf.TokenType.BYTE] * 256,
        *[gguf.TokenType.NORMAL] * len(pieces),
    ]
    # SPM merges prefer higher scores: longer pieces score higher, so words are kept whole.
    scores = [
        float(len(token)) - 100.0 if kind == gguf.TokenType.NORMAL else 0.0
        for token, kind in zip(tokens, types, strict=True)
    ]
    return tokens, scores, [int(t) for t in types]


def random_weights(shape: ModelShape, n_vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Llama tensors by GGUF name; numpy shapes are (rows, cols), i.e. GGUF ne reversed."""
    rng = np.random.default_rng(seed)
    head_dim = shape.n_embd // shape.n_head
    kv_dim = head_dim * shape.n_head_kv

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    tensors: dict[str, np.ndarray] = {
        "token_embd.weight": rng.standard_normal((n_vocab, shape.n_embd)).astype(np.float32),
        "output_norm.weight": np.ones(shape.n_embd, dtype=np.float32),
    }
    output = matrix(n_vocab, shape.n_embd) * 4.0
    # Zero rows give logit 0 while ~150 random rows compete: greedy decoding never picks a special token
    # (llama.cpp ends generation on </s> and <|im_end|>) nor a byte token (partial UTF-8 would merge chunks).
    output[:FIRST_NORMAL_ID] = 0.0
    tensors["output.weight"] = output
    e, norm = shape.n_embd, (0, 0)  # a norm: ones, not a matrix
    for i in range(shape.n_layer):
        for name, (rows, cols) in (
            ("attn_norm", norm), ("attn_q", (e, e)), ("attn_k", (kv_dim, e)), ("attn_v", (kv_dim, e)),
            ("attn_output", (e, e)), ("ffn_norm", norm), ("ffn_gate", (shape.n_ff, e)),
            ("ffn_up", (shape.n_ff, e)), ("ffn_down", (e, shape.n_ff)),
        ):  # fmt: skip
            tensors[f"blk.{i}.{name}.weight"] = matrix(rows, cols) if rows else np.ones(e, dtype=np.float32)
    return tensors


def add_noise(tensors: dict[str, np.ndarray], scale: float, seed: int) -> dict[str, np.ndarray]:
    """A copy with Gaussian noise of `scale` times each tensor's own standard deviation (norms left alone)."""
    rng = np.random.default_rng(seed)
    return {
        name: value.copy()
        if value.ndim == 1
        else value + rng.standard_normal(value.shape).astype(np.float32) * (scale * float(value.std()))
        for name, value in tensors.items()
    }


def write_model(path: Path, name: str, shape: ModelShape, tensors: dict[str, np.ndarray]) -> Path:
    tokens, scores, types = spm_vocabulary()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_context_length(shape.context_length)
    writer.add_embedding_length(shape.n_embd)
    writer.add_block_count(shape.n_layer)
    writer.add_feed_forward_length(shape.n_ff)
    writer.add_head_count(shape.n_head)
    writer.add_head_count_kv(shape.n_head_kv)
    writer.add_rope_dimension_count(shape.n_embd // shape.n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_add_bos_token(True)
    writer.add_chat_template(CHATML_TEMPLATE)
    for tensor_name, value in tensors.items():
        writer.add_tensor(tensor_name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def make_models(directory: Path, seed: int = 1234) -> ModelSet:
    """Write the four models into `directory` (created if missing) and return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    n_vocab = len(spm_vocabulary()[0])
    target_tensors = random_weights(TARGET_SHAPE, n_vocab, seed)
    target = write_model(directory / "target.gguf", "spectop-target", TARGET_SHAPE, target_tensors)
    draft_same = directory / "draft_same.gguf"
    shutil.copyfile(target, draft_same)
    noisy = add_noise(target_tensors, NOISY_DRAFT_NOISE, seed + 1)
    draft_noisy = write_model(directory / "draft_noisy.gguf", "spectop-draft-noisy", TARGET_SHAPE, noisy)
    unrelated = random_weights(RANDOM_DRAFT_SHAPE, n_vocab, seed + 2)
    draft_random = write_model(
        directory / "draft_random.gguf", "spectop-draft-random", RANDOM_DRAFT_SHAPE, unrelated
    )
    return ModelSet(target=target, draft_same=draft_same, draft_noisy=draft_noisy, draft_random=draft_random)
