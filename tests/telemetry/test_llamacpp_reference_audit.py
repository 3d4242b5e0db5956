"""llama.cpp's real captures (`shared/reference/samples/llamacpp/`) beyond `/metrics`: the `/slots` and
`/v1/models` bodies, and `spectop snapshot` reading all of them from one local server."""

from __future__ import annotations

import json

import httpx
import pytest
from metrics_test_server import SAMPLES, Reply, ReplyServer, sample_body
from test_snapshot_cli import assert_rate, spectop

from tui.telemetry.scraper import fetch_slots_decoded

SLOTS = (SAMPLES / "llamacpp" / "slots_t1_draft_same.json").read_bytes()
MODELS = (SAMPLES / "llamacpp" / "models.json").read_bytes()


async def _decoded(body: bytes) -> float | str:
    async with ReplyServer([Reply(body)]) as server, httpx.AsyncClient() as client:
        return await fetch_slots_decoded(client, server.url)


async def test_real_slots_body_after_the_workload_has_nothing_in_flight() -> None:
    # Both slots idle (`"is_processing":false`, `n_decoded` reset to 0 after release).
    assert await _decoded(SLOTS) == 0.0


async def test_never_used_slot_reports_only_four_fields() -> None:
    # llamacpp.md §6: "A slot that has never been used reports only id, n_ctx, speculative, is_processing."
    body = json.dumps(
        [
            {"id": 0, "n_ctx": 1024, "speculative": True, "is_processing": False},
            {"id": 1, "n_ctx": 1024, "speculative": True, "is_processing": False},
        ]
    ).encode()
    assert await _decoded(body) == 0.0


async def test_slot_in_the_middle_of_a_long_request_counts_its_decoded_tokens() -> None:
    # llamacpp.md §6: "During a 900-token request a slot showed is_processing: true, n_prompt_tokens: 345,
    # n_decoded: 330, n_remain: 570." The real idle slot body with slot 0 turned into that one.
    slots = json.loads(SLOTS)
    slots[0]["is_processing"] = True
    slots[0]["n_prompt_tokens"] = 345
    slots[0]["next_token"][0].update(has_next_token=True, n_remain=570, n_decoded=330)
    assert await _decoded(json.dumps(slots).encode()) == 330.0


async def test_snapshot_reads_the_real_slots_and_models_bodies() -> None:
    # /metrics: t0 for the first reading (its page, then /slots, then the page again), t1 at the end.
    t0, t1 = sample_body("llamacpp", "metrics_t0.txt"), sample_body("llamacpp", "metrics_t1.txt")
    routes = {"/slots": Reply(SLOTS), "/v1/models": Reply(MODELS)}
    async with ReplyServer([Reply(t0), Reply(t0), Reply(t1)], routes=routes) as server:
        code, out, err = await spectop("snapshot", server.url, "--window", "0.5", "--json")
        paths = [request.path for request in server.requests]
    assert code == 0, err
    assert paths.count("/slots") == 2
    record = json.loads(out)
    # models.json: data[0].id is the -m path as given (there is no model label on the page).
    assert (record["backend"], record["model"], record["up"]) == ("llamacpp", "models/target.gguf", True)
    # /slots answered both times: the live count (704 finished + 0 in flight) over the window.
    assert_rate(record["generation_tokens_per_s"], 704, 0.5)
    assert "generation_tokens_per_s" not in record["notes"]
    assert_rate(record["requests_per_s"], 11, 0.5)
    assert (record["acceptance_rate"], record["mean_acceptance_length"]) == (1.0, 9.0)
    assert record["per_position_acceptance"] == [1.0] * 8
    assert record["tpot_mean_s"] == pytest.approx(0.667529 / 693, rel=1e-4)
    assert record["prefix_cache_hit_rate"] == pytest.approx(163 / 350)
    assert (record["running"], record["waiting"]) == (0.0, 0.0)
    assert record["kv_cache_usage"] is None  # not exposed by this build (llamacpp.md §7)
