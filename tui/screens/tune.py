"""The tune screen (`T`): run a sweep (ctrl+r), watch the table and curves, cancel (the file restored),
apply the best (a); or calibrate the what-if advisor (c), its model handed to `on_calibrated`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

import httpx
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, Static

from tui.advice.calibrate import Calibration
from tui.advice.stepcost import StepCostModel
from tui.configs.errors import ConfigError
from tui.format import fmt_rate, fmt_times, fmt_times_interval, fmt_tokens_per_s
from tui.sanitize import safe_line, safe_text
from tui.settings import EndpointSettings
from tui.tune.plan import DEFAULT_VALUES, TunePlanError, parse_int_list
from tui.tune.result import (
    DASH,
    TuneResult,
    apply_decision,
    break_even_text,
    decision_lines,
    schedule_text,
    value_label,
)
from tui.tune.runner import TuneOptions, TuneProgress, TuneRun, client_or_own, progress_line
from tui.widgets.chart import spark
from tui.widgets.edit_mode import FieldInput
from tui.widgets.footer import Footer
from tui.widgets.messages import HealthChecked, RestartStarted

DEFAULT_LOADS = "1,8"
DEFAULT_REQUESTS = 16
SPARK_WIDTH = 12
KEYS_HINT = "ctrl+r: run   c: calibrate   escape: cancel (restores) / close   a: apply best"


# The sweep's errors name `spectop tune`'s flags; on this screen they name its own fields.
SCREEN_WORDS = (
    (
        "name the key to sweep with --key",
        "the tune screen sweeps the speculative key (spectop tune --key: another)",
    ),
    ("name one with --key", "sweep another key with spectop tune --key"),
    ("--values", "values"),
    ("--concurrency", "loads"),
    ("--apply-at", "apply at"),
    ("--key ", "key "),
)


def screen_words(text: str) -> str:
    for flag, field in SCREEN_WORDS:
        text = text.replace(flag, field)
    return text


def tune_rows(result: TuneResult) -> tuple[list[str], list[list[str]]]:
    per_load = [(f"c={concurrency} tok/s", "×base", "95% CI") for concurrency in result.concurrencies]
    header = ["value", *(text for texts in per_load for text in texts), "accept"]
    rows = []
    for outcome in result.outcomes:
        row = [value_label(result, outcome.value)]
        for concurrency in result.concurrencies:
            cell = result.cell(outcome.value, concurrency)
            if not outcome.started and outcome.failure:
                row += ["failed", DASH, DASH]
            elif cell is None or cell.decode_tokens_per_s is None:
                row += [DASH, DASH, DASH]
            else:
                speedup, interval = fmt_times(cell.speedup), fmt_times_interval(cell.speedup_ci95)
                late = "!" if cell.client_ok is False else ""  # the client fell behind
                row += [fmt_tokens_per_s(cell.decode_tokens_per_s) + late, speedup, interval]
        accepts = [c.acceptance_rate for c in outcome.cells if c.acceptance_rate is not None]
        row.append(fmt_rate(sum(accepts) / len(accepts)) if accepts else DASH)
        rows.append(row)
    return header, rows


def column_width(header: list[str], rows: list[list[str]], index: int) -> int:
    """The widest text of a column, its header's or a cell's (never cut)."""
    return max([len(header[index]), *(len(row[index]) for row in rows)])


def fitting_columns(
    header: list[str], rows: list[list[str]], concurrencies: list[int], width: int
) -> tuple[list[int], str]:
    """The columns that fit `width` whole (fewer CIs, then fewer concurrencies), and what was left out."""

    def cells(index: int) -> int:
        return column_width(header, rows, index) + 2

    every = list(range(len(header)))
    if sum(map(cells, every)) <= width:
        return every, ""
    without_ci = [index for index in every if header[index] != "95% CI"]
    left_out = "95% CI"
    while sum(map(cells, without_ci)) > width and len(without_ci) > 4:
        dropped = without_ci[-3]  # the last concurrency's tok/s (its ×base follows)
        without_ci = [index for index in without_ci if index not in (dropped, dropped + 1)]
    missing = [c for position, c in enumerate(concurrencies) if 1 + 3 * position not in without_ci]
    if missing:
        left_out += ", " + ", ".join(f"c={c}" for c in missing)
    return without_ci, left_out


class TuneScreen(Screen[None]):
    """A sweep of one endpoint's speculative knob; `on_finished` gets each finished (or applied) result."""

    DEFAULT_CSS = """
    TuneScreen { layout: vertical; }
    TuneScreen #form { height: 3; }
    TuneScreen #form Label { padding: 1 0 0 1; }
    TuneScreen #form Input { width: 1fr; }
    TuneScreen #tune-table { height: 1fr; min-height: 5; }
    TuneScreen #curves { height: auto; max-height: 5; }
    TuneScreen #progress, TuneScreen #verdict { height: auto; }
    TuneScreen #diff { height: auto; max-height: 8; display: none; }
    TuneScreen #diff.shown { display: block; }
    TuneScreen .error { color: $error; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "run"),
        Binding("c", "calibrate", "calibrate", tooltip="calibrate the what-if advisor (a short sweep)"),
        Binding("escape", "cancel_or_close", "cancel / close"),
        Binding("a", "apply_best", "apply best"),
        Binding("y", "confirm_apply", "yes, apply", show=False),
        Binding("n", "decline_apply", "no", show=False),
    ]

    def __init__(
        self,
        endpoint: EndpointSettings,
        *,
        on_finished: Callable[[TuneResult], None] | None = None,
        on_calibrated: Callable[[StepCostModel], None] | None = None,
        max_tokens: int = 64,
        health_timeout_s: float = 60.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.client = client  # the app's (None: the sweep opens its own)
        self.on_finished = on_finished
        self.on_calibrated = on_calibrated
        self.max_tokens = max_tokens
        self.health_timeout_s = health_timeout_s
        self.result: TuneResult | None = None
        self.tune: TuneRun | None = None
        self.cancel = asyncio.Event()
        self.running = False
        self.applying = False
        self.pending_apply: int | None = None  # the value whose diff is shown, waiting for y / n
        self._restarting = False  # the app was told a planned restart is under way (not "down")

    def compose(self) -> ComposeResult:
        title = f"tune {self.endpoint.name}: {self.endpoint.config_file or DASH}"
        yield Static(safe_line(title), id="title", markup=False)
        with Horizontal(id="form"):
            yield Label("values")
            yield FieldInput(",".join(str(v) for v in DEFAULT_VALUES), id="values")
            yield Label("loads")
            yield FieldInput(DEFAULT_LOADS, id="loads")
            yield Label("n")
            yield FieldInput(str(DEFAULT_REQUESTS), id="requests")
        yield Static(KEYS_HINT, id="progress", markup=False)
        yield DataTable(id="tune-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="curves", markup=False)
        yield Static("", id="verdict", markup=False)
        yield Static("", id="diff", markup=False)
        yield Footer()

    # --- helpers ----------------------------------------------------------------------------------------

    def _say(self, text: str, *, error: bool = False) -> None:
        widget = self.query_one("#progress", Static)
        widget.update(safe_line(screen_words(text)))
        widget.set_class(error, "error")

    def _options(self, apply: bool = False) -> TuneOptions:
        endpoint = self.endpoint
        if endpoint.config_file is None or not endpoint.restart_command:
            raise TunePlanError(
                f"{endpoint.name}: tuning needs config_file and restart_command in spectop.toml"
            )
        values = parse_int_list(self.query_one("#values", Input).value, "values", minimum=0)
        loads = parse_int_list(self.query_one("#loads", Input).value, "loads", minimum=1)
        text = self.query_one("#requests", Input).value
        try:
            requests = int(text)
        except ValueError:
            raise TunePlanError(f"n: {text!r} is not a whole number") from None
        if requests < 1:
            raise TunePlanError(f"n: {requests} is below 1")
        return TuneOptions(
            config_file=endpoint.config_file,
            endpoint=endpoint.url,
            restart_command=list(endpoint.restart_command),
            values=values,
            concurrencies=loads,
            requests=requests,
            max_tokens=self.max_tokens,
            metrics_url=endpoint.metrics_url,
            log_file=endpoint.log_file,
            model=endpoint.model,
            api_key_env=endpoint.api_key_env,
            health_timeout_s=self.health_timeout_s,
            apply=apply,
        )

    # --- live updates (called on the app's loop by the sweep) -----------------------------------------------

    def _planned_restart(self, under_way: bool, ok: bool = True, detail: str = "") -> None:
        """Tell the app a restart of ours is under way (the card says "restarting", no down alert) or over."""
        if under_way and not self._restarting:
            self.post_message(RestartStarted(f"{self.endpoint.url}/health"))
        elif not under_way and self._restarting:
            self.post_message(HealthChecked(True, "", 0.0) if ok else HealthChecked(False, detail, -1.0))
        self._restarting = under_way

    def _progress(self, progress: TuneProgress) -> None:
        if progress.phase in ("restart", "restore", "apply"):
            self._planned_restart(True)
        elif progress.phase == "burst":
            self._planned_restart(False)
        self._say(progress_line(progress))

    def _update(self, result: TuneResult) -> None:
        self.result = result
        table = self.query_one("#tune-table", DataTable)
        header, rows = tune_rows(result)
        shown, left_out = fitting_columns(header, rows, result.concurrencies, max(20, self.size.width - 2))
        table.clear(columns=True)
        for index in shown:
            table.add_column(header[index], width=column_width(header, rows, index))
        for row in rows:
            table.add_row(*(row[index] for index in shown))
        self.query_one("#curves", Static).update(self._curves(result))
        failures = [
            f"k={o.value} failed: {o.failure}" for o in result.outcomes if not o.started and o.failure
        ]
        lines = [line for d in result.decisions for line in decision_lines(result, d)]
        lines = lines or [f"best: {DASH}"]
        lines += [f"schedule: {schedule_text(result)}", break_even_text(result), *failures]
        starved = [cell for o in result.outcomes for cell in o.cells if cell.client_ok is False]
        if starved:
            why = starved[-1].client_reason
            lines.insert(0, f"!!! the client fell behind in {len(starved)} bursts (marked !): {why}")
        if left_out:
            lines.append(f"not shown at this width: {left_out} (a wider terminal, or the export)")
        self.query_one("#verdict", Static).update(safe_text("\n".join(lines)))

    def on_resize(self) -> None:
        if self.result is not None:
            self._update(self.result)

    def _curves(self, result: TuneResult) -> str:
        values = sorted(o.value for o in result.outcomes)
        lines = [f"{'':8}{'tok/s by k ' + ' '.join(map(str, values)):<{SPARK_WIDTH + 14}}acceptance by k"]
        for concurrency in result.concurrencies:
            cells = [result.cell(value, concurrency) for value in values]
            rate_line, _ = spark([cell.decode_tokens_per_s if cell else None for cell in cells], len(values))
            accepts = [cell.acceptance_rate if cell else None for cell in cells]
            accept_line, _ = spark(accepts, len(values), low=0.0, high=1.0)
            lines.append(f"c={concurrency:<6}{rate_line:<{SPARK_WIDTH + 14}}{accept_line}")
        return "\n".join(lines)

    # --- actions ----------------------------------------------------------------------------------------

    def _start(self) -> TuneOptions | None:
        """The options of a new sweep, the screen made ready for it (None: the form says why not)."""
        if self.running or self.applying:
            return None
        try:
            options = self._options()
        except (TunePlanError, ConfigError) as error:
            self._say(str(error), error=True)
            return None
        self.cancel = asyncio.Event()
        self.pending_apply = None
        self.query_one("#diff", Static).remove_class("shown")
        self.running = True
        self.query_one("#tune-table", DataTable).focus()  # a / y / n are keys of the screen, not text
        return options

    def action_run(self) -> None:
        options = self._start()
        if options is not None:
            self.tune = TuneRun(options, on_progress=self._progress, on_update=self._update)
            self.run_worker(self._sweep(self.tune), exclusive=True, group="tune")

    def action_calibrate(self) -> None:
        """A calibration of the advisor's step-cost model: the values and loads are chosen for it."""
        options = self._start()
        if options is not None:
            self._say("calibrating the step cost: reading the live load …")
            self.run_worker(self._calibrate(options), exclusive=True, group="tune")

    async def _calibrate(self, options: TuneOptions) -> None:
        from tui.advice.calibrate import plan_calibration

        try:
            planned, calibration, line = await plan_calibration(
                options, values_given=False, loads_given=False
            )
        except (ConfigError, OSError) as error:
            self.running = False
            self._say(f"cannot calibrate: {error}", error=True)
            return
        self.query_one("#values", Input).value = ",".join(map(str, planned.values))
        self.query_one("#loads", Input).value = ",".join(map(str, planned.concurrencies))
        self._say(line)
        self.tune = TuneRun(planned, on_progress=self._progress, on_update=self._update)
        await self._sweep(self.tune, calibration)

    async def _sweep(self, tune: TuneRun, calibration: Calibration | None = None) -> None:
        try:
            result = await tune.run(self.cancel, self.client)
        except (TunePlanError, ConfigError, OSError) as error:
            self._planned_restart(False, False, str(error))
            self._say(str(error), error=True)
            return
        finally:
            self.running = False
        self._planned_restart(False, result.final_restart_ok is not False, "the final restart failed")
        self._update(result)
        if result.final_restart_ok is False:
            command = " ".join(tune.options.restart_command)
            self._say(f"the server did not come back: run by hand: {command}", error=True)
        elif result.cancelled:
            self._say("cancelled: the config file was restored and the server restarted on it")
        elif calibration is not None:
            await self._keep_calibration(result, calibration)
        else:
            self._say("done: the config file was restored; a: apply the best value")
        if self.on_finished is not None:
            self.on_finished(result)

    async def _keep_calibration(self, result: TuneResult, calibration: Calibration) -> None:
        """The model fitted and kept (off the event loop: it writes stepcost.json), and given to the app."""
        from tui.advice.calibrate import fit_and_keep

        model, line = await asyncio.to_thread(fit_and_keep, result, calibration, None)
        self._say(f"calibrated (the file was restored): {line}", error=model is None)
        if model is not None and self.on_calibrated is not None:
            self.on_calibrated(model)

    def action_cancel_or_close(self) -> None:
        if self.pending_apply is not None:
            self.action_decline_apply()
        elif self.running:
            self.cancel.set()
            self._say("cancelling: restoring the config file and restarting the server …")
        elif not self.applying:
            self.dismiss()

    def action_apply_best(self) -> None:
        if self.running or self.applying or self.result is None or self.tune is None:
            return
        concurrency = self.result.concurrencies[0] if self.result.concurrencies else None
        best = self.result.best.get(concurrency) if concurrency is not None else None
        if best is None or concurrency is None:
            self._say("nothing to apply: no value was measured", error=True)
            return
        if best == self.result.original_value:
            self._say(f"nothing to apply: the file's own {self.result.name(best)} is the recommendation")
            return
        value, why = apply_decision(self.result, concurrency)
        changed = [line for line in self.tune.diff_for(best).splitlines() if line[:1] in "+-@"]
        diff = "\n".join(changed)  # only what changes: it must fit at 80x24
        self.pending_apply = best
        self.query_one("#diff", Static).update(safe_text(diff or "(the file already says so: no change)"))
        self.query_one("#diff", Static).add_class("shown")
        name = self.result.name(best)
        if value is None:  # within noise of the file's own value: the user decides
            self._say(
                f"{why.removesuffix(': the file is kept')}: apply {name} anyway? y: write, n: keep the file"
            )
            return
        self._say(f"apply {name} (best at concurrency {concurrency}: {why})? y: write and restart, n: no")

    def action_decline_apply(self) -> None:
        if self.pending_apply is None:
            return
        self.pending_apply = None
        self.query_one("#diff", Static).remove_class("shown")
        self._say("not applied: the file stays as it was")

    def action_confirm_apply(self) -> None:
        if self.pending_apply is None or self.tune is None or self.applying:
            return
        value, self.pending_apply = self.pending_apply, None
        self.applying = True
        self.run_worker(self._apply(self.tune, value), exclusive=True, group="tune")

    async def _apply(self, tune: TuneRun, value: int) -> None:
        options = tune.options
        self._say(f"writing k={value} and restarting …")
        try:
            async with client_or_own(self.client) as client:
                changer = options.changer(client)
                await asyncio.to_thread(changer.write, tune.text_for(value).encode("utf-8"))
                self._planned_restart(True)
                change = await changer.restart()
        except (OSError, ConfigError) as error:
            self._planned_restart(False, False, str(error))
            self._say(f"could not apply: {error}", error=True)
            return
        finally:
            self.applying = False
        self._planned_restart(False, change.ok, change.reason or "the server did not come back")
        if change.ok:
            self._say(f"applied k={value}: the server is back")
        else:
            command = " ".join(options.restart_command)
            self._say(
                f"applied k={value} but the server did not come back ({change.reason}); run: {command}",
                error=True,
            )
