"""The A/B burst screen: pick A and B (endpoints or arms of past bursts), run a burst, read the verdict,
keep and export it; the form becomes a `tui.bench.session.BurstRequest`, the work is `tui.bench`'s."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

import httpx
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.events import DescendantFocus, Resize
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, Input, Label, ProgressBar, Select, Static
from textual.worker import Worker

from tui.bench.burst_store import HISTORY_COLUMNS, BurstEntry, alist_bursts, export_path, history_rows
from tui.bench.engine import BurstConfigError, BurstProgress
from tui.bench.prompts import DEFAULT_PROMPT_SET, builtin_set_names
from tui.bench.report.models import BurstSummary
from tui.bench.report.text import client_check_lines, equivalence_line, explain_block, note_lines, table_rows
from tui.bench.session import (
    BurstCancelled,
    BurstOutcome,
    BurstRequest,
    BurstRequestError,
    BurstSession,
    EndpointArm,
    PastArm,
    open_burst,
)
from tui.format import fmt_latency, fmt_tokens_per_s
from tui.gpu.burst import watch_for
from tui.sanitize import safe_line, safe_text
from tui.settings import EndpointSettings
from tui.widgets.edit_mode import FieldInput, OnOff
from tui.widgets.footer import Footer
from tui.widgets.messages import (
    BurstFailed,
    BurstFinished,
    BurstHistoryLoaded,
    BurstProgressed,
    ReportsWorkerFailures,
)

MAX_USER_PROMPT_FILES = 20


class OneArm(Enum):
    NONE = "none"  # B's value for a plain one-arm benchmark


NO_B = OneArm.NONE
ArmChoice = EndpointArm | PastArm
# The form's names for the request's fields, in the errors of BurstRequest.parse.
FIELD_LABELS = {
    "a": "A", "b": "B", "prompts": "set", "requests": "n (requests)", "concurrency": "conc", "rate": "rate",
    "max_tokens": "tok (max_tokens)", "temperature": "T (temperature)", "rounds": "rounds",
    "warmup": "warm-up", "client_settings": "client settings", "a_extra": "A fields", "b_extra": "B fields",
    "slo": "SLO", "schedule": "schedule", "api": "api", "prime_cache": "prime", "flush_cache": "flush",
}  # fmt: skip
# (label, input id, request field, default, tooltip); an empty field is the request's default.
FORM_FIELDS = (
    ("n", "requests", "requests", "32", "measured requests per arm"),
    ("conc", "concurrency", "concurrency", "1", "requests in flight per arm"),
    ("rate", "rate", "rate", "", "requests/s per arm (empty: closed loop at the concurrency)"),
    ("tok", "max-tokens", "max_tokens", "256", "max_tokens (empty: client settings, else 512)"),
    ("T", "temperature", "temperature", "0", "temperature (0: greedy, outputs compared)"),
)
MORE_FIELDS = (
    ("rounds", "rounds", "rounds", "3", "rounds; the arm that goes first alternates"),
    ("warm-up", "warmup", "warmup", "1", "warm-up requests per arm, left out of the figures"),
)
# Per-arm request fields and SLOs, checked by BurstRequest; placeholders say "e.g." (NO_COLOR has no italics).
ARM_FIELDS = (
    ("A+", "a-extra", "a_extra", 'e.g. {"enable_speculative": false}', "JSON request fields for A only"),
    ("B+", "b-extra", "b_extra", 'e.g. {"enable_speculative": true}', "JSON request fields for B only"),
)
# The SLOs (checked by BurstRequest) and the client settings file (read as a path).
LAST_FIELDS = (
    ("SLO", "slo", "slo", "e.g. ttft=500ms, tpot=40ms", "SLOs: share of requests meeting all, and goodput"),
    ("client settings", "client-settings", "client_settings", "optional, e.g. settings.json",
     "client settings.json: api_key_env, model, timeout, retries, extra_body"),
)  # fmt: skip
SCHEDULES = (("alternate", "alternate"), ("parallel", "parallel"))
BEFORE_A_BURST = "no burst yet: ctrl+r runs one; figures and verdict show here · h: past bursts"
BEFORE_EXPLAINING = "run a burst: per-category acceptance, outliers and /metrics show here"
APIS = (("chat", "chat"), ("completions", "completions"), ("sglang", "sglang"))
# (label, toggle id, request field, tooltip): `spectop bench --prime-cache / --flush-cache`.
TOGGLES = (
    ("prime", "prime-cache", "prime_cache", "each prompt once per arm first (left out): equal prefix caches"),
    ("flush", "flush-cache", "flush_cache", "POST /flush_cache (SGLang) or /reset_prefix_cache (vLLM) first"),
)  # fmt: skip
API_TOOLTIP = "chat / completions (OpenAI API), or sglang: SGLang's native /generate"
SCHEDULE_TOOLTIP = "alternate: A's round, then B's (never overlapping); parallel: separate machines"


def _choice(options: Any, value: Any, id: str, **kwargs: Any) -> Select[Any]:
    return Select(options, value=value, allow_blank=False, id=id, compact=True, **kwargs)


def _inputs(
    fields: Iterable[tuple[str, str, str, str, str]], *, gap: bool = False, example: bool = False
) -> ComposeResult:
    """Each field's label and input; `gap`: before the first label too; `example`: the text is a
    placeholder (an example), not a value."""
    for index, (label, field_id, _, text, tooltip) in enumerate(fields):
        yield Label(label, classes="gap" if gap or index else "")
        yield FieldInput(
            **{"placeholder" if example else "value": text}, id=field_id, compact=True, tooltip=tooltip
        )


def arm_line(label: str, arm: Any) -> str:
    ttft, rate = fmt_latency(arm.ttft_p50_s), fmt_tokens_per_s(arm.decode_tokens_per_s_pooled)
    counts = f"{arm.done:>4}/{arm.total:<4} err {arm.errors:<3} retry {arm.retries:<3}"
    return f"{label} {safe_line(arm.name)[:10]:10} {counts} TTFT p50 {ttft:>7} decode {rate:>7} tok/s"


class BurstHistoryTable(DataTable[str | Text]):
    BINDINGS: ClassVar[list[BindingType]] = [
        # Out of the footer (the status line says them), so ? stays in sight at 80 columns.
        Binding("a", "use('a')", "As A", show=False, tooltip="use the burst as A"),
        Binding("b", "use('b')", "As B", show=False, tooltip="use the burst as B"),
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
    BenchScreen .form-row #client-settings { width: 1fr; }
    BenchScreen .form-row #a-extra, BenchScreen .form-row #b-extra { width: 1fr; max-width: 40; }
    BenchScreen .form-row #slo { width: 22; }
    BenchScreen #schedule-select { width: 13; margin-left: 1; }
    BenchScreen #api-select { width: 15; }
    BenchScreen .form-row OnOff { margin-left: 2; }
    BenchScreen #explain { height: 1fr; }
    BenchScreen #progress-row { height: 1; }
    BenchScreen #progress-row ProgressBar { width: 44; }
    BenchScreen #phase { width: 1fr; padding: 0 1; }
    BenchScreen #live { height: 2; }
    BenchScreen #status { height: 1; color: $text-muted; }
    BenchScreen #status.error { color: $error; }
    BenchScreen #switcher { height: 1fr; }
    BenchScreen #results-table, BenchScreen #history-table { height: 1fr; }
    BenchScreen #verdict { height: auto; max-height: 6; text-style: bold; }
    BenchScreen #verdict.hint { text-style: none; color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # Tooltips: the help screen's text (26 columns at 80).
        Binding("escape", "back_or_cancel", "Back", tooltip="cancel the burst, or back"),
        Binding("ctrl+c", "cancel", "Cancel", priority=True, show=False, tooltip="cancel the burst"),
        Binding("ctrl+r", "start", "Start", tooltip="start the burst (or enter)"),
        Binding("h", "toggle_history", "History", tooltip="past bursts: show, A / B"),
        Binding("e", "toggle_explain", "Explain", tooltip="explain: per category"),
        # One footer item (and help row) for the three exports: the footer is full at 80 columns.
        Binding("j", "export('json')", "Export", key_display="j/c/m", tooltip="export JSON, CSV, Markdown"),
        Binding("c", "export('csv')", show=False),
        Binding("m", "export('markdown')", show=False),
        # The app's keys, out of the footer (80 columns); its b would open a second burst screen.
        Binding("p", "app.toggle_pause", show=False),
        Binding("a", "app.alerts", show=False),
        Binding("b", "already_here", show=False),
    ]

    def __init__(
        self,
        endpoints: list[EndpointSettings],
        client: httpx.AsyncClient,
        *,
        default_a: str | None = None,
        default_b: str | None = None,
    ) -> None:
        """`client`: the app's one httpx client (bursts, GPU pages)."""
        super().__init__()
        self.endpoints = list(endpoints)
        self.client = client
        self.default_a = default_a
        self.default_b = default_b
        self.history: list[BurstEntry] = []
        self.outcome: BurstOutcome | None = None
        self.summary: BurstSummary | None = None
        self._worker: Worker[None] | None = None
        self._cancel = asyncio.Event()

    # --- layout ---------------------------------------------------------------------------------------

    def _endpoint_options(self) -> list[tuple[str, ArmChoice]]:
        return [
            (safe_line(f"{e.name}  {e.url.split('://', 1)[-1]}"), EndpointArm.from_settings(e))
            for e in self.endpoints
        ]

    def _default(self, wanted: str | None, index: int) -> EndpointArm | None:
        chosen = next((e for e in self.endpoints if e.name == wanted), None)
        if chosen is None and len(self.endpoints) > index:
            chosen = self.endpoints[index]
        return EndpointArm.from_settings(chosen) if chosen else None

    def compose(self) -> ComposeResult:
        title = "A/B burst · ctrl+r starts · enter/i: edit a field · esc: drop it, cancel, back"
        yield Static(title, id="bench-title")
        a_default = self._default(self.default_a, 0)
        b_default: EndpointArm | OneArm | None
        if self.default_b:
            b_default = self._default(self.default_b, 1)
        else:  # B: the first endpoint that is not A (never the same server twice by default)
            others = (e for e in self.endpoints if a_default is None or e.name != a_default.name)
            b_default = next((EndpointArm.from_settings(e) for e in others), NO_B)
        with Horizontal(classes="form-row"):
            yield Label("A")
            a_options = self._endpoint_options()
            yield Select(
                a_options, prompt="pick A", value=a_default or Select.NULL, id="a-select", compact=True
            )
            yield Label("B", classes="gap")
            yield _choice(
                [("(none: one arm)", NO_B), *a_options], b_default or NO_B, "b-select", prompt="pick B"
            )
        files = sorted(Path.cwd().glob("*.jsonl"))[:MAX_USER_PROMPT_FILES]
        prompt_files = [(safe_line(path.name), str(path)) for path in files]
        with Horizontal(classes="form-row"):
            yield Label("set")
            sets = [(name, name) for name in builtin_set_names()] + prompt_files
            yield _choice(sets, DEFAULT_PROMPT_SET, "prompts-select")
            yield from _inputs(FORM_FIELDS, gap=True)
        with Horizontal(classes="form-row"):
            yield from _inputs(MORE_FIELDS)
            yield Label("api", classes="gap")
            yield _choice(APIS, "chat", "api-select", tooltip=API_TOOLTIP)
            for label, toggle_id, _, tooltip in TOGGLES:
                toggle = OnOff(label, id=toggle_id)
                toggle.tooltip = tooltip
                yield toggle
        with Horizontal(classes="form-row"):
            yield from _inputs(ARM_FIELDS, example=True)
            yield _choice(SCHEDULES, "alternate", "schedule-select", tooltip=SCHEDULE_TOOLTIP)
        with Horizontal(classes="form-row"):
            yield from _inputs(LAST_FIELDS, example=True)
        with Horizontal(id="progress-row"):
            yield ProgressBar(total=1, show_eta=False, id="progress")
            yield Static("ready", id="phase")
        yield Static("", id="live")
        yield Static("", id="status")
        with ContentSwitcher(initial="results", id="switcher"):
            with Vertical(id="results"):
                yield DataTable(id="results-table", cursor_type="row", zebra_stripes=True)
                yield Static(BEFORE_A_BURST, id="verdict", classes="hint")
            yield BurstHistoryTable(id="history-table", cursor_type="row")
            with VerticalScroll(id="explain"):
                yield Static(BEFORE_EXPLAINING, id="explain-text")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#results-table", DataTable).add_columns("figure", "A", "B")
        self.query_one("#history-table", BurstHistoryTable).add_columns(*HISTORY_COLUMNS)
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
        self.outcome = self.summary = None
        self.query_one("#results-table", DataTable).clear()
        self.query_one("#verdict", Static).remove_class("hint")
        for shown in ("#verdict", "#explain-text", "#live"):
            self.query_one(shown, Static).update("")

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_running

    def read_form(self) -> BurstRequest:
        """The form as a BurstRequest (BurstRequestError names the field that cannot be used)."""
        a = self.query_one("#a-select", Select).value
        if not isinstance(a, EndpointArm | PastArm):
            raise BurstRequestError("a", "pick an endpoint or a past burst")
        b = self.query_one("#b-select", Select).value
        values: dict[str, Any] = {
            "a": a,
            "b": b if isinstance(b, EndpointArm | PastArm) else None,
            "prompts": self.query_one("#prompts-select", Select).value,
        }
        for _, field_id, name, _, _ in (*FORM_FIELDS, *MORE_FIELDS, *ARM_FIELDS, *LAST_FIELDS[:1]):
            text = self.query_one(f"#{field_id}", Input).value.strip()
            if text:
                values[name] = text  # converted (and checked) by BurstRequest
        settings = self.query_one("#client-settings", Input).value.strip()
        values["client_settings"] = Path(settings).expanduser() if settings else None
        values["schedule"] = self.query_one("#schedule-select", Select).value
        values["api"] = self.query_one("#api-select", Select).value
        for _, toggle_id, name, _ in TOGGLES:
            values[name] = self.query_one(f"#{toggle_id}", OnOff).value
        return BurstRequest.parse(values)

    # --- actions --------------------------------------------------------------------------------------

    def action_start(self) -> None:
        if self.running:
            self.set_status("a burst is already running (esc cancels it)")
            return
        try:
            request = self.read_form()
        except BurstRequestError as error:
            self.set_status(error.described(FIELD_LABELS), error=True)
            return
        self.clear_results()
        self.query_one("#phase", Static).update("starting")
        self.set_status(" · ".join(request.notes))
        self._cancel = asyncio.Event()
        client = self.client
        arms = [arm.base_url for arm in (request.a, request.b) if isinstance(arm, EndpointArm)]
        gpu = watch_for(arms, self.endpoints, client)  # the endpoints' gpu_metrics_url: energy per arm
        work = self._run(BurstSession(request, client, gpu), self._cancel)
        self._worker = self.run_worker(work, group="burst", exclusive=True, exit_on_error=False)

    @on(DescendantFocus)
    def _focused(self, event: DescendantFocus) -> None:
        if isinstance(event.widget, OnOff):  # its key is not in the footer (full at 80 columns)
            self.set_status(f"space on/off · {event.widget.tooltip}")

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_start()

    def action_cancel(self) -> None:
        if self.running:
            self._cancel.set()
            self.set_status("cancelling: every request in flight is being closed")
        else:
            self.set_status("nothing to cancel (esc goes back)")

    def action_back_or_cancel(self) -> None:
        if self.running:
            self.action_cancel()
        else:
            self.app.pop_screen()

    def action_already_here(self) -> None:
        self.set_status("this is the burst screen (esc goes back)")

    def action_toggle_history(self) -> None:
        switcher = self.query_one("#switcher", ContentSwitcher)
        switcher.current = "history-table" if switcher.current == "results" else "results"
        if switcher.current == "history-table":
            self.query_one("#history-table", BurstHistoryTable).focus()
            old = any(e.verdict is None and len(e.arm_names) > 1 for e in self.history)
            hint = " · –: no verdict kept" if old else ""  # kept by an older spectop: enter computes it
            self.set_status(f"history: enter opens · a / b use it as A / B · h back{hint}")

    def action_toggle_explain(self) -> None:
        switcher = self.query_one("#switcher", ContentSwitcher)
        switcher.current = "explain" if switcher.current != "explain" else "results"
        if switcher.current == "explain":
            self.query_one("#explain", VerticalScroll).focus()
            self.set_status("explain: categories, outliers, server vs client, /metrics · e back")

    def action_export(self, kind: str) -> None:
        if self.outcome is None:
            self.set_status("nothing to export yet: run a burst or open one from the history", error=True)
            return
        path = export_path(kind, self.outcome.result.started_at)
        self.run_worker(self._export(self.outcome, kind, path), group="export", exit_on_error=False)

    def use_past_burst(self, path: str, side: str) -> None:
        self.query_one(f"#{side}-select", Select).value = PastArm(path=Path(path), arm="a")
        self.set_status(f"{side.upper()} is now the past burst {Path(path).name} (arm A of it)")

    # --- workers --------------------------------------------------------------------------------------

    async def _load_history(self) -> None:
        self.post_message(BurstHistoryLoaded(list(await alist_bursts())))

    async def _export(self, outcome: BurstOutcome, kind: str, path: Path) -> None:
        try:
            written = await asyncio.to_thread(outcome.export, kind, path)
        except OSError as error:
            self.set_status(f"{kind} export failed: {error}", error=True)
            return
        here = Path.cwd()  # the folder in the message: ./spectop-exports/… (README: a .gitignore line)
        shown = f"./{written.relative_to(here)}" if written.is_relative_to(here) else str(written)
        self.set_status(f"{kind} written to {shown}")

    def _progress(self, progress: BurstProgress) -> None:
        self.post_message(BurstProgressed(progress))

    async def _run(self, session: BurstSession, cancel: asyncio.Event) -> None:
        try:
            outcome = await session.run(self._progress, cancel)
            saved = await asyncio.to_thread(session.save)
        except (asyncio.CancelledError, BurstCancelled):
            self.post_message(BurstFailed("cancelled: every request in flight was closed", cancelled=True))
            if not cancel.is_set():
                raise  # the worker itself was cancelled (the screen is closing)
            return
        except BurstRequestError as error:
            self.post_message(BurstFailed(error.described(FIELD_LABELS)))
            return
        except (BurstConfigError, ValueError, OSError) as error:
            self.post_message(BurstFailed(str(error)))
            return
        self.post_message(BurstFinished(outcome.summary, outcome, str(saved) if saved else None))
        if saved:  # in a worker of its own: the burst is over, a new one may start at once
            self.run_worker(self._load_history(), group="history", exit_on_error=False)

    # --- messages -------------------------------------------------------------------------------------

    @on(BurstProgressed)
    def _progressed(self, message: BurstProgressed) -> None:
        progress = message.progress
        assert isinstance(progress, BurstProgress)
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=max(progress.total, 1), progress=progress.done)
        phases = {"warmup": "warming up", "scrape": "reading /metrics", "running": "running", "done": "done"}
        self.query_one("#phase", Static).update(
            f"{phases[progress.phase]} · {progress.done}/{progress.total} · {fmt_latency(progress.elapsed_s)}"
        )
        lines = [arm_line(arm.label.upper(), arm) for arm in progress.arms]
        self.query_one("#live", Static).update(Content(safe_text("\n".join(lines))))

    @on(BurstFinished)
    def _finished(self, message: BurstFinished) -> None:
        if not isinstance(message.summary, BurstSummary) or not isinstance(message.result, BurstOutcome):
            return
        self.summary = summary = message.summary
        self.outcome = message.result
        table = self.query_one("#results-table", DataTable)
        table.clear()
        for figure, a_text, b_text in table_rows(summary):
            table.add_row(figure, a_text, b_text)
        checks = [
            line
            for label, arm in summary.arms
            for line in client_check_lines(label.upper(), arm.client_check)
        ]
        late = [line for line in checks if line.startswith("!!!")]  # first: the client was the bottleneck
        verdicts = (summary.comparison.verdict if summary.comparison else "", equivalence_line(summary))
        lines = late + [line for line in verdicts if line]
        lines += [line for line in note_lines(summary) if line not in lines]
        verdict = self.query_one("#verdict", Static)
        verdict.update(Content(safe_text("\n".join(lines) or "one arm: no comparison")))
        verdict.remove_class("hint")
        explained = explain_block(summary)
        self.query_one("#explain-text", Static).update(
            Content(safe_text("\n".join(explained) or "the servers sent no per-request figures"))
        )
        nothing_sent = message.result.ran is None  # past bursts compared, or one opened from the history
        self.query_one("#phase", Static).update("done: past bursts, nothing sent" if nothing_sent else "done")
        self.query_one("#switcher", ContentSwitcher).current = "results"
        table.focus()  # so j / c / m export instead of typing into a field
        saved = " · kept in the history (h)" if message.saved_to else ""
        notes = "".join(f" · {note}" for note in message.result.notes)
        if late:
            self.set_status("THE CLIENT FELL BEHIND: the figures measure spectop, not the server", error=True)
            return
        self.set_status(f"j / c / m: export JSON / CSV / Markdown · e: explain{saved}{notes}")

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
        self._fill_history()
        arms: list[tuple[str, ArmChoice | OneArm]] = [*self._endpoint_options()]
        for entry in self.history[:30]:
            stamp = f"◷ {entry.started_at:%m-%d %H:%M} {entry.prompt_set}"
            for label, name in zip("ab", entry.arm_names, strict=False):
                text = safe_line(f"{stamp} {label.upper()}:{name}")
                arms.append((text, PastArm(path=entry.path, arm="a" if label == "a" else "b")))
        for side in ("a", "b"):
            select = self.query_one(f"#{side}-select", Select)
            current = select.value
            options = [("(none: one arm)", NO_B), *arms] if side == "b" else arms
            select.set_options(options)
            if current is not Select.NULL and any(value == current for _, value in options):
                select.value = current

    def _fill_history(self) -> None:
        """The history's rows cut to the screen's width (the table's padding and scroll bar left out)."""
        table = self.query_one("#history-table", BurstHistoryTable)
        cursor = table.cursor_row
        table.clear()
        room = self.query_one("#switcher", ContentSwitcher).size.height - 1  # rows under the header
        scrollbar = table.styles.scrollbar_size_vertical if len(self.history) > room else 0
        rows = history_rows(self.history, self.size.width - scrollbar, gap=2 * table.cell_padding)
        for entry, cells in zip(self.history, rows, strict=True):
            # Text: no markup, measured for the width.
            table.add_row(*(Text(cell) for cell in cells), key=str(entry.path))
        if self.history:
            table.move_cursor(row=min(cursor, len(self.history) - 1))

    def on_resize(self, event: Resize) -> None:
        if self.history:
            self._fill_history()

    @on(DataTable.RowSelected, "#history-table")
    def _history_row(self, event: DataTable.RowSelected) -> None:
        path = str(event.row_key.value)
        self.clear_results()
        self._worker = self.run_worker(
            self._show_past(path), group="burst", exclusive=True, exit_on_error=False
        )

    async def _show_past(self, path: str) -> None:
        try:
            outcome = await asyncio.to_thread(open_burst, Path(path))
        except BurstRequestError as error:
            self.post_message(BurstFailed(error.message))
            return
        self.post_message(BurstFinished(outcome.summary, outcome, None))
