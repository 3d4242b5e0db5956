"""GPU figures beside the speculative-decoding ones: NVML for the local GPUs, dcgm-exporter pages per
endpoint. Core: no textual; every source failure is a `GpuUnavailable` with its reason, never an error."""
