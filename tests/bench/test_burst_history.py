"""The burst history: bursts kept, listed in 80 columns, loaded (older files too), compared."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from timed_server import Behaviour, TimedServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ui"))
from bench_fixtures import MTP_OFF, MTP_ON, mtp_burst, recorded_arm, recorded_burst

from tests.bench.bursts import burst_config, verdict_body
from tui.bench import burst_store as store
from tui.bench.engine import run_burst
from tui.bench.report.summary import burst_summary
from tui.bench.results import BurstResult, BurstVerdict, ServerAcceptance
from tui.bench.session import BurstRequest, BurstSession, PastArm
from tui.cli import main
from tui.fit_text import short_url
from tui.settings import EndpointSettings

LONG = EndpointSettings(name="far", url="http://inference-gpu-node-17.cluster.example.com:8443/v1")


def test_an_ab_burst_is_kept_with_the_verdict_it_showed() -> None:
    result = mtp_burst()
    shown = burst_summary(result, with_detail=False).comparison
    assert shown is not None and shown.ci95 is not None
    path = store.save_burst(result)
    kept = json.loads(path.read_text(encoding="utf-8"))["verdict"]
    assert kept["text"] == shown.verdict
    assert kept["decode_tokens_per_s_ratio"] == shown.decode_tokens_per_s_ratio
    assert tuple(kept["ci95"]) == shown.ci95
    (entry,) = store.list_bursts()
    assert entry.arm_urls == (MTP_OFF.url, MTP_ON.url)
    low, high = shown.ci95
    assert entry.short_verdict == f"B {shown.decode_tokens_per_s_ratio:.2f}x ({low:.2f}-{high:.2f})"


def test_a_one_arm_burst_has_no_verdict_and_says_one_arm() -> None:
    store.save_burst(recorded_burst([recorded_arm("a", MTP_OFF, 1, 0.01, None)]))
    (entry,) = store.list_bursts()
    assert entry.verdict is None and entry.short_verdict == "–"
    (row,) = store.history_rows([entry], 80)
    assert row[1:3] == ["10.0.0.7:8000", "one arm"] or row[1:3] == [MTP_OFF.url, "one arm"]


def test_a_file_of_an_older_spectop_loads_without_a_verdict(tmp_path: Path) -> None:
    document = json.loads(mtp_burst().model_dump_json())
    del document["verdict"]  # as an older spectop wrote it
    path = tmp_path / "burst-20261130-024000-000000.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert store.load_burst(path).verdict is None
    (entry,) = store.list_bursts(tmp_path)
    assert entry.verdict is None and entry.short_verdict == "–"  # not guessed
    assert entry.arm_urls == (MTP_OFF.url, MTP_ON.url)


def test_a_kept_verdict_that_is_not_a_ratio_is_refused(tmp_path: Path) -> None:
    document = json.loads(store.save_burst(mtp_burst(), tmp_path).read_text(encoding="utf-8"))
    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        document["verdict"]["ci95"] = [bad, 2.0]
        (tmp_path / "burst-bad.json").write_text(json.dumps(document), encoding="utf-8")
        with pytest.raises(store.BurstFileError, match=r"field verdict\.ci95"):
            store.load_burst(tmp_path / "burst-bad.json")


def _entry(ratio: float | None, ci: tuple[float, float] | None) -> store.BurstEntry:
    verdict = BurstVerdict(text="…", decode_tokens_per_s_ratio=ratio, ci95=ci)
    return store.BurstEntry(
        path=Path("x.json"), started_at=datetime(2026, 11, 30, tzinfo=UTC), prompt_set="mixed",
        arm_names=("A", "B"), requests=12, arm_urls=("http://a:1", "http://b:2"), verdict=verdict,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("ratio", "ci", "words"),
    [
        (1.7, (1.52, 1.88), "B 1.70x (1.52-1.88)"),
        (0.8, (0.625, 0.8), "A 1.25x (1.25-1.60)"),  # A faster: 1 / ratio, the interval turned over
        (1.02, (0.95, 1.09), "no difference"),
        (1.3, None, "B/A 1.30x"),
        (None, None, "no comparison"),
    ],
)
def test_the_short_verdict_follows_the_verdict_lines_rules(
    ratio: float | None, ci: tuple[float, float] | None, words: str
) -> None:
    assert _entry(ratio, ci).short_verdict == words


def test_rows_fit_80_columns_keeping_host_and_port_and_show_more_when_wider() -> None:
    store.save_burst(
        recorded_burst([recorded_arm("a", LONG, 1, 0.01, None), recorded_arm("b", MTP_ON, 2, 0.012, 0.7)])
    )
    entries = store.list_bursts()
    narrow = store.history_lines(entries, 80)
    assert all(len(line) <= 80 for line in narrow[::2])  # the rows (each file on the line after its row)
    (row,) = store.history_rows(entries, 80)
    assert row[1].startswith("…") and row[1].endswith(".com:8443") and row[2] == "10.0.0.8:8000"
    assert "  ".join(row[1:3]) in narrow[2]
    wide = store.history_lines(entries, 200)
    assert LONG.url in wide[2] and "2026-11-30 02:40" in wide[2]


def test_short_url_drops_scheme_then_path_then_the_hosts_left_end() -> None:
    url = "https://node-7.example.com:8443/v1"
    assert short_url(url, 40) == url
    assert short_url(url, 30) == "node-7.example.com:8443/v1"
    assert short_url(url, 24) == "node-7.example.com:8443"
    assert short_url(url, 12) == "…le.com:8443"  # 12 cells, the port kept
    assert short_url("[::1:8000", 6).endswith("8000")  # not a URL urlsplit accepts: cut as it is


def test_cli_history_lists_urls_verdict_and_prompt_set(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    path = store.save_burst(mtp_burst())
    shown = burst_summary(mtp_burst(), with_detail=False).comparison
    assert shown is not None and shown.ci95 is not None
    assert main(["bench", "--history"]) == 0
    header, _, row, file_line = capsys.readouterr().out.splitlines()
    assert header.split() == ["when", "A", "B", "faster", "(95%", "CI)", "set", "n"]
    assert row.split()[2:4] == ["10.0.0.7:8000", "10.0.0.8:8000"] or MTP_OFF.url in row
    assert f"B {shown.decode_tokens_per_s_ratio:.2f}x (" in row and "code-en" in row
    assert row.split()[-1] == "6" and len(row) <= 80
    assert file_line.strip() == str(path)  # what --compare takes


async def _burst(client: httpx.AsyncClient, behaviour: Behaviour, prompts: str = "code-en"):
    with TimedServer(behaviour) as server:
        return await run_burst(burst_config(server.base_url, prompts=prompts, requests=6), client)


async def test_before_after_comparison_from_history(client: httpx.AsyncClient) -> None:
    before = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.02, chunks=12))
    after = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.02, chunks=6, tokens_per_chunk=2))
    first, second = store.save_burst(before), store.save_burst(after)
    assert first.parent == store.bursts_dir() and str(store.bursts_dir()).endswith("spectop/bursts")
    entries = store.list_bursts()
    assert [e.path for e in entries] == [second, first]  # newest first
    loaded = store.load_burst(first)
    assert loaded.arms[0].requests[0].ttft_s == before.arms[0].requests[0].ttft_s
    # Two past arms: compared without a request sent (nothing runs, nothing new is kept).
    session = BurstSession(BurstRequest(a=PastArm(path=first), b=PastArm(path=second)), client)
    outcome = await session.run()
    assert outcome.ran is None and session.save() is None
    summary = outcome.summary
    comparison = summary.comparison
    assert comparison is not None and comparison.ci95 is not None
    # Before: 11 tokens after the first in 11 gaps; after: 11 in 5 gaps -> 11/5 = 2.2x (late sleeps on a
    # loaded machine stretch the gaps unevenly, so only the side and rough size are asserted).
    assert comparison.decode_tokens_per_s_ratio is not None
    assert 1.6 < comparison.decode_tokens_per_s_ratio < 3.2
    assert comparison.ci95[0] > 1.0
    assert verdict_body(comparison.verdict).startswith("after is"), comparison.verdict
    # Same words at temperature 0, just two per chunk: equivalence is 100%.
    assert summary.equivalence is not None
    assert summary.equivalence.identical == summary.equivalence.compared == 6


async def test_different_prompt_sets_are_not_compared(client: httpx.AsyncClient) -> None:
    fast = Behaviour(ttft_s=0.0, interval_s=0.0, chunks=3)
    one, two = await _burst(client, fast, "code-en"), await _burst(client, fast, "chat-en")
    with pytest.raises(store.BurstFileError, match="different prompt sets"):
        store.combine_bursts(one, two)


def test_broken_files_are_skipped_in_the_list_and_named_on_load(tmp_path: Path) -> None:
    folder = store.bursts_dir()
    folder.mkdir(parents=True)
    bad = folder / "burst-20260101-000000-000000.json"
    bad.write_text('{"format": "spectop-burst/1"}', encoding="utf-8")
    assert store.list_bursts() == []
    with pytest.raises(store.BurstFileError, match="not a spectop burst"):
        store.load_burst(bad)


def _with_acceptance(result: BurstResult, rate: float | None) -> BurstResult:
    arm = result.arms[0].model_copy(update={"server": ServerAcceptance(acceptance_rate=rate)})
    return result.model_copy(update={"arms": [arm]})


@pytest.mark.parametrize(
    ("before_rate", "after_rate", "words"),
    [
        (0.54, 0.71, "acceptance 54% → 71%"),
        (None, 0.71, "acceptance – → 71%"),
        (0.54, None, "acceptance 54% → –"),
    ],
)
async def test_compare_verdict_names_the_acceptance_of_both_arms(
    client: httpx.AsyncClient,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    before_rate: float | None,
    after_rate: float | None,
    words: str,
) -> None:
    before = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.01, chunks=8))
    after = await _burst(client, Behaviour(ttft_s=0.01, interval_s=0.01, chunks=4, tokens_per_chunk=2))
    first = store.save_burst(_with_acceptance(before, before_rate))
    second = store.save_burst(_with_acceptance(after, after_rate))
    capsys.readouterr()
    markdown = tmp_path / "compared.md"
    assert main(["bench", "--compare", str(first), str(second), "--markdown", str(markdown)]) == 0
    lines = capsys.readouterr().out.splitlines()
    verdict = lines[lines.index("") + 1]  # the verdict follows the table after a blank line
    assert verdict.endswith(f", {words}") and "greedy equivalence: 6/6 identical" in lines
    assert f"**Verdict:** {verdict}" in markdown.read_text(encoding="utf-8")
