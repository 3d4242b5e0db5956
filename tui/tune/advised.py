"""The advisor's word for the guard (`Advised`): in a module of its own, so the dashboard's live advice
does not import the guard (and with it the tuner and the burst engine) before the first frame."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Advised:
    """The advisor's word for the guard: the better k held for `sustained_s` (None: none), the better k
    of the current window alone, the k the server runs, and the words."""

    held_k: int | None = None
    now_k: int | None = None
    current_k: int | None = None
    words: str = ""
