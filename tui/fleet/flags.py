"""The fleet-mode flags, importable without pydantic (so `spectop --help` stays fast)."""

from __future__ import annotations

import argparse

FLEET_DASHBOARD_PENDING = (
    "the fleet dashboard (--prometheus) is not wired into the dashboard yet; "
    "use `spectop snapshot --prometheus URL` meanwhile"
)


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
