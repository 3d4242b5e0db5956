"""A bounded prefix cache keyed by chained block hashes, as vLLM's automatic prefix caching does."""

from __future__ import annotations

import hashlib
from collections import OrderedDict


def block_hashes(tokens: list[str], block_size: int) -> list[bytes]:
    """Chained hashes of the full blocks of a token list (a block's hash covers everything before it)."""
    hashes: list[bytes] = []
    previous = b""
    for start in range(0, len(tokens) - block_size + 1, block_size):
        block = "\x1f".join(tokens[start : start + block_size]).encode("utf-8", "replace")
        previous = hashlib.blake2b(previous + block, digest_size=12).digest()
        hashes.append(previous)
    return hashes


class PrefixCache:
    """Least-recently-used set of cached blocks, bounded by `capacity_blocks`."""

    def __init__(self, capacity_blocks: int, block_size: int, enabled: bool = True) -> None:
        self.capacity_blocks = max(1, capacity_blocks)
        self.block_size = block_size
        self.enabled = enabled
        self._blocks: OrderedDict[bytes, None] = OrderedDict()

    def lookup(self, hashes: list[bytes], prompt_tokens: int) -> int:
        """Cached prompt tokens for a request (at least one token is always computed)."""
        if not self.enabled:
            return 0
        hit_blocks = 0
        for digest in hashes:
            if digest not in self._blocks:
                break
            self._blocks.move_to_end(digest)
            hit_blocks += 1
        return min(hit_blocks * self.block_size, max(0, prompt_tokens - 1))

    def insert(self, hashes: list[bytes]) -> None:
        if not self.enabled:
            return
        for digest in hashes:
            self._blocks[digest] = None
            self._blocks.move_to_end(digest)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()
