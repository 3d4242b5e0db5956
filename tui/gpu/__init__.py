"""GPU figures (NVML locally, dcgm-exporter pages per endpoint); a source failure is a `GpuUnavailable`."""
