"""The test bed itself: the built llama-server serves the made-up models with the acceptance they imply.

If these fail, the spectop tests in this folder would be measuring a broken bed, not spectop.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from llama_build import EXPECTED_VERSION_TEXT, binary_version
from llama_server import LlamaServer
from llama_workload import (
    acceptance_lines,
    log_size,
    run_requests,
    timings_totals,
    wait_for_finished_requests,
)

pytestmark = pytest.mark.llamacpp


def test_binary_reports_the_expected_version(llama_server_binary: Path) -> None:
    assert EXPECTED_VERSION_TEXT in (binary_version(llama_server_binary) or "")


def test_every_server_is_healthy_and_exports_llamacpp_metrics(llama_servers: dict[str, LlamaServer]) -> None:
    for server in llama_servers.values():
        assert httpx.get(f"{server.url}/health", timeout=5).status_code == 200
        page = httpx.get(f"{server.url}/metrics", timeout=5).text
        assert "llamacpp:spec_decode_num_draft_tokens_total" in page, server.name


def test_drafts_give_the_acceptance_their_weights_imply(llama_servers: dict[str, LlamaServer]) -> None:
    rates: dict[str, float] = {}
    for kind in ("same", "noisy", "random"):
        server = llama_servers[kind]
        offset = log_size(server.log_file)
        responses = run_requests(server.url, count=3, max_tokens=64)
        accepted, drafted = timings_totals(responses)
        assert drafted > 0, f"{kind}: no draft tokens; is --spec-type draft-simple in effect?"
        rates[kind] = accepted / drafted
        wait_for_finished_requests(server.log_file, offset, count=3)
        lines = acceptance_lines(server.log_file, offset)
        assert len(lines) == 3, kind
        assert sum(line.accepted for line in lines) == accepted, kind
        assert sum(line.generated for line in lines) == drafted, kind
    assert rates["same"] == 1.0
    assert 0.05 < rates["noisy"] < 0.95
    assert rates["random"] < 0.05

    no_draft = run_requests(llama_servers["nodraft"].url, count=1)[0]
    assert "draft_n" not in no_draft["timings"]


def test_greedy_output_is_identical_with_and_without_drafts(llama_servers: dict[str, LlamaServer]) -> None:
    texts = {
        kind: [response["choices"][0]["text"] for response in run_requests(server.url, count=2)]
        for kind, server in llama_servers.items()
    }
    assert texts["nodraft"][0], "empty generation"
    for kind, outputs in texts.items():
        assert outputs == texts["nodraft"], kind
