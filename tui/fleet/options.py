"""`--prometheus URL [--match SELECTOR] [--group-by LABEL]`, over spectop.toml's `prometheus` table; its
auth fields are kept only for the same URL, so a secret meant for one server is never sent to another."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from tui.settings import PrometheusSettings, Settings, SettingsError
from tui.validators import friendly_message


def add_fleet_arguments(parser: argparse.ArgumentParser, *, group_by: bool = True) -> None:
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="fleet mode: read this Prometheus server instead of scraping endpoints",
    )
    parser.add_argument(
        "--match",
        metavar="SELECTOR",
        help="with --prometheus: label matchers selecting the instances, e.g. '{job=\"vllm\"}'",
    )
    if group_by:
        parser.add_argument(
            "--group-by",
            metavar="LABEL",
            help="with --prometheus: label grouping the instances (default job; 'model' = model name)",
        )


def prometheus_settings(
    base: PrometheusSettings | None, url: str | None, match: str | None = None, group_by: str | None = None
) -> PrometheusSettings | None:
    """The settings file's `prometheus` table with the flags applied; None when neither is given."""
    if url is None and base is None:
        if match is not None or group_by is not None:
            raise SettingsError("--match and --group-by need --prometheus URL")
        return None
    data: dict[str, object] = {}
    if base is not None:
        data = base.model_dump()
    try:
        if url is not None:
            new_url = PrometheusSettings(url=url).url
            if base is None or base.url != new_url:
                data = {"url": new_url, "timeout_s": data.get("timeout_s", 10.0)}  # no secrets of another URL
        if match is not None:
            data["match"] = match
        if group_by is not None:
            data["group_by"] = group_by
        return PrometheusSettings.model_validate(data)
    except ValidationError as error:
        item = error.errors()[0]
        field = ".".join(str(part) for part in item["loc"]) or "prometheus"
        flag = {"url": "--prometheus", "match": "--match", "group_by": "--group-by"}.get(field, field)
        raise SettingsError(f"{flag}: {friendly_message(dict(item))}") from None


def apply_fleet_flags(settings: Settings, args: argparse.Namespace) -> Settings:
    """Put --prometheus / --match / --group-by into `settings.prometheus` (raises SettingsError)."""
    settings.prometheus = prometheus_settings(
        settings.prometheus,
        getattr(args, "prometheus", None),
        getattr(args, "match", None),
        getattr(args, "group_by", None),
    )
    return settings
