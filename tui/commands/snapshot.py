"""`spectop snapshot URL ...`: scrape each endpoint at both ends of a window and print the figures (a table,
or JSON lines with why each figure is what it is). Exit 0 all up, 1 one was not, 2 bad arguments."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import textwrap
import time
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from tui.advice.advisor import Advice
from tui.advice.fleet import advice_lines, group_advices, instance_advice
from tui.advice.live import advice_for, read_models
from tui.auth import ApiKeyError, api_key_from_env, endpoint_headers
from tui.cli_options import add_fleet_arguments
from tui.commands import fail, say
from tui.fleet.poller import FleetPoller, FleetReading
from tui.format import FIGURES, FIGURES_FAILED, UNKNOWN, figure_text, fmt_setting, note_lines
from tui.sanitize import safe_line
from tui.settings import (
    EndpointSettings,
    SettingsError,
    endpoint_from_url,
    find_settings_file,
    parse_settings,
    prometheus_settings,
)
from tui.tables import Table, render_json
from tui.telemetry.figures import Figures, snapshot_record
from tui.telemetry.monitor import fetch_model_ids
from tui.telemetry.plausible_figures import dropped_words
from tui.telemetry.scraper import Scrape, scrape_with_slots
from tui.telemetry.window import ScrapeWindow
from tui.validators import check_env_var_name, friendly_message, scheme_was_added, without_credentials

DEFAULT_WINDOW_S = 5.0
DEFAULT_TIMEOUT_S = 5.0
WIDTH = 80


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="scrape endpoints over a short window and print the derived figures",
        description="Scrape each URL at the start and at the end of the window and print the derived "
        "figures. URL may be the server's base URL or its /metrics URL. Exit 0 when every endpoint "
        "was up, 1 when one was not, 2 on bad arguments.",
    )
    parser.add_argument("urls", metavar="URL", nargs="*", help="base URL or metrics URL")
    for flag, default, what in (
        ("--window", DEFAULT_WINDOW_S, "seconds between the two scrapes"),
        ("--timeout", DEFAULT_TIMEOUT_S, "timeout of each scrape"),
    ):
        help_text = f"{what} (default {fmt_setting(default)})"
        parser.add_argument(flag, type=_positive_seconds, default=default, metavar="SECONDS", help=help_text)
    parser.add_argument("--json", action="store_true", help="one JSON object per endpoint per line")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the API key, sent as a Bearer token (the key itself is "
        "never an argument)",
    )
    add_fleet_arguments(parser, group_by=False)  # fleet mode: `_run_fleet`
    parser.set_defaults(func=run)


# --- measuring ------------------------------------------------------------------------------------------


@dataclass
class _Result:
    url: str
    window_s: float
    up: bool = False
    error: str | None = None
    backend: str | None = None
    model: str | None = None
    figures: Figures | None = None
    advice: Advice | None = None  # the what-if advisor (tui/advice/advisor.py)

    def as_json(self) -> dict[str, Any]:
        record = snapshot_record(**{field: value for field, value in vars(self).items() if field != "advice"})
        record["advice"] = None if self.advice is None else self.advice.as_json()
        return record


def _model_of(scrape: Scrape) -> str | None:
    samples = scrape.samples or ()
    models = dict.fromkeys(sample.labels.get("model_name") for sample in samples if ":" in sample.name)
    return ", ".join(filter(None, models)) or None


async def _measure(
    endpoints: list[EndpointSettings], urls: list[str], window_s: float, timeout_s: float
) -> list[_Result]:
    results = [_Result(url, window_s) for url in urls]
    known: dict[str, str | None] = {}

    async def scrape_one(client: httpx.AsyncClient, endpoint: EndpointSettings) -> Scrape:
        # llama.cpp: also the tokens of requests still running, from /slots (needs --slots).
        url, headers = endpoint.resolved_metrics_url, endpoint_headers(endpoint)
        scrape, _ = await scrape_with_slots(
            client, endpoint.url, url, known_backend=known.get(url), timeout_s=timeout_s, headers=headers
        )
        if scrape.up:
            known[url] = scrape.backend
        return scrape

    async with httpx.AsyncClient(follow_redirects=True) as client:
        first = await asyncio.gather(*(scrape_one(client, endpoint) for endpoint in endpoints))
        alive = [i for i, scrape in enumerate(first) if scrape.up]
        for result, scrape in zip(results, first, strict=True):
            result.error = None if scrape.up else scrape.error
        if not alive:
            return results
        # Every endpoint's Δt is at least --window (and close to it).
        last_arrival = max(first[i].monotonic for i in alive)
        await asyncio.sleep(max(0.0, last_arrival + window_s - time.monotonic()))
        last = await asyncio.gather(*(scrape_one(client, endpoints[i]) for i in alive))
        for i, end in zip(alive, last, strict=True):
            result, start = results[i], first[i]
            if not end.up:
                result.error = end.error
                continue
            result.up = True
            result.backend = end.backend or start.backend
            window = ScrapeWindow(window_s=math.inf, max_scrapes=2, backend=result.backend)
            window.add(start)
            first_problem = window.inconsistent
            window.add(end)
            result.error = window.inconsistent or first_problem
            try:
                result.figures = window.figures()
            except Exception:  # a bug in a figure rule: said where the figures would be, and logged
                logging.getLogger(__name__).exception("%s: deriving the figures failed", result.url)
                problem = result.error
                result.error = FIGURES_FAILED if problem is None else f"{FIGURES_FAILED} · {problem}"
                result.figures = Figures()
            result.model = _model_of(end) or endpoints[i].model
            if result.model is None and result.backend == "llamacpp":
                ids = await fetch_model_ids(
                    client, endpoints[i].url, headers=endpoint_headers(endpoints[i]), timeout_s=timeout_s
                )
                if isinstance(ids, list) and ids:
                    result.model = ", ".join(ids[:3])
    return results


# --- printing -------------------------------------------------------------------------------------------


MAX_ERROR_LINES = 8
TABLE_FIGURES = (  # two to a line, left then right
    "generation_tokens_per_s", "acceptance_rate", "prompt_tokens_per_s", "mean_acceptance_length",
    "requests_per_s", "tpot_mean_s", "running", "e2e_mean_s", "waiting", "kv_cache_usage",
    "prefix_cache_hit_rate",
)  # fmt: skip


def _table(result: _Result) -> list[str]:
    parts = (
        result.url,
        "up" if result.up else "DOWN",
        result.backend or ("unknown backend" if result.up else None),
        f"{fmt_setting(result.window_s)} s window" if result.up else None,
        result.model,  # last: a long model path is what gets cut at 80 columns
    )
    header = safe_line(" · ".join(filter(None, parts)))
    lines = [header if len(header) <= WIDTH else header[: WIDTH - 1] + "…"]
    if not result.up or result.error:
        # A multi-line error (a server's error body, a traceback's last lines) as lines, never one line of ␊.
        first, *more = (result.error or "unknown").splitlines() or ["unknown"]
        lines.append(safe_line(f"  error: {first}")[:WIDTH])
        lines += [safe_line(f"         {line}")[:WIDTH] for line in more[:MAX_ERROR_LINES] if line.strip()]
    if not result.up:
        return lines
    f = result.figures
    assert f is not None
    ttft = " / ".join(figure_text(f, key) for key in ("ttft_mean_s", "ttft_p50_s", "ttft_p95_s"))
    cells = [(FIGURES[key].label, figure_text(f, key)) for key in TABLE_FIGURES]
    for left, right in zip(cells[0::2], [*cells[1::2], None], strict=True):
        text = f"  {left[0]:<17}{left[1]:>19}"
        if right is not None:
            text += f"   {right[0]:<17}{right[1]:>19}"
        lines.append(text.rstrip())
    lines.append(f"  {'TTFT mean/p50/p95':<17}  {ttft}"[:WIDTH])
    if f.per_position_acceptance is not None:
        word = FIGURES["per_position_acceptance"]
        positions = " ".join(word.format(value) for value in f.per_position_acceptance)
        line = f"  {word.label:<17} {positions}"
        lines.append(line if len(line) <= WIDTH else line[: WIDTH - 1] + "…")
    if result.advice is not None and result.advice.current_k is not None:
        lines += textwrap.wrap(result.advice.line(), width=WIDTH, initial_indent=f"  {'advice':<17} ",
                               subsequent_indent=" " * 20)  # fmt: skip
    for line in note_lines(f.notes):  # grouped by text: "acceptance, TPOT: from finished requests only"
        lines += textwrap.wrap(line, width=WIDTH, initial_indent="  * ", subsequent_indent="    ")
    return lines


def run(args: argparse.Namespace) -> int:
    if args.prometheus or args.match:
        return _run_fleet(args)
    if not args.urls:
        return fail("snapshot", "give at least one URL, or --prometheus URL")
    endpoints = []
    for url in args.urls:
        # An OpenAI client base URL (.../v1) names the same server.
        base = url.rstrip("/").removesuffix("/v1")
        try:
            endpoint = endpoint_from_url(base)
        except ValueError as error:  # a pydantic ValidationError is one
            why = friendly_message(dict(error.errors()[0])) if isinstance(error, ValidationError) else error
            return fail("snapshot", f"{without_credentials(url)}: {why}")
        if scheme_was_added(base, endpoint.url):
            say("snapshot", f"{url}: no scheme given; using {endpoint.url}")
        endpoints.append(endpoint)
    if args.api_key_env is not None:
        try:  # an ApiKeyError is a ValueError: a key that cannot be a header value
            name = check_env_var_name(args.api_key_env)
            if api_key_from_env(name) is None:
                return fail("snapshot", f"--api-key-env: {name} is not set (or empty)")
        except ValueError as error:
            return fail("snapshot", f"--api-key-env: {error}")
        endpoints = [endpoint.model_copy(update={"api_key_env": name}) for endpoint in endpoints]
    # Each endpoint as spectop read it (http:// added, a trailing / or /v1 dropped), also in the JSON.
    shown_urls = [endpoint.metrics_url or endpoint.url for endpoint in endpoints]
    results = asyncio.run(_measure(endpoints, shown_urls, args.window, args.timeout))
    kept = read_models()  # the what-if advice of each endpoint that was up, from the kept step-cost models
    for result, endpoint in zip(results, endpoints, strict=True):
        if result.up and result.figures is not None:
            result.advice = advice_for(result.figures, endpoint.url, result.model, kept)
    if args.json:
        for result in results:
            print(render_json(result.as_json(), indent=None))
    else:
        blocks = ["\n".join(_table(result)) for result in results]
        print("\n\n".join(blocks))
    return 0 if all(result.up and not result.error for result in results) else 1


def fleet_row(
    reading: FleetReading, advice: Advice | None = None, group_advice: Advice | None = None
) -> dict[str, Any]:
    """`--prometheus`: a direct snapshot's JSON line for an instance, with its group and their advice."""
    record = snapshot_record(
        url=reading.instance,
        backend=reading.backend,
        up=reading.up,
        model=reading.model,
        window_s=reading.window_s,
        figures=_shown(reading),
        error=reading.error,
    )
    record["advice"] = None if advice is None else advice.as_json()
    record["group"] = reading.group
    record["group_advice"] = None if group_advice is None else group_advice.as_json()
    record["impossible_figures"] = reading.impossible_figures  # dropped so far (each one's note says why)
    return record


def _shown(reading: FleetReading) -> Figures:
    """Like a direct snapshot: a down instance has no figures (not the window's last ones)."""
    return reading.figures if reading.up else Figures()


_COLUMNS = ("instance", "status", "backend", "tok/s", "accept", "len", "TTFT p95", "run/wait", "KV", "model")
_FIGURES = ("generation_tokens_per_s", "acceptance_rate", "mean_acceptance_length", "ttft_p95_s")
_LEFT = {0, 1, 2, 9}  # text columns; figures are right-aligned


def fleet_table(readings: list[FleetReading]) -> list[str]:
    rows = []
    for reading in readings:
        f = _shown(reading)
        rows.append(
            (  # labels are Prometheus's (the targets'): untrusted text
                safe_line(reading.instance),
                "up" if reading.up else "DOWN",
                safe_line(reading.backend or "?"),
                *(figure_text(f, key) for key in _FIGURES),
                f"{figure_text(f, 'running')}/{figure_text(f, 'waiting')}",
                figure_text(f, "kv_cache_usage"),
                safe_line(reading.model or UNKNOWN),
            )
        )
    lines = Table(_COLUMNS, rows).text(left=_LEFT, gap="  ")
    for reading in readings:
        if reading.error:
            lines.append(safe_line(f"{reading.instance}: {reading.error}"))
        if reading.impossible_figures:
            lines.append(safe_line(f"{reading.instance}: {dropped_words(reading.impossible_figures)}"))
    return lines


def _run_fleet(args: argparse.Namespace) -> int:
    """`--prometheus URL [--match SELECTOR]`: one row per instance, PromQL over the last S seconds."""

    async def refresh_once(poller: FleetPoller) -> Any:
        async with poller:
            return await poller.refresh()

    if args.urls:
        return fail("snapshot", "give URLs or --prometheus URL, not both")
    try:
        path = find_settings_file(getattr(args, "config", None))
        base = parse_settings(path.read_text(encoding="utf-8"), path).prometheus if path else None
        settings = prometheus_settings(base, args.prometheus, args.match)
    except (SettingsError, OSError) as error:
        return fail("snapshot", str(error))
    assert settings is not None
    settings = settings.model_copy(update={"timeout_s": args.timeout})
    try:
        poller = FleetPoller(settings, args.window)
    except ApiKeyError as error:
        return fail("snapshot", str(error))
    for name in poller.client.missing_secrets():
        say("snapshot", f"environment variable {name} is not set; asking without it")
    refresh = asyncio.run(refresh_once(poller))
    if refresh.error is not None:
        return fail("snapshot", safe_line(f"{settings.url}: {refresh.error}"), 1)
    if not refresh.readings:
        where = f" matching {{{settings.match}}}" if settings.match else ""
        return fail(
            "snapshot", f"{settings.url}: no vLLM, SGLang or llama.cpp instance{where} in Prometheus", 1
        )
    if not any(reading.figures.generation_tokens_per_s is not None for reading in refresh.readings):
        no_rate = f"no rate over the last {fmt_setting(args.window)} s"
        say("snapshot", f"{no_rate}; the window must span at least two of Prometheus' scrapes")
    kept = read_models()
    groups = group_advices(refresh.readings, kept)
    advices = {reading.instance: instance_advice(reading, kept) for reading in refresh.readings}
    if args.json:
        for reading in refresh.readings:
            line = fleet_row(reading, advices[reading.instance], groups.get(reading.group or ""))
            print(render_json(line, indent=None))
    else:
        print(f"{settings.url} · {len(refresh.readings)} instances · {fmt_setting(args.window)} s window")
        print("\n".join(fleet_table(refresh.readings)))
        print("\n".join(advice_lines(groups, advices)))
    return 0 if all(reading.up for reading in refresh.readings) else 1
