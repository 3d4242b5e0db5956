"""The history: bursts and tunes kept on disk; bursts combined (A/B ones kept with their verdict)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from tui.bench.report.models import Comparison
from tui.bench.report.summary import comparison
from tui.bench.results import ArmResult, BurstResult, BurstVerdict
from tui.bounded_read import read_bounded
from tui.configs.atomic import write_file
from tui.fit_text import cut_left, short_url
from tui.format import UNKNOWN as DASH
from tui.format import fmt_times, fmt_times_interval
from tui.paths import user_data_dir
from tui.sanitize import safe_line
from tui.tables import Table

MAX_BURST_FILE_BYTES = 200_000_000
MAX_LISTED = 200
EXPORTS_FOLDER = "spectop-exports"
Kept = TypeVar("Kept", bound=BaseModel)


class BurstFileError(Exception):
    """A burst file that cannot be read, or two bursts that cannot be compared."""


@dataclass(frozen=True)
class BurstEntry:
    path: Path
    started_at: datetime
    prompt_set: str
    arm_names: tuple[str, ...]
    requests: int
    arm_urls: tuple[str, ...] = ()  # safe_line'd, as the arms' names are not
    verdict: BurstVerdict | None = None

    @property
    def short_verdict(self) -> str:
        """B against A in a column: `B 1.70x (1.52-1.88)`, `A 1.25x (...)`, `no difference` or "–"."""
        verdict = self.verdict
        if len(self.arm_names) < 2 or verdict is None:
            return DASH
        ratio, ci = verdict.decode_tokens_per_s_ratio, verdict.ci95
        if ratio is None:
            return "no comparison"
        if ci is None:
            return f"B/A {fmt_times(ratio)}"
        if ci[0] <= 1.0 <= ci[1]:  # the verdict line's rules (report.verdict_text)
            return "no difference"
        if ratio >= 1.0:
            return f"B {fmt_times(ratio)} ({fmt_times_interval(ci)})"
        return f"A {fmt_times(1 / ratio)} ({fmt_times_interval((1 / ci[1], 1 / ci[0]))})"


HISTORY_COLUMNS = ("when", "A", "B", "faster (95% CI)", "set", "n")  # set: the prompt set


def history_row(entry: BurstEntry, *, url_width: int, set_width: int, year: bool) -> list[str]:
    """One burst as the history shows it: both URLs cut to `url_width` keeping host:port, the verdict."""
    urls = [short_url(url, url_width) for url in entry.arm_urls[:2]] or [DASH]
    return [
        f"{entry.started_at:%Y-%m-%d %H:%M}" if year else f"{entry.started_at:%m-%d %H:%M}",
        urls[0],
        urls[1] if len(urls) > 1 else "one arm",
        entry.short_verdict,
        cut_left(safe_line(entry.prompt_set), set_width),
        str(entry.requests),
    ]


def history_rows(entries: list[BurstEntry], width: int, gap: int = 2) -> list[list[str]]:
    """The rows in `width` cells: the URLs share what the other columns leave (at least 13 cells each)."""
    year, set_width = width >= 100, 12 if width < 120 else 30

    def rows(url_width: int) -> list[list[str]]:
        return [history_row(e, url_width=url_width, set_width=set_width, year=year) for e in entries]

    table = [list(HISTORY_COLUMNS), *rows(1000)]
    others = sum(max(len(row[column]) for row in table) for column in (0, 3, 4, 5))
    return rows(max(13, (width - others - gap * len(HISTORY_COLUMNS)) // 2))


def history_lines(entries: list[BurstEntry], width: int = 80) -> list[str]:
    """`spectop bench --history`: a header, then per burst a row in `width` cells and its file."""
    lines = Table(HISTORY_COLUMNS, history_rows(entries, width)).text(
        left=range(len(HISTORY_COLUMNS)), gap="  "
    )
    files = ["file"] + [safe_line(str(entry.path)) for entry in entries]
    return [line for row, path in zip(lines, files, strict=True) for line in (row, f"  {path}")]


def bursts_dir() -> Path:
    return user_data_dir() / "bursts"


def kept_name(kind: str, started_at: datetime) -> str:
    return f"{kind}-{started_at:%Y%m%d-%H%M%S-%f}.json"


def kept_files(kind: str, folder: Path | None = None) -> list[Path]:
    """The `kind` files kept in `folder` (the history), newest first, the MAX_LISTED newest."""
    folder = folder or bursts_dir()
    if not folder.is_dir():
        return []
    return sorted(folder.glob(f"{kind}-*.json"), reverse=True)[:MAX_LISTED]


def save_kept(result: BaseModel, name: str, folder: Path | None = None) -> Path:
    return write_file((folder or bursts_dir()) / name, result.model_dump_json())


def load_kept(model: type[Kept], path: Path) -> Kept:
    """The file at `path` read as a `model` (BurstResult, TuneResult); BurstFileError says why not."""
    raw = read_bounded(path, MAX_BURST_FILE_BYTES, BurstFileError)
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        what = model.__name__.removesuffix("Result").lower()
        raise BurstFileError(f"{path}: not a spectop {what}: field {where}: {first['msg']}") from error


def export_path(kind: str, when: datetime) -> Path:
    """Where the burst screen writes an export: `spectop-exports/` under the current folder."""
    extension = {"json": "json", "csv": "csv", "markdown": "md"}[kind]
    return Path.cwd() / EXPORTS_FOLDER / f"spectop-burst-{when:%Y%m%d-%H%M%S}.{extension}"


def with_verdict(result: BurstResult, found: Comparison | None = None) -> BurstResult:
    """An A/B burst with its verdict (`found`: the comparison already made of this very result)."""
    if result.verdict is not None or len(result.arms) < 2:
        return result
    if found is None:
        found = comparison(result.arms[0], result.arms[1], settings=result.settings)
    verdict = BurstVerdict(
        text=found.verdict, decode_tokens_per_s_ratio=found.decode_tokens_per_s_ratio, ci95=found.ci95
    )
    return result.model_copy(update={"verdict": verdict})


def save_burst(result: BurstResult, folder: Path | None = None, *, found: Comparison | None = None) -> Path:
    """Keep `result` (with its verdict: `found`, else computed) in `folder` (the burst history)."""
    result = with_verdict(result, found)
    return save_kept(result, kept_name("burst", result.started_at), folder)


def load_burst(path: Path) -> BurstResult:
    return load_kept(BurstResult, path)


def _entry(path: Path, result: BurstResult) -> BurstEntry:
    return BurstEntry(
        path=path,
        started_at=result.started_at,
        prompt_set=result.settings.prompt_set,
        arm_names=tuple(arm.name for arm in result.arms),
        requests=result.settings.requests,
        arm_urls=tuple(safe_line(arm.url) for arm in result.arms),
        verdict=result.verdict,
    )


def list_bursts(folder: Path | None = None) -> list[BurstEntry]:
    """Newest first; unreadable files are skipped."""
    entries = []
    for path in kept_files("burst", folder):
        with contextlib.suppress(BurstFileError):
            entries.append(_entry(path, load_burst(path)))
    return entries


async def alist_bursts(folder: Path | None = None) -> list[BurstEntry]:
    return await asyncio.to_thread(list_bursts, folder)


def pick_arm(result: BurstResult, label: str) -> ArmResult:
    if (arm := next((arm for arm in result.arms if arm.label == label), None)) is not None:
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
        settings=after.settings.model_copy(update={"temperature": temperature, "compared": "before_after"}),
        arms=arms,
    )
