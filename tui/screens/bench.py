"""The A/B burst screen: pick A and B, run a burst, read the verdict, keep and export it.

A and B are endpoints from the settings or arms of past bursts (before/after). The
burst runs in a worker on the app's shared httpx client and reports through the
"bursts" messages; statistics and file formats live in `tui.bench`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, Footer, Input, Label, ProgressBar, Select, Static
from textual.worker import Worker

from tui.bench.engine import ArmTarget, BurstConfig, BurstConfigError, BurstProgress, run_burst
from tui.bench.history import (
    BurstEntry,
    HistoryError,
    alist_bursts,
    aload_burst,
    combine_bursts,
    save_burst,
)
from tui.bench.prompts import DEFAULT_PROMPT_SET, PromptSetError, aload_prompt_set, builtin_set_names
from tui.bench.report import (
    DASH,
    burst_summary,
    equivalence_line,
    export,
    export_name,
    note_lines,
    table_rows,
)
from tui.bench.results import BurstResult
from tui.bench.schedule import LoadShape
from tui.messages import BurstFailed, BurstFinished, BurstHistoryLoaded, BurstProgressed
from tui.sanitize import safe_line, safe_text
from tui.settings import EndpointSettings
from tui.worker_errors import ReportsWorkerFailures

NO_B = "none"
MAX_USER_PROMPT_FILES = 20


class FormError(ValueError):
    """A form value that cannot be used; the message names the field."""


@dataclass(frozen=True)
class BurstForm:
    a: str
    b: str
    prompts: str
    requests: int
    concurrency: int
    rate: float | None
    max_tokens: int
    temperature: float


def _int_field(text: str, name: str, low: int, high: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise FormError(f"{name}: expected a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise FormError(f"{name}: expected {low}..{high}, got {value}")
    return value


def _float_field(text: str, name: str, low: float, high: float) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise FormError(f"{name}: expected a number, got {text!r}") from None
    if not low <= value <= high:
        raise FormError(f"{name}: expected {low:g}..{high:g}, got {value:g}")
    return value


def arm_line(label: str, arm: Any) -> str:
    ttft = DASH if arm.ttft_p50_s is None else f"{arm.ttft_p50_s * 1000:.0f} ms"
    rate = DASH if arm.decode_tokens_per_s_mean is None else f"{arm.decode_tokens_per_s_mean:.1f}"
    counts = f"{arm.done:>4}/{arm.total:<4} err {arm.errors:<3} retry {arm.retries:<3}"
    return f"{label} {safe_line(arm.name)[:10]:10} {counts} TTFT p50 {ttft:>7} decode {rate:>7} tok/s"


class BurstHistoryTable(DataTable[str]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "use('a')", "As A"),
        Binding("b", "use('b')", "As B"),
    ]

    def action_use(self, side: str) -> None:
        screen = self.screen
        if isinstance(screen, BenchScreen) and self.row_count:
            row_key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
            screen.use_past_burst(str(row_key.value), side)


class BenchScreen(ReportsWorkerFailures, Screen[None]):
    DEFAULT_CSS = """
    BenchScreen { layout: vertical; }
    BenchScreen #bench-title { height: 1; color: $accent; text-style: bold; }
    BenchScreen .form-row { height: 1; }
    BenchScreen .form-row Label { width: auto; padding: 0 1 0 0; }
    BenchScreen .form-row .gap { padding: 0 1 0 1; }
    BenchScreen #a-select, BenchScreen #b-select { width: 36; }
    BenchScreen #prompts-select { width: 16; }
    BenchScreen .form-row Input { width: 7; }
    BenchScreen #progress-row { height: 1; }
    BenchScreen #progress-row ProgressBar { width: 44; }
    BenchScreen #phase { width: 1fr; padding: 0 1; }
    BenchScreen #live { height: 2; }
    BenchScreen #status { height: 1; color: $text-muted; }
    BenchScreen #status.error { color: $error; }
    BenchScreen #switcher { height: 1fr; }
    BenchScreen #results-table, BenchScreen #history-table { height: 1fr; }
    BenchScreen #verdict { height: auto; max-height: 4; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back_or_cancel", "Back/Cancel"),
        Binding("ctrl+c", "cancel", "Cancel", priority=True, show=False),
        Binding("ctrl+r", "start", "Start"),
        Binding("h", "toggle_history", "History"),
        Binding("j", "export('json')", "JSON"),
        Binding("c", "export('csv')", "CSV"),
        Binding("m", "export('markdown')", "MD"),
    ]

    def __init__(
        self,
        endpoints: list[EndpointSettings],
        *,
        default_a: str | None = None,
        default_b: str | None = None,
    ) -> None:
        super().__init__()
        self.endpoints = list(endpoints)
        self.default_a = default_a
        self.default_b = default_b
        self.history: list[BurstEntry] = []
        self.result: BurstResult | None = None
        self.summary: dict[str, Any] | None = None
        self._worker: Worker[None] | None = None
        self._live_labels: dict[str, str] = {}  # engine arm -> side shown (a live B against a past A)

    # --- layout ---------------------------------------------------------------------------------------

    def _endpoint_options(self) -> list[tuple[str, str]]:
        return [(safe_line(f"{e.name}  {e.url.split('://', 1)[-1]}"), f"ep:{e.name}") for e in self.endpoints]

    def _past_options(self) -> list[tuple[str, str]]:
        options = []
        for entry in self.history[:30]:
            for label, name in zip("ab", entry.arm_names, strict=False):
                text = safe_line(
                    f"◷ {entry.started_at:%m-%d %H:%M} {entry.prompt_set} {label.upper()}:{name}"
                )
                options.append((text, f"burst:{entry.path}#{label}"))
        return options

    def _prompt_options(self) -> list[tuple[str, str]]:
        names = [(name, name) for name in builtin_set_names()]
        files = sorted(Path.cwd().glob("*.jsonl"))[:MAX_USER_PROMPT_FILES]
        return names + [(safe_line(path.name), str(path)) for path in files]

    def _default(self, wanted: str | None, index: int) -> str | None:
        names = [e.name for e in self.endpoints]
        if wanted in names:
            return f"ep:{wanted}"
        return f"ep:{names[index]}" if len(names) > index else None

    def compose(self) -> ComposeResult:
        yield Static(
            "A/B burst · ctrl+r or enter in a field starts · esc cancels / goes back", id="bench-title"
        )
        a_default = self._default(self.default_a, 0)
        b_default = self._default(self.default_b, 1) if self.default_b or len(self.endpoints) > 1 else NO_B
        with Horizontal(classes="form-row"):
            yield Label("A")
            yield Select(
                self._endpoint_options(),
                prompt="pick A",
                value=a_default if a_default else Select.NULL,
                id="a-select",
                compact=True,
            )
            yield Label("B", classes="gap")
            yield Select(
                [("(none: one arm)", NO_B), *self._endpoint_options()],
                prompt="pick B",
                value=b_default or NO_B,
                allow_blank=False,
                id="b-select",
                compact=True,
            )
        with Horizontal(classes="form-row"):
            yield Label("set")
            yield Select(
                self._prompt_options(),
                value=DEFAULT_PROMPT_SET,
                allow_blank=False,
                id="prompts-select",
                compact=True,
            )
            for label, field_id, value, tooltip in (
                ("n", "requests", "32", "measured requests per arm"),
                ("conc", "concurrency", "1", "requests in flight per arm"),
                ("rate", "rate", "", "requests/s per arm (empty: closed loop at the concurrency)"),
                ("tok", "max-tokens", "256", "max_tokens"),
                ("T", "temperature", "0", "temperature (0: greedy, outputs compared)"),
            ):
                yield Label(label, classes="gap")
                field = Input(value=value, id=field_id, compact=True)
                field.tooltip = tooltip
                yield field
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="progress")
            yield Static("ready", id="phase")
        yield Static("", id="live")
        yield Static("", id="status")
        with ContentSwitcher(initial="results", id="switcher"):
            with Vertical(id="results"):
                yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="verdict")
            yield BurstHistoryTable(id="history-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#results-table", DataTable)
        table.add_columns("figure", "A", "B")
        history = self.query_one("#history-table", BurstHistoryTable)
        history.add_columns("when", "prompt set", "arms", "n", "T")
        self.run_worker(self._load_history(), group="history", exit_on_error=False)
        if not self.endpoints:
            self.set_status("no endpoints in the settings: pick past bursts from the history (h)")

    # --- small helpers --------------------------------------------------------------------------------

    def set_status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Content(safe_line(text)))
        status.set_class(error, "error")

    def clear_results(self) -> None:
        """Forget the shown burst, so a cancelled or failed one never leaves the previous table in view."""
        self.result = None
        self.summary = None
        self.query_one("#results-table", DataTable).clear()
        self.query_one("#verdict", Static).update("")
        self.query_one("#live", Static).update("")

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_running

    def read_form(self) -> BurstForm:
        a = self.query_one("#a-select", Select).value
        if a is Select.NULL:
            raise FormError("A: pick an endpoint or a past burst")
        rate_text = self.query_one("#rate", Input).value.strip()
        return BurstForm(
            a=str(a),
            b=str(self.query_one("#b-select", Select).value),
            prompts=str(self.query_one("#prompts-select", Select).value),
            requests=_int_field(self.query_one("#requests", Input).value, "n (requests)", 1, 100_000),
            concurrency=_int_field(self.query_one("#concurrency", Input).value, "conc", 1, 4096),
            rate=_float_field(rate_text, "rate", 0.001, 100_000) if rate_text else None,
            max_tokens=_int_field(
                self.query_one("#max-tokens", Input).value, "tok (max_tokens)", 1, 1_000_000
            ),
            temperature=_float_field(
                self.query_one("#temperature", Input).value, "T (temperature)", 0.0, 5.0
            ),
        )

    def endpoint(self, value: str) -> EndpointSettings | None:
        name = value.removeprefix("ep:")
        return next((e for e in self.endpoints if e.name == name), None)

    # --- actions --------------------------------------------------------------------------------------

    def action_start(self) -> None:
        if self.running:
            self.set_status("a burst is already running (esc cancels it)")
            return
        try:
            form = self.read_form()
        except FormError as error:
            self.set_status(str(error), error=True)
            return
        if form.a.startswith("burst:") and form.b.startswith("burst:"):
            work = self._compare_past(form)
        else:
            work = self._run(form)
        self.clear_results()
        self.query_one("#phase", Static).update("starting")
        self.set_status("")
        self._worker = self.run_worker(work, group="burst", exclusive=True, exit_on_error=False)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_start()

    def action_cancel(self) -> None:
        if self.running and self._worker is not None:
            self._worker.cancel()
            self.set_status("cancelling: every request in flight is being closed")
        else:
            self.set_status("nothing to cancel (esc goes back)")

    def action_back_or_cancel(self) -> None:
        if self.running:
            self.action_cancel()
        else:
            self.app.pop_screen()

    def action_toggle_history(self) -> None:
        switcher = self.query_one("#switcher", ContentSwitcher)
        switcher.current = "history-table" if switcher.current == "results" else "results"
        if switcher.current == "history-table":
            self.query_one("#history-table", BurstHistoryTable).focus()
            self.set_status("history: enter shows a burst · a / b use it as A / B · h back")

    def action_export(self, kind: str) -> None:
        if self.result is None:
            self.set_status("nothing to export yet: run a burst or open one from the history", error=True)
            return
        path = Path.cwd() / export_name(kind, self.result.started_at)
        self.run_worker(self._export(self.result, kind, path), group="export", exit_on_error=False)

    def use_past_burst(self, path: str, side: str) -> None:
        select = self.query_one(f"#{side}-select", Select)
        value = f"burst:{path}#a"
        select.value = value
        self.set_status(f"{side.upper()} is now the past burst {Path(path).name} (arm A of it)")

    # --- workers --------------------------------------------------------------------------------------

    async def _load_history(self) -> None:
        self.post_message(BurstHistoryLoaded(list(await alist_bursts())))

    async def _export(self, result: BurstResult, kind: str, path: Path) -> None:
        try:
            written = await asyncio.to_thread(export, result, kind, path)
        except OSError as error:
            self.set_status(f"{kind} export failed: {error}", error=True)
            return
        self.set_status(f"{kind} written to {written}")

    async def _past(self, value: str) -> tuple[BurstResult, str]:
        path, _, label = value.removeprefix("burst:").rpartition("#")
        return await aload_burst(Path(path)), label or "a"

    async def _compare_past(self, form: BurstForm) -> None:
        try:
            before, before_arm = await self._past(form.a)
            after, after_arm = await self._past(form.b)
            combined = combine_bursts(before, after, before_arm=before_arm, after_arm=after_arm)
            summary = await asyncio.to_thread(burst_summary, combined, with_detail=False)
        except HistoryError as error:
            self.post_message(BurstFailed(str(error)))
            return
        self.post_message(BurstFinished(summary, combined, None))

    def _target(self, endpoint: EndpointSettings) -> ArmTarget:
        return ArmTarget(
            name=endpoint.name,
            base_url=endpoint.url,
            metrics_url=endpoint.resolved_metrics_url,
            model=endpoint.model,
            api_key_env=endpoint.api_key_env,
        )

    async def _run(self, form: BurstForm) -> None:
        past: tuple[BurstResult, str] | None = None
        past_side = None
        try:
            prompts_spec = form.prompts
            for side, value in (("a", form.a), ("b", form.b)):
                if value.startswith("burst:"):
                    past, past_side = await self._past(value), side
                    prompts_spec = past[0].settings.prompt_set  # before/after: the same prompts
            live = [v for v in (form.a, form.b) if v.startswith("ep:")]
            self._live_labels = {"a": "b"} if past_side == "a" else {}
            if not live:
                raise BurstConfigError("pick at least one endpoint")
            targets = []
            for value in live:
                endpoint = self.endpoint(value)
                if endpoint is None:
                    raise BurstConfigError(f"endpoint {value.removeprefix('ep:')} is not in the settings")
                targets.append(self._target(endpoint))
            prompt_set = await aload_prompt_set(prompts_spec)
            if past is not None and prompt_set.digest != past[0].settings.prompt_set_digest:
                raise HistoryError(f"the prompt set {prompts_spec} changed since that burst: not comparable")
            load = LoadShape(concurrency=form.concurrency, rate=form.rate)
            config = BurstConfig(
                a=targets[0],
                b=targets[1] if len(targets) > 1 else None,
                prompt_set=prompt_set,
                requests=form.requests,
                load=load,
                max_tokens=form.max_tokens,
                temperature=form.temperature,
            )
            client = self.app.http_client  # type: ignore[attr-defined]
            result = await run_burst(
                config, client, on_progress=lambda p: self.post_message(BurstProgressed(p))
            )
            saved = await asyncio.to_thread(save_burst, result)
            if past is not None:
                before, after = (past, (result, "a")) if past_side == "a" else ((result, "a"), past)
                result = combine_bursts(before[0], after[0], before_arm=before[1], after_arm=after[1])
            summary = await asyncio.to_thread(burst_summary, result, with_detail=False)
        except asyncio.CancelledError:
            self.post_message(BurstFailed("cancelled: every request in flight was closed", cancelled=True))
            raise
        except (BurstConfigError, PromptSetError, HistoryError, ValueError, OSError) as error:
            self.post_message(BurstFailed(str(error)))
            return
        self.post_message(BurstFinished(summary, result, str(saved)))
        await self._load_history()

    # --- messages -------------------------------------------------------------------------------------

    @on(BurstProgressed)
    def _progressed(self, message: BurstProgressed) -> None:
        progress = message.progress
        assert isinstance(progress, BurstProgress)
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=max(progress.total, 1), progress=progress.done)
        phases = {"warmup": "warming up", "scrape": "reading /metrics", "running": "running", "done": "done"}
        self.query_one("#phase", Static).update(
            f"{phases[progress.phase]} · {progress.done}/{progress.total} · {progress.elapsed_s:.1f} s"
        )
        lines = [arm_line(self._live_labels.get(arm.label, arm.label).upper(), arm) for arm in progress.arms]
        self.query_one("#live", Static).update(Content(safe_text("\n".join(lines))))

    @on(BurstFinished)
    def _finished(self, message: BurstFinished) -> None:
        self.summary = message.summary
        self.result = message.result if isinstance(message.result, BurstResult) else None
        table = self.query_one("#results-table", DataTable)
        table.clear()
        for figure, a_text, b_text in table_rows(message.summary):
            table.add_row(figure, a_text, b_text)
        comparison = message.summary.get("comparison")
        lines = []
        if isinstance(comparison, dict):
            lines.append(str(comparison.get("verdict")))
        equivalence = equivalence_line(message.summary)
        if equivalence:
            lines.append(equivalence)
        lines += note_lines(message.summary)
        self.query_one("#verdict", Static).update(
            Content(safe_text("\n".join(lines) or "one arm: no comparison"))
        )
        self.query_one("#phase", Static).update("done")
        self.query_one("#switcher", ContentSwitcher).current = "results"
        table.focus()  # so j / c / m export instead of typing into a field
        saved = " · kept in the history (h)" if message.saved_to else ""
        self.set_status(f"j / c / m: export JSON / CSV / Markdown{saved}")

    @on(BurstFailed)
    def _failed(self, message: BurstFailed) -> None:
        self.query_one("#phase", Static).update("cancelled" if message.cancelled else "failed")
        if self.summary is None:
            outcome = "was cancelled" if message.cancelled else "failed"
            self.query_one("#verdict", Static).update(f"no result: the burst {outcome}")
        self.set_status(message.error, error=not message.cancelled)

    @on(BurstHistoryLoaded)
    def _history_loaded(self, message: BurstHistoryLoaded) -> None:
        self.history = [entry for entry in message.entries if isinstance(entry, BurstEntry)]
        table = self.query_one("#history-table", BurstHistoryTable)
        table.clear()
        for entry in self.history:
            table.add_row(
                f"{entry.started_at:%Y-%m-%d %H:%M:%S}",
                Text(safe_line(entry.prompt_set)[:16]),  # Text: no markup, measured for the width
                Text(" vs ".join(safe_line(name)[:14] for name in entry.arm_names)),
                str(entry.requests),
                f"{entry.temperature:g}",
                key=str(entry.path),
            )
        for side in ("a", "b"):
            select = self.query_one(f"#{side}-select", Select)
            current = select.value
            options = self._endpoint_options() + self._past_options()
            if side == "b":
                options = [("(none: one arm)", NO_B), *options]
            select.set_options(options)
            if current is not Select.NULL and any(value == current for _, value in options):
                select.value = current

    @on(DataTable.RowSelected, "#history-table")
    def _history_row(self, event: DataTable.RowSelected) -> None:
        path = str(event.row_key.value)
        self.clear_results()
        self._worker = self.run_worker(
            self._show_past(path), group="burst", exclusive=True, exit_on_error=False
        )

    async def _show_past(self, path: str) -> None:
        try:
            result = await aload_burst(Path(path))
        except HistoryError as error:
            self.post_message(BurstFailed(str(error)))
            return
        summary = await asyncio.to_thread(burst_summary, result, with_detail=False)
        self.post_message(BurstFinished(summary, result, None))
