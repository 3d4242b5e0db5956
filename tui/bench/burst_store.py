"""Burst files: bursts kept on disk (`$XDG_DATA_HOME/spectop/bursts/`), listed, loaded, combined.

Any two bursts of the same prompt set (same digest) can be compared, e.g. one server
before and after a config change: arm `a` of each by default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiofiles
from pydantic import ValidationError

from tui.bench.results import ArmResult, BurstResult

MAX_BURST_FILE_BYTES = 200_000_000
MAX_LISTED = 200


class BurstFileError(Exception):
    """A burst file that cannot be read, or two bursts that cannot be compared."""


@dataclass(frozen=True)
class BurstEntry:
    path: Path
    started_at: datetime
    prompt_set: str
    prompt_set_digest: str
    arm_names: tuple[str, ...]
    requests: int
    temperature: float

    @property
    def label(self) -> str:
        arms = " vs ".join(self.arm_names)
        return f"{self.started_at:%m-%d %H:%M:%S} {self.prompt_set} {arms}"


def bursts_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "spectop" / "bursts"


def burst_file_name(result: BurstResult) -> str:
    return f"burst-{result.started_at:%Y%m%d-%H%M%S-%f}.json"


def save_burst(result: BurstResult, folder: Path | None = None) -> Path:
    folder = folder or bursts_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / burst_file_name(result)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(result.model_dump_json(), encoding="utf-8")
    temporary.replace(path)
    return path


def parse_burst(raw: bytes, path: Path) -> BurstResult:
    if len(raw) > MAX_BURST_FILE_BYTES:
        raise BurstFileError(f"{path}: larger than {MAX_BURST_FILE_BYTES} bytes")
    try:
        return BurstResult.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise BurstFileError(f"{path}: not a spectop burst: field {where}: {first['msg']}") from error


def load_burst(path: Path) -> BurstResult:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise BurstFileError(f"{path}: cannot read: {error.strerror or error}") from error
    return parse_burst(raw, path)


async def aload_burst(path: Path) -> BurstResult:
    try:
        async with aiofiles.open(path, "rb") as handle:
            raw = await handle.read(MAX_BURST_FILE_BYTES + 1)
    except OSError as error:
        raise BurstFileError(f"{path}: cannot read: {error.strerror or error}") from error
    return parse_burst(raw, path)


def _entry(path: Path, result: BurstResult) -> BurstEntry:
    return BurstEntry(
        path=path,
        started_at=result.started_at,
        prompt_set=result.settings.prompt_set,
        prompt_set_digest=result.settings.prompt_set_digest,
        arm_names=tuple(arm.name for arm in result.arms),
        requests=result.settings.requests,
        temperature=result.settings.temperature,
    )


def _candidates(folder: Path | None) -> list[Path]:
    folder = folder or bursts_dir()
    if not folder.is_dir():
        return []
    return sorted(folder.glob("burst-*.json"), reverse=True)[:MAX_LISTED]


def list_bursts(folder: Path | None = None) -> list[BurstEntry]:
    """Newest first; unreadable files are skipped."""
    entries = []
    for path in _candidates(folder):
        try:
            entries.append(_entry(path, load_burst(path)))
        except BurstFileError:
            continue
    return entries


async def alist_bursts(folder: Path | None = None) -> list[BurstEntry]:
    entries = []
    for path in _candidates(folder):
        try:
            entries.append(_entry(path, await aload_burst(path)))
        except BurstFileError:
            continue
    return entries


def pick_arm(result: BurstResult, label: str = "a") -> ArmResult:
    for arm in result.arms:
        if arm.label == label:
            return arm
    raise BurstFileError(f"the burst of {result.started_at:%Y-%m-%d %H:%M:%S} has no arm {label!r}")


def combine_bursts(
    before: BurstResult, after: BurstResult, *, before_arm: str = "a", after_arm: str = "a"
) -> BurstResult:
    """One A/B result from two bursts of the same prompt set: `before` as A, `after` as B."""
    if before.settings.prompt_set_digest != after.settings.prompt_set_digest:
        raise BurstFileError(
            f"different prompt sets ({before.settings.prompt_set} vs {after.settings.prompt_set}): "
            "only bursts of the same prompts can be compared"
        )
    arms = []
    for label, arm in (("a", pick_arm(before, before_arm)), ("b", pick_arm(after, after_arm))):
        requests = [request.model_copy(update={"arm": label}) for request in arm.requests]
        arms.append(arm.model_copy(update={"label": label, "requests": requests}))
    # Greedy equivalence only means something when both ran at temperature 0.
    temperature = max(before.settings.temperature, after.settings.temperature)
    return BurstResult(
        started_at=after.started_at,
        duration_s=after.duration_s,
        settings=after.settings.model_copy(update={"temperature": temperature}),
        arms=arms,
    )
