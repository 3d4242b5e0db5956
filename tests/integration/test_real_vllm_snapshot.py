"""`spectop snapshot --json` on real vLLMs under a steady load agrees with the servers' own counters: the
truth is computed here (Prometheus' arithmetic) from the first and last of the /metrics pages a tap kept of
what spectop read. Identical, noisy and random drafts (k = 3), and the server without a draft ("–").
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from llama_spectop import json_lines, run_spectop
from vllm_server import VllmServer
from vllm_workload import RecordingTap, delta, histogram_quantile, steady_load

KINDS = ("same", "noisy", "random", "nodraft")
WINDOW_S = 12.0
SPEC = "vllm:spec_decode_num"


def test_snapshot_figures_equal_the_servers_counters_over_the_same_pages(
    vllm_servers: dict[str, VllmServer], tmp_path: Path
) -> None:
    taps = {kind: RecordingTap(vllm_servers[kind].url) for kind in KINDS}
    with ExitStack() as stack:
        for tap in taps.values():
            stack.enter_context(tap)
        with steady_load([vllm_servers[kind].url for kind in KINDS], concurrency=1) as loads:
            # A generous scrape timeout: four vLLMs under load share two cores with other work.
            urls = [taps[kind].url for kind in KINDS]
            args = ["snapshot", *urls, "--json", "--window", str(WINDOW_S), "--timeout", "60"]
            done = run_spectop(args, tmp_path, timeout_s=WINDOW_S + 600)
        assert all(not load.errors for load in loads), [load.errors[:2] for load in loads]
    assert done.returncode == 0, done.stderr
    records = {record["url"]: record for record in json_lines(done.stdout)}
    for kind in KINDS:
        record = records[taps[kind].url]
        pages = taps[kind].pages()
        assert len(pages) >= 2, kind
        (t0, before), (t1, after) = pages[0], pages[-1]
        seconds = t1 - t0

        def d(name: str, page_before: dict = before, page_after: dict = after) -> float:
            return delta(page_before, page_after, name)

        assert record["up"] and record["backend"] == "vllm" and record["model"] == "tiny", record
        assert d("vllm:generation_tokens_total") > 0, f"{kind}: no traffic inside the window"
        # Rates: spectop divides by its own clock between its two scrapes (`covered_s`, to the ms); what it
        # divides is the server's own counter increase between the same two pages.
        for key, counter in (
            ("generation_tokens_per_s", "vllm:generation_tokens_total"),
            ("prompt_tokens_per_s", "vllm:prompt_tokens_total"),
            ("requests_per_s", "vllm:request_success_total"),
        ):
            assert record[key] * record["covered_s"] == pytest.approx(d(counter), rel=0.005), key
        assert record["covered_s"] == pytest.approx(seconds, abs=WINDOW_S / 2)
        ttft = "vllm:time_to_first_token_seconds"
        assert record["ttft_mean_s"] == pytest.approx(d(ttft + "_sum") / d(ttft + "_count"), rel=1e-9)
        for q, key in ((0.5, "ttft_p50_s"), (0.95, "ttft_p95_s")):
            assert record[key] == pytest.approx(histogram_quantile(q, before, after, ttft), rel=1e-6), key
        tpot = "vllm:request_time_per_output_token_seconds"
        assert record["tpot_mean_s"] == pytest.approx(d(tpot + "_sum") / d(tpot + "_count"), rel=1e-9)
        if kind == "nodraft":
            assert record["acceptance_rate"] is None and record["mean_acceptance_length"] is None
            assert "acceptance_rate" in record["notes"]  # the reason for "–"
            continue
        drafts, drafted, accepted = (
            d(f"{SPEC}_{name}_total") for name in ("drafts", "draft_tokens", "accepted_tokens")
        )
        assert drafts > 0, kind
        assert record["acceptance_rate"] == pytest.approx(accepted / drafted, rel=1e-9)
        assert record["mean_acceptance_length"] == pytest.approx(1 + accepted / drafts, rel=1e-9)
        per_position = [
            delta(before, after, f"{SPEC}_accepted_tokens_per_pos_total", position=str(i)) / drafts
            for i in range(3)
        ]
        assert record["per_position_acceptance"] == pytest.approx(per_position, rel=1e-9)
    # The drafts do what their weights imply (else this test would measure a broken bed).
    rates = {kind: records[taps[kind].url]["acceptance_rate"] for kind in ("same", "noisy", "random")}
    assert rates["same"] > 0.9 and 0.1 < rates["noisy"] < 0.7 and rates["random"] < 0.15, rates
