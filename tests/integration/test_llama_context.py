"""A context axis on a real llama-server (the tiny models: 2048 tokens of context, 1024 a slot).

The prompts are sized by the server's own tokenizer (`POST /tokenize`): the tiny vocabulary spells most
filler words out in pieces, which a characters-a-token estimate would get several times wrong. Bursts
and the tune take the lengths; the server's counts match them; the tune gives its pick per (load,
context) and, its baseline being the file's draft max (llama.cpp's 0 still drafts), says that where
speculation stops paying cannot be known rather than guess.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_spectop import run_spectop
from test_llama_tune import tuned_server  # noqa: F401 (the fixture: a restartable llama-server)

pytestmark = pytest.mark.llamacpp

LENGTHS = (256, 768)  # + 32 generated tokens: within a slot's 1024


def test_a_context_axis_on_a_real_llama_server(
    tuned_server: tuple[Path, Path, str, list[str]],  # noqa: F811 (the imported fixture)
    tmp_path: Path,
) -> None:
    launch, log_file, url, restart = tuned_server
    lengths = ",".join(map(str, LENGTHS))
    bench = run_spectop(
        ["bench", "--a", url, "--prompts", "chat", "--prompt-tokens", lengths, "--requests", "4",
         "--rounds", "1", "--max-tokens", "32", "--no-history"],
        tmp_path, timeout_s=600,
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-3000:]
    assert f"lengths by the server's tokenizer ({url}/tokenize)" in bench.stdout
    for tokens in LENGTHS:
        line = next(
            line for line in bench.stdout.splitlines() if line.startswith(f"A: {tokens} tokens asked")
        )
        assert "the server counted" in line and "off, the context is not" not in line, line

    report = tmp_path / "tune.json"
    tune = run_spectop(
        ["tune", str(launch), "--endpoint", url, "--key", "draft.max", "--values", "1,4",
         "--concurrency", "1", "--restart-command", " ".join(restart), "--requests", "4",
         "--max-tokens", "32", "--prompts", "chat", "--prompt-tokens", lengths, "--health-timeout", "90",
         "--log-file", str(log_file), "--no-history", "--json", str(report)],
        tmp_path, timeout_s=900,
    )  # fmt: skip
    assert tune.returncode == 0, tune.stderr[-3000:]
    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["prompt_tokens"] == list(LENGTHS)
    buckets = {(d["concurrency"], d["prompt_tokens"]): d for d in result["context_decisions"]}
    assert set(buckets) == {(1, tokens) for tokens in LENGTHS}
    assert all(d["best"] in (1, 4) for d in buckets.values())
    for outcome in result["outcomes"]:
        assert outcome["started"], outcome["failure"]
        for cell in outcome["cells"]:
            assert (
                abs(cell["prompt_tokens_counted"] - cell["prompt_tokens"]) < 0.25 * cell["prompt_tokens"]
            ), cell
    [stop] = result["context_stops"]
    assert stop["prompt_tokens"] is None and "not speculation off" in stop["reason"]
    assert "speculation stops paying at – (the baseline is not speculation off" in tune.stdout
