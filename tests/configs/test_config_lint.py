"""Lint ids on the seed skeletons and on each rule's trigger."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.configs.document import load_document
from tui.configs.lint import Finding, has_errors, lint_document
from tui.paths import sample_configs_dir

FIXTURES = Path(__file__).parent / "fixtures"


def _lint_file(path: Path) -> list[Finding]:
    return lint_document(load_document(path.read_text(encoding="utf-8"), path=path))


def _by_id(findings: list[Finding]) -> dict[str, Finding]:
    return {finding.id: finding for finding in findings}


def test_seed_vllm_skeleton() -> None:
    found = _by_id(_lint_file(FIXTURES / "seed_config.toml"))
    assert found["removed-key"].key == "speculative.speculative_model"
    assert found["removed-key"].line == 11
    assert "method" in found["removed-key"].fix
    assert found["gpu-memory-high-with-spec"].line == 6
    assert "0.85" in found["gpu-memory-high-with-spec"].fix
    assert "unknown-key" not in found  # a removed key is reported as removed, not unknown
    assert not has_errors(list(found.values()))


def test_seed_sglang_skeleton() -> None:
    findings = _lint_file(FIXTURES / "seed_sglang_settings.json")
    found = _by_id(findings)
    assert found["sglang-unknown-algorithm"].severity == "error"
    assert found["sglang-unknown-algorithm"].line == 5
    assert "MTP" in found["sglang-unknown-algorithm"].message
    assert "EAGLE" in found["sglang-unknown-algorithm"].fix
    adjusted = found["sglang-draft-tokens-adjusted"]
    assert adjusted.line == 7 and "= 3" in adjusted.message
    assert has_errors(findings)
    assert findings[0].severity == "error"  # errors first


CLEAN = ("config.toml", "config_mtp_off.toml", "sglang_settings.json", "client_settings.json")


@pytest.mark.parametrize(
    "path", [*(sample_configs_dir() / name for name in CLEAN), FIXTURES / "seed_client_settings.json"]
)
def test_shipped_samples_and_the_seed_client_have_no_errors_or_warnings(path: Path) -> None:
    assert [f for f in _lint_file(path) if f.severity != "info"] == []


def _vllm(spec: str, model: str = 'name = "deepseek-ai/DeepSeek-V3"\n', extra: str = "") -> list[Finding]:
    return lint_document(load_document(f"[model]\n{model}{extra}\n[speculative]\n{spec}"))


def test_vllm_rules() -> None:
    assert "too-many-draft-tokens" in _by_id(_vllm("num_speculative_tokens = 5\n"))
    assert "too-many-draft-tokens" not in _by_id(_vllm("num_speculative_tokens = 4\n"))
    assert "too-many-draft-tokens" not in _by_id(_vllm("enabled = false\nnum_speculative_tokens = 8\n"))
    llama = _by_id(_vllm('method = "mtp"\n', model='name = "meta-llama/Llama-3.1-8B"\n'))
    assert llama["untrained-draft"].severity == "warning"
    assert "untrained-draft" not in _by_id(_vllm('method = "mtp"\n'))
    eagle = _vllm(
        'method = "eagle"\nmodel = "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"\n', 'name = "meta-llama/x"\n'
    )
    assert "untrained-draft" not in _by_id(eagle)
    assert "deprecated-method" in _by_id(_vllm('method = "deepseek_mtp"\n'))
    memory = _by_id(_vllm("num_speculative_tokens = 1\n", extra="gpu_memory_utilization = 0.9\n"))
    assert memory["gpu-memory-high-with-spec"].line == 3
    off = _vllm("enabled = false\n", extra="gpu_memory_utilization = 0.95\n")
    assert "gpu-memory-high-with-spec" not in _by_id(off)
    assert "spec-feature-conflict" in _by_id(
        _vllm("num_speculative_tokens = 1\n", extra="enable_lora = true\n")
    )
    bad = _by_id(_vllm("num_speculative_tokens = 40\n"))
    assert bad["invalid-value"].severity == "error" and bad["invalid-value"].line == 5
    unknown = _by_id(_vllm("num_speculative_tokens = 1\nspeculative_tokens_typo = 3\n"))
    assert unknown["unknown-key"].key == "speculative.speculative_tokens_typo"
    old_flag = _by_id(_vllm("enabled = true\n", extra="num_speculative_tokens = 2\n"))
    assert old_flag["removed-key"].key == "model.num_speculative_tokens"


def test_sim_section_is_known_and_not_linted() -> None:
    findings = _vllm("num_speculative_tokens = 1\n[sim]\nbase_step_ms = 25\nwhatever = { a = 1 }\n")
    assert "unknown-key" not in _by_id(findings)


def _sglang(**fields: object) -> dict[str, Finding]:
    data = {"model_path": "deepseek-ai/DeepSeek-V3", "speculative_algorithm": "EAGLE", **fields}
    return _by_id(lint_document(load_document(json.dumps(data, indent=2), "sglang_json")))


def test_sglang_rules() -> None:
    assert "sglang-unknown-algorithm" not in _sglang(speculative_algorithm="nextn")  # case-insensitive
    auto = _sglang(speculative_eagle_topk=1)
    assert auto["sglang-auto-choice"].severity == "error"
    assert "sglang-auto-choice" not in _sglang()
    assert "sglang-draft-tokens-adjusted" not in _sglang(
        speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4
    )
    assert "sglang-draft-tokens-adjusted" not in _sglang(
        speculative_num_steps=3, speculative_eagle_topk=4, speculative_num_draft_tokens=8
    )
    assert "too-many-draft-tokens" in _sglang(speculative_num_steps=6)
    assert _sglang(pp_size=2)["spec-feature-conflict"].severity == "error"
    assert "spec-feature-conflict" in _sglang(speculative_algorithm="NGRAM", enable_dp_attention=True)
    assert "untrained-draft" in _sglang(model_path="meta-llama/Llama-3.1-8B-Instruct")
    assert "untrained-draft" not in _sglang(model_path="meta-llama/x", speculative_draft_model_path="eagle/x")
    assert "gpu-memory-high-with-spec" in _sglang(mem_fraction_static=0.92)


def _client(**fields: object) -> dict[str, Finding]:
    data = {"base_url": "http://127.0.0.1:8000/v1", **fields}
    return _by_id(lint_document(load_document(json.dumps(data), "client_json")))


def test_client_rules() -> None:
    assert "client-timeout-short" in _client(timeout=30, stream=True)
    assert "client-timeout-short" not in _client(timeout=30, stream=False)
    assert "client-timeout-short" not in _client(timeout=120, stream=True)
    assert "client-retries-high" in _client(max_retries=5)
    assert "client-retries-high" not in _client(max_retries=3)
    removed = _client(extra_body={"enable_speculative": True})
    assert removed["removed-key"].key == "extra_body.enable_speculative"
    assert _client(timeout=0)["invalid-value"].severity == "error"
    assert "invalid-value" in _client(api_key_env="sk-abc-123")
    assert "invalid-value" in _client(base_url="ftp://x")
