"""A restart is done only when a NEW process answers (the fake's old one answers for HANDOVER_S)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tui.configs.restart import OLD_PROCESS, StartFailureWatch, read_identity, wait_for_health
from tui.tune import runner
from tui.tune.runner import Changer

HANDOVER_S = 1.5


@dataclass
class FakeServer:
    """Two processes behind one port: `generation` says which answers; `gap_s` of /health 503 between."""

    gap_s: float = 0.0
    new_identity: bool = True  # False: the "new" process prints the old identity (it never restarts)
    generation: int = 1
    swap_at: float | None = None
    served: list[tuple[str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> int | None:
        """The generation answering now; None during the gap."""
        with self.lock:
            if self.swap_at is None:
                return self.generation
            now = time.monotonic()
            if now < self.swap_at:
                return self.generation
            if now < self.swap_at + self.gap_s:
                return None
            self.generation += 1
            self.swap_at = None
            return self.generation

    def page(self, generation: int) -> str:
        start = 1_796_000_000.0 + (generation if self.new_identity else 1) * 100
        return (
            "# TYPE process_start_time_seconds gauge\n"
            f"process_start_time_seconds {start}\n"
            "# TYPE vllm:generation_tokens_total counter\n"
            'vllm:generation_tokens_total{engine="0",model_name="tiny"} 48.0\n'
            "# TYPE vllm:generation_tokens_created gauge\n"
            f'vllm:generation_tokens_created{{engine="0",model_name="tiny"}} {start + 20.5}\n'
        )


Serve = Callable[[FakeServer], str]


def _handler(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: str = "") -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            with fake.lock:
                fake.swap_at = time.monotonic() + HANDOVER_S
            self._send(200, "restarting\n")

        def do_GET(self) -> None:
            generation = fake.current()
            if generation is None:
                self._send(503)
                return
            fake.served.append((self.path, generation))
            if self.path == "/metrics":
                self._send(200, fake.page(generation))
            else:
                self._send(200)

    return Handler


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ThreadingHTTPServer] = []

    def start(fake: FakeServer) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _restart_command(url: str) -> list[str]:
    """Asks the fake to restart and returns at once, as `kill -TERM $(cat pid); start &` does."""
    request = f"urllib.request.Request({url + '/restart'!r}, method='POST')"
    code = f"import urllib.request; urllib.request.urlopen({request})"
    return [sys.executable, "-c", code]


def _changer(
    url: str,
    tmp_path: Path,
    client: httpx.AsyncClient,
    timeout_s: float = 60.0,
    command: list[str] | None = None,
    log_file: Path | None = None,
) -> Changer:
    config = tmp_path / "config.toml"
    config.write_text("[model]\nname = 'tiny'\n")
    return Changer(
        config,
        command or _restart_command(url),
        client,
        health_url=url + "/health",
        metrics_url=url + "/metrics",
        log_file=log_file,
        health_timeout_s=timeout_s,
    )


@pytest.mark.parametrize("gap_s", [0.0, 0.5], ids=["identity-changes", "health-goes-down"])
async def test_the_tune_waits_for_the_new_process_not_the_old_ones_200(
    serve: Serve, tmp_path: Path, gap_s: float
) -> None:
    fake = FakeServer(gap_s=gap_s)
    url = serve(fake)
    async with httpx.AsyncClient(timeout=5.0) as client:
        outcome = await _changer(url, tmp_path, client).restart()
        assert outcome.ok, outcome.reason
        # Back means the new process: the old one answered 200 for HANDOVER_S after the command returned.
        assert fake.generation == 2
        assert fake.current() == 2
        health_answers = [generation for path, generation in fake.served if path == "/health"]
        assert health_answers[-1] == 2
        assert 1 in health_answers  # the old process did answer 200 after the command: the race was real


async def test_an_old_process_that_never_goes_away_is_not_back(serve: Serve, tmp_path: Path) -> None:
    fake = FakeServer(new_identity=False)
    url = serve(fake)
    async with httpx.AsyncClient(timeout=5.0) as client:
        outcome = await _changer(url, tmp_path, client, timeout_s=HANDOVER_S + 2.0).restart()
    assert not outcome.ok
    assert outcome.reason is not None and OLD_PROCESS in outcome.reason


async def test_wait_for_health_with_the_identity_before_waits_for_the_new_one(serve: Serve) -> None:
    fake = FakeServer()
    url = serve(fake)
    polls: list[tuple[bool, str]] = []
    async with httpx.AsyncClient(timeout=5.0) as client:
        before = await read_identity(client, url + "/metrics")
        assert before is not None and before.known
        await client.post(url + "/restart")
        back = await wait_for_health(
            client,
            url + "/health",
            lambda ok, detail, _: polls.append((ok, detail)),
            interval_s=0.1,
            before=before,
        )
    assert back and fake.generation == 2
    assert (False, f"HTTP 200, {OLD_PROCESS}") in polls  # the old 200s were seen and not taken for "back"
    assert polls[-1] == (True, "HTTP 200")


async def test_without_an_identity_the_first_200_counts(serve: Serve) -> None:
    """A server that was down before the restart (no identity read): its first 200 is the new process."""
    fake = FakeServer()
    url = serve(fake)
    async with httpx.AsyncClient(timeout=5.0) as client:
        back = await wait_for_health(client, url + "/health", lambda *_: None, interval_s=0.1, before=None)
    assert back and fake.generation == 1


FAILED_START = """(APIServer pid=7) INFO 12-01 20:39:08 [api_utils.py:286] non-default args: {'model': 'tiny'}
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/vllm/engine/arg_utils.py", line 2099, in create_speculative_config
    return SpeculativeConfig(**self.speculative_config)
pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig
  Value error, Invalid repository ID or local directory specified: '/models/no-such-draft'.
Please verify the following requirements:
"""


def test_start_failure_watch_needs_a_fatal_error_and_a_quiet_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("old process line\n")
    now = [0.0]
    watch = StartFailureWatch(log, log.stat().st_size, quiet_s=10.0, clock=lambda: now[0])
    with log.open("a") as file:
        file.write(
            "(APIServer pid=7) ERROR 12-01 20:39:09 [hub.py:1] Error retrieving file list, retrying 1 of 2\n"
        )
    assert watch.poll() is None
    now[0] = 30.0
    assert watch.poll() is None  # quiet, but only an "other" error: still starting
    with log.open("a") as file:
        file.write(FAILED_START)
    now[0] = 35.0
    assert watch.poll() is None  # the log just grew: the traceback may go on
    now[0] = 44.0
    assert watch.poll() is None
    now[0] = 45.5
    reason = watch.poll()
    assert reason is not None and "no-such-draft" in reason and "died while starting" in reason


OLD_PROCESS_SHUTDOWN = (
    "(APIServer pid=5) ERROR 12-07 04:11:52 [async_llm.py:744] AsyncLLM output_handler failed.\n"
    "(APIServer pid=5) ERROR 12-07 04:11:52 [async_llm.py:744] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
)


def test_the_old_processs_shutdown_errors_are_not_a_failed_start(tmp_path: Path) -> None:
    """vLLM logs EngineDeadError on SIGTERM: only the new process's own lines can say it died."""
    log = tmp_path / "server.log"
    log.write_text("(APIServer pid=5) INFO 12-07 04:01:00 [loggers.py:1] Engine 000: Avg generation ...\n")
    now = [0.0]
    watch = StartFailureWatch(log, log.stat().st_size, quiet_s=10.0, clock=lambda: now[0])
    with log.open("a") as file:
        file.write(OLD_PROCESS_SHUTDOWN)
    assert watch.poll() is None
    now[0] = 120.0
    assert watch.poll() is None  # long quiet after the old process's errors: still starting
    with log.open("a") as file:
        file.write(FAILED_START)
    now[0] = 125.0
    assert watch.poll() is None
    now[0] = 140.0
    reason = watch.poll()
    assert reason is not None and "no-such-draft" in reason and "EngineDeadError" not in reason


async def test_a_server_that_dies_starting_fails_at_once_with_the_logs_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that dies starting fails the change at once with the log's reason."""
    # The quiet period (30 s) is the test above's; here a short one, so the wait is on the log, not on it.
    monkeypatch.setattr(runner, "StartFailureWatch", partial(StartFailureWatch, quiet_s=0.5))
    log = tmp_path / "server.log"
    log.write_text("")
    script = f"open({str(log)!r}, 'a').write({FAILED_START!r})"
    async with httpx.AsyncClient(timeout=5.0) as client:
        # the discard port: nothing answers; the health timeout is never reached when it works
        changer = _changer("http://127.0.0.1:9", tmp_path, client, 300.0, [sys.executable, "-c", script], log)
        outcome = await changer.restart()
    assert not outcome.ok
    assert outcome.reason is not None and "died while starting" in outcome.reason
    assert "no-such-draft" in outcome.reason
