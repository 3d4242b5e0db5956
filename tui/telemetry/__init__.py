"""Telemetry core: scraping, parsing, windowed figures, log tailing, log events. Never imports textual."""
