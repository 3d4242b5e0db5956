"""`spectop snapshot` end to end against sample pages and a misbehaving llama-server stand-in."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from llamacpp_fake_server import BUSY, FakeLlamaServer
from metrics_test_server import (
    Reply,
    ReplyServer,
    assert_rate,
    closed_port,
    sample_body,
    sample_scrapes,
    spectop,  # also imported from here by tests outside this folder
    vllm_page,
)

from tui.telemetry.figures import FIGURE_NAMES
from tui.telemetry.window import RATE_FIGURES, figures_between

LLAMACPP_MODELS = b'{"object":"list","data":[{"id":"models/target.gguf"}]}'


def sample_server(backend: str, routes: dict[str, Reply] | None = None) -> ReplyServer:
    pages = [Reply(sample_body(backend, "metrics_t0.txt")), Reply(sample_body(backend, "metrics_t1.txt"))]
    return ReplyServer(pages, routes)


@pytest.mark.parametrize(
    ("backend", "path", "window_s", "model", "increases"),
    [
        ("vllm", "", 1.0, "mimo-7b", (5949, 8607, 5)),
        ("sglang", "/metrics", 1.0, "deepseek-ai/DeepSeek-V3-0324", (23327, None, 8)),
        ("llamacpp", "", 0.5, "models/target.gguf", (704, None, 11)),
    ],
)
async def test_each_sample_through_snapshot_gives_the_figures_of_its_pages(
    backend: str, path: str, window_s: float, model: str, increases: tuple[int, int | None, int]
) -> None:
    """The JSON record holds what the window derives from the two sample pages (test_metrics_figures
    checks those against the READMEs); the rates over the real time between the two scrapes."""
    routes = {"/slots": Reply(b"", status=501), "/v1/models": Reply(LLAMACPP_MODELS)}
    async with sample_server(backend, routes) as server:
        code, out, err = await spectop("snapshot", server.url + path, "--window", str(window_s), "--json")
    assert code == 0, err
    (line,) = out.splitlines()
    record = json.loads(line)
    assert list(record)[:5] == ["url", "backend", "up", "model", "window_s"]
    assert (record["url"], record["backend"]) == (server.url + path, backend)
    assert (record["up"], record["model"]) == (True, model)
    assert record["window_s"] == window_s and record["error"] is None
    for name, increase in zip(RATE_FIGURES, increases, strict=True):
        if increase is not None:
            assert_rate(record[name], increase, window_s)
    expected = figures_between(*sample_scrapes(backend, 10.0)).model_dump()
    for name in set(FIGURE_NAMES) - set(RATE_FIGURES):
        assert record[name] == (None if expected[name] is None else pytest.approx(expected[name])), name
    metrics = [request.path for request in server.requests if request.path.endswith("metrics")]
    assert metrics == [f"{path or '/metrics'}"] * 2


async def test_openai_style_base_url_and_the_api_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPECTOP_SNAPSHOT_KEY", "s3cret-key")
    async with sample_server("vllm") as server:
        url = f"{server.url}/v1/"
        code, out, err = await spectop(
            "snapshot", url, "--window", "0.2", "--json", "--api-key-env", "SPECTOP_SNAPSHOT_KEY"
        )
    assert code == 0, err
    assert json.loads(out)["backend"] == "vllm"
    assert [request.path for request in server.requests] == ["/metrics", "/metrics"]
    assert [request.headers.get("authorization") for request in server.requests] == ["Bearer s3cret-key"] * 2
    assert "s3cret-key" not in out + err


async def test_one_endpoint_down_exits_1_and_table_fits_80_columns() -> None:
    down = f"http://127.0.0.1:{closed_port()}"
    async with sample_server("vllm") as server:
        code, out, _ = await spectop("snapshot", server.url, down, "--window", "0.3")
    assert code == 1
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "· up · vllm ·" in out and "· mimo-7b" in out
    assert "acceptance" in out and "70%" in out and "2.40" in out
    assert f"{down} · DOWN" in out and "connection refused" in out


async def test_all_down_json_and_exit_1_and_a_server_answering_garbage_is_down() -> None:
    down = f"http://127.0.0.1:{closed_port()}/metrics"
    async with ReplyServer([Reply(b"<html>hello</html>\n")]) as server:
        code, out, _ = await spectop("snapshot", down, server.url, "--json", "--window", "30")
    assert code == 1
    record, garbage = [json.loads(line) for line in out.splitlines()]
    assert (record["url"], record["up"], record["backend"]) == (down, False, None)
    assert record["error"] == "connection refused"
    assert all(record[name] is None for name in FIGURE_NAMES)
    assert garbage["error"].startswith("not Prometheus text: line 1")


@pytest.mark.parametrize(
    "args",
    [
        ["snapshot"],
        ["snapshot", "http://127.0.0.1:1", "--window", "-1"],
        ["snapshot", "http://127.0.0.1:1", "--window", "soon"],
        ["snapshot", "ftp://example/metrics"],
        ["snapshot", "http://127.0.0.1:1", "--api-key-env", "SPECTOP_UNSET_KEY_NAME"],  # unset
        ["snapshot", "http://127.0.0.1:1", "--api-key-env", "sk-12 34"],  # not a name
    ],
)
async def test_bad_arguments_exit_2(args: list[str]) -> None:
    code, _, err = await spectop(*args)
    assert code == 2 and err.strip()
    assert "--api-key-env" not in args or "--api-key-env" in err


def test_table_header_keeps_the_status_when_the_model_path_is_long_and_labels_say_what_they_are() -> None:
    from tui.commands.snapshot import _Result, _table
    from tui.telemetry.figures import Figures

    result = _Result("http://127.0.0.1:8091", 5.0)
    result.up, result.backend, result.figures = True, "llamacpp", Figures()
    result.model = "/models/" + "very-long-directory-name/" * 4 + "target.gguf"
    header = _table(result)[0]
    assert len(header) <= 80
    assert header.startswith("http://127.0.0.1:8091 · up · llamacpp · 5 s window · /models/")
    assert header.endswith("…")
    # labels: prompt includes the cached tokens, a quantile that is only a bound says so
    result.backend = "sglang"
    result.figures = Figures(
        ttft_mean_s=0.0065,
        ttft_p50_s=0.05,
        quantile_bounds={"ttft_p50_s": (0.0, 0.1)},
        notes={"ttft_p50_s": "inside the first bucket (≤ 0.1 s): below 0.1 s, interpolated"},
    )
    text = "\n".join(_table(result))
    assert "prompt+cache" in text
    assert "6.5 ms / < 100 ms / –" in text
    assert "TTFT p50: inside the first bucket" in text


def _vllm_counter_page(generated: float, started: float | None) -> bytes:
    start = "" if started is None else f"process_start_time_seconds {started}\n"
    return (start + vllm_page(generated, running=1)).encode()


async def test_restart_inside_the_snapshot_window_counts_from_the_start_and_says_so() -> None:
    # 1,000,000 tokens before; the server restarted 0.5 s before the second reading (its start stamp says
    # so) and generated 300 since. Not 300 over the whole window, not "restarted 0 s ago".
    def restarted() -> bytes:
        return _vllm_counter_page(300, time.time() - 0.5)

    replies = [Reply(_vllm_counter_page(1e6, time.time() - 3600)), Reply(make_body=restarted)]
    async with ReplyServer(list(replies)) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "1", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["error"] is None
    assert record["restarted_in_window"] is True and record["restarted_s_ago"] >= 0.5
    assert record["covered_s"] == record["restarted_s_ago"]
    assert record["generation_tokens_per_s"] == pytest.approx(300 / record["covered_s"], rel=1e-2)
    assert "by process_start_time_seconds" in record["notes"]["window"]
    async with ReplyServer(list(replies)) as server:
        code, out, _ = await spectop("snapshot", server.url, "--window", "1")
    assert code == 0 and "restarted during the window" in out
    assert all(len(line) <= 80 for line in out.splitlines())


async def test_duplicated_page_is_reported_inconsistent() -> None:
    page = sample_body("vllm", "metrics_t1.txt")
    async with ReplyServer([Reply(sample_body("vllm", "metrics_t0.txt")), Reply(page + page)]) as server:
        code, out, _ = await spectop("snapshot", server.url, "--window", "0.2", "--json")
    record = json.loads(out)
    assert code == 1 and record["up"] is True
    assert record["error"].startswith("inconsistent page")
    assert record["kv_cache_usage"] is None and record["running"] is None


# --- a llama-server doing the bad thing during the window ---------------------------------------------------

# Three requests of 64 tokens in the window, at different speeds (the gauge then depends on which ones
# it covers): what a request rate over the window must be built from.
REQUESTS = ((64, 0.041), (64, 0.087), (64, 0.063))


def _during_the_window(server: FakeLlamaServer, *, second_scraper: bool) -> asyncio.Event:
    """After spectop's first reading (its second GET /metrics: page, /slots, page), three requests end;
    with `second_scraper`, another client GETs /metrics after the first one, as Prometheus does."""
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    spectop_gets = 0
    tasks: list[asyncio.Task[None]] = []

    async def traffic() -> None:
        async with httpx.AsyncClient() as other:
            for index, (tokens, seconds) in enumerate(REQUESTS):
                server.finish(tokens, seconds, prompt_tokens=17 + index, prompt_seconds=0.011 + index / 1000)
                if second_scraper and index == 0:
                    assert (await other.get(f"{server.url}/metrics")).status_code == 200
        done.set()

    def after_metrics() -> None:
        nonlocal spectop_gets
        spectop_gets += 1
        if spectop_gets == 2:
            tasks.append(loop.create_task(traffic()))

    server.after_metrics = after_metrics
    return done


async def test_snapshot_table_with_a_second_scraper_shows_a_dash_and_why() -> None:
    async with FakeLlamaServer(**BUSY) as server:
        done = _during_the_window(server, second_scraper=True)
        code, out, err = await spectop("snapshot", server.url, "--window", "2")
    assert done.is_set() and code == 0, err
    (row,) = [line for line in out.splitlines() if "req/s" in line or "requests" in line.lower()][:1]
    assert "–" in row, out
    assert "another client also scrapes" in " ".join(out.split())


async def test_snapshot_across_a_llama_server_restart_counts_from_its_start() -> None:
    """The new process (its Process-Start-Time-Unix on this machine's monotonic clock, in µs, half a second
    after the first reading) served one request of 64 tokens and 8 drafts of 4 inside the window."""
    async with FakeLlamaServer(**BUSY) as server:
        server.drafts, server.draft_tokens, server.accepted = 9000.0, 36000.0, 30000.0
        gets = 0

        def restart_after_the_first_reading() -> None:
            nonlocal gets
            gets += 1
            if gets == 2:
                server.restart(str(int((time.monotonic() + 0.5) * 1e6)))
                server.finish(64, 0.05)
                server.drafts, server.draft_tokens, server.accepted = 8.0, 32.0, 16.0

        server.after_metrics = restart_after_the_first_reading
        code, out, err = await spectop("snapshot", server.url, "--window", "2", "--json")
    assert gets >= 3 and code == 0, err
    record = json.loads(out)
    assert record["error"] is None and record["restarted_in_window"] is True
    assert "restarted during the window" in record["notes"]["window"]
    assert record["acceptance_rate"] == 16 / 32 and record["mean_acceptance_length"] == 1 + 16 / 8
    assert "by Process-Start-Time-Unix" in record["notes"]["window"]
    assert record["restarted_s_ago"] > 0 and record["covered_s"] == record["restarted_s_ago"]
    assert record["generation_tokens_per_s"] == pytest.approx(64 / record["covered_s"], rel=1e-2)
