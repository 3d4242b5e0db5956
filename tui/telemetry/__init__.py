"""Telemetry core: scraping, Prometheus parsing, backend knowledge, windowed
figures, log tailing and typed log events. Never imports textual."""
