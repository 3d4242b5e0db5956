"""Device check, run by hand on a machine with an NVIDIA GPU: read twice, a second apart, and print each
GPU's row (as the GPU screen shows it) and the energy between the reads (no GPU: why, and exit 0).

    python tests/gpu/check_device.py             # local GPUs through NVML (pip install 'spectop[gpu]')
    python tests/gpu/check_device.py --dcgm URL  # or a dcgm-exporter page"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run from a checkout without installing

from tui.gpu.history import GpuHistory
from tui.gpu.models import GpuReading
from tui.gpu.monitor import read_once
from tui.widgets.gpu_panel import gpu_rows

NO_GPU_PREFIX = "no GPU: "
ROW_WIDTH = 200  # every part of a row, the GPU's name too


async def check(dcgm_url: str | None, gap_s: float) -> int:
    first = await read_once(dcgm_url)
    if not isinstance(first, GpuReading):
        print(f"{NO_GPU_PREFIX}{first.reason}")
        return 0
    await asyncio.sleep(gap_s)
    second = await read_once(dcgm_url)
    reading = second if isinstance(second, GpuReading) else first
    print(f"GPUs from {dcgm_url or 'NVML'}:")
    for row in gpu_rows(reading.gpus, ROW_WIDTH):
        print(row.plain)
    if isinstance(second, GpuReading):
        history = GpuHistory()
        history.add(first)
        history.add(second)
        before = {gpu.key: gpu for gpu in first.gpus}
        for gpu in second.gpus:
            energy = history.energy_between(first.time, second.time, keys=[gpu.key])
            if energy is None and dcgm_url and before.get(gpu.key) == gpu:
                # dcgm-exporter serves its last collection between collections (every 30 s by default)
                print(
                    f"{gpu.label}: energy – (both reads returned the same cached exporter sample: "
                    "dcgm-exporter collects every 30 s unless started with e.g. -c 1000; try --gap 31)"
                )
            elif energy is None:
                print(f"{gpu.label}: energy – (no energy counter and no power reading)")
            else:
                print(
                    f"{gpu.label}: {energy.joules:.1f} J in {energy.seconds:.2f} s "
                    f"(mean {energy.mean_power_w or 0:.0f} W, from the {energy.method})"
                )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dcgm", metavar="URL", help="read this dcgm-exporter page instead of NVML")
    parser.add_argument("--gap", type=float, default=1.0, metavar="S", help="seconds between the reads")
    args = parser.parse_args(argv)
    return asyncio.run(check(args.dcgm, args.gap))


if __name__ == "__main__":
    sys.exit(main())
