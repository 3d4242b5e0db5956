"""dcgm-exporter pages: the parser on both exporter layouts, and the source over a real socket."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.telemetry.metrics_test_server import Reply, ReplyServer
from tui.gpu.dcgm import DEFAULT_MAX_BYTES, parse_dcgm_page, read_dcgm
from tui.gpu.models import REASON_SW_POWER_CAP, GpuUnavailable
from tui.telemetry.prometheus import MetricsFormatError

SAMPLES = Path(__file__).parent / "samples"
MIB = 2**20


def _reference(text: str) -> dict[tuple[str, str], float]:
    """(field, gpu index) -> value, read by prometheus_client (whole GPUs only), for the cross-check."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "GPU_I_ID" not in sample.labels:
                out[(family.name, sample.labels["gpu"])] = sample.value  # a counter sample gets _total
    return out


def test_exporter_3x_page_two_gpus_with_every_label() -> None:
    text = (SAMPLES / "dcgm_exporter_3.3_h100x2.prom").read_text()
    reference = _reference(text)
    gpus = parse_dcgm_page(text)
    assert [gpu.index for gpu in gpus] == [0, 1]
    for gpu in gpus:
        index = str(gpu.index)
        used, free = reference[("DCGM_FI_DEV_FB_USED", index)], reference[("DCGM_FI_DEV_FB_FREE", index)]
        reserved = reference[("DCGM_FI_DEV_FB_RESERVED", index)]
        assert gpu.memory_used_bytes == used * MIB
        assert gpu.memory_total_bytes == (used + free + reserved) * MIB  # MiB -> bytes, reserved counted
        assert gpu.power_w == reference[("DCGM_FI_DEV_POWER_USAGE", index)]
        assert gpu.energy_j == pytest.approx(
            reference[("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", index)] / 1000
        )
        assert gpu.utilization_pct == reference[("DCGM_FI_DEV_GPU_UTIL", index)]
        assert gpu.sm_clock_mhz == reference[("DCGM_FI_DEV_SM_CLOCK", index)]
        assert gpu.temperature_c == reference[("DCGM_FI_DEV_GPU_TEMP", index)]
        assert gpu.dram_active == reference[("DCGM_FI_PROF_DRAM_ACTIVE", index)]
        assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.uuid is not None and gpu.uuid.startswith("GPU-")
    assert gpus[0].throttling is False
    assert gpus[1].throttle_reasons == REASON_SW_POWER_CAP
    assert gpus[0].memory_fraction is not None and gpus[0].memory_fraction > 0.95


def test_exporter_2x_page_mig_lines_blank_sentinels_and_missing_fields() -> None:
    text = (SAMPLES / "dcgm_exporter_2.x_a100_mig.prom").read_text()
    reference = _reference(text)
    (gpu,) = parse_dcgm_page(text)  # the MIG instance is not a second GPU
    assert gpu.uuid == "GPU-34319582-d595-d1c7-d1d2-179bcfa61660" and gpu.index == 0
    assert gpu.memory_used_bytes == reference[("DCGM_FI_DEV_FB_USED", "0")] * MIB  # not the MIG slice's
    assert gpu.dram_active == reference[("DCGM_FI_PROF_DRAM_ACTIVE", "0")]
    assert gpu.utilization_pct is None  # 2147483632: DCGM's int32 blank
    assert gpu.name is None  # 2.x has no modelName label
    assert gpu.throttle_reasons is None and gpu.throttling is None  # not a default counter
    assert gpu.temperature_c == 61


def test_readme_layout_spaces_in_labels_and_nan() -> None:
    # The layout of the exporter README's quick start: every HELP/TYPE first, `gpu="0", UUID=...`.
    text = (
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n"
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        'DCGM_FI_DEV_SM_CLOCK{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} NaN\n'
        'DCGM_FI_DEV_FB_USED{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 1024\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0", UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} +Inf\n'
        "DCGM_FI_DEV_COUNT 1\n"
    )
    (gpu,) = parse_dcgm_page(text)
    assert gpu.sm_clock_mhz == 139 and gpu.memory_used_bytes == 1024 * MIB
    assert gpu.power_w is None and gpu.temperature_c is None  # NaN / Inf are unknown, not numbers
    assert gpu.memory_total_bytes is None and gpu.memory_fraction is None  # no FB_FREE: total unknown
    assert gpu.energy_j is None and gpu.utilization_pct is None


def test_not_prometheus_text_raises_for_the_caller() -> None:
    with pytest.raises(MetricsFormatError):
        parse_dcgm_page("<html>login</html>\n")
    assert parse_dcgm_page("# nothing here\n") == []


@pytest.mark.parametrize(
    ("reply", "reason", "timeout_s"),
    [  # a timeout only the delayed reply is meant to reach; the others' is a hang guard for a busy host
        (Reply(b"oops", status=500), "HTTP 500", 60.0),
        (Reply(b"not { prometheus\n"), "not Prometheus text", 60.0),
        (Reply(b"vllm:num_requests_running 1\n"), "no DCGM_FI_DEV_* GPU samples", 60.0),
        (Reply(b"x" * (DEFAULT_MAX_BYTES + 1), chunked=True), "larger than", 60.0),
        (Reply(b"", delay_s=5.0), "timeout", 0.5),
    ],
)
async def test_source_failures_are_reasons(reply: Reply, reason: str, timeout_s: float) -> None:
    async with ReplyServer([reply]) as server, httpx.AsyncClient() as client:
        result = await read_dcgm(client, server.url + "/metrics", timeout_s=timeout_s)
    assert isinstance(result, GpuUnavailable) and reason in result.reason and server.url in result.reason


async def test_refused_connection_is_a_reason() -> None:
    async with ReplyServer([Reply(b"")]) as server:
        url = server.url
    async with httpx.AsyncClient() as client:
        result = await read_dcgm(client, url + "/metrics")
    assert isinstance(result, GpuUnavailable) and "refused" in result.reason


def test_exporter_3x_mig_page_instances_are_slices_of_their_gpu() -> None:
    # GPU 0 in MIG mode is on the page only as its four GPU instances (no whole-GPU line); GPU 1 is not.
    text = (SAMPLES / "dcgm_exporter_3.3_h100_mig.prom").read_text()
    slices: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "GPU_I_ID" in sample.labels:
                slices.setdefault(sample.labels["GPU_I_ID"], {})[family.name] = sample.value
    gpus = parse_dcgm_page(text)
    assert [gpu.index for gpu in gpus] == [0, 1]  # four instances are one GPU, not four
    mig, whole = gpus
    assert [part.instance_id for part in mig.slices] == ["1", "5", "13", "14"] and not whole.slices
    assert [part.profile for part in mig.slices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    for part in mig.slices:
        fields = slices[part.instance_id]
        assert part.memory_used_bytes == fields["DCGM_FI_DEV_FB_USED"] * MIB
        total = sum(fields[f"DCGM_FI_DEV_FB_{part}"] for part in ("USED", "FREE", "RESERVED"))
        assert part.memory_total_bytes == total * MIB
        assert part.engine_active == fields["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    used = sum(fields["DCGM_FI_DEV_FB_USED"] for fields in slices.values())
    assert mig.memory_used_bytes == used * MIB  # the instances' memory summed
    assert mig.memory_total_bytes == sum(part.memory_total_bytes or 0 for part in mig.slices)
    assert mig.power_w == slices["1"]["DCGM_FI_DEV_POWER_USAGE"]  # the GPU's, on every instance: not summed
    assert mig.energy_j == pytest.approx(slices["1"]["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] / 1000)
    assert mig.temperature_c == 55 and mig.sm_clock_mhz == 1755 and mig.throttling is False
    assert mig.utilization_pct is None  # GPU_UTIL reads 0 per MIG instance: not supported, not 0
    assert mig.dram_active is None  # per-instance ratios are normalised to the instance
    assert mig.name == "NVIDIA H100 80GB HBM3"
    assert whole.utilization_pct == 98 and whole.dram_active is not None


def test_a_mig_instance_without_memory_leaves_its_gpus_memory_unknown() -> None:
    labels = 'gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB"'
    text = (
        f'DCGM_FI_DEV_FB_USED{{{labels},GPU_I_PROFILE="3g.20gb",GPU_I_ID="1"}} 4000\n'
        f'DCGM_FI_DEV_FB_FREE{{{labels},GPU_I_PROFILE="3g.20gb",GPU_I_ID="1"}} 15000\n'
        f'DCGM_FI_DEV_POWER_USAGE{{{labels},GPU_I_PROFILE="3g.20gb",GPU_I_ID="1"}} 250\n'
        f'DCGM_FI_DEV_POWER_USAGE{{{labels},GPU_I_PROFILE="1g.5gb",GPU_I_ID="9"}} 250\n'
        f'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{labels},GPU_I_PROFILE="1g.5gb",GPU_I_ID="9"}} 4\n'
    )
    (gpu,) = parse_dcgm_page(text)
    assert gpu.power_w == 250 and gpu.throttle_reasons == REASON_SW_POWER_CAP  # the old field name too
    assert gpu.memory_used_bytes is None and gpu.memory_total_bytes is None  # one instance's is unknown
    assert [part.label for part in gpu.slices] == ["MIG 3g.20gb #1", "MIG 1g.5gb #9"]
    assert gpu.slices[0].memory_fraction == pytest.approx(4000 / 19000)
    assert gpu.slices[1].memory_fraction is None
