"""A `spectop sim --gpu` process for the GPU tests (the way a user starts it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.sim.conftest import sim_processes, write_vllm_config

SIM_GPU_MEMORY = 0.85


@pytest.fixture(scope="session")
def gpu_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a vLLM sim with --gpu (k = 2, gpu_memory_utilization 0.85), shared by the tests that
    only read its page; stopped afterwards."""
    config = write_vllm_config(
        tmp_path_factory.mktemp("gpu_sim") / "config.toml", k=2, gpu_memory_utilization=SIM_GPU_MEMORY
    )
    with sim_processes(["--gpu", "--config", str(config)]) as (url,):
        yield url
