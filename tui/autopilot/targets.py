"""The servers the autopilot changes: a config file, a restart command, and where to ask if it is back.
A change is the guard's edit (`tui.advice.guard.guard_text`) written atomically, then the restart and the
health wait of the tune's `Changer`; a rollback writes back the exact bytes it replaced. In fleet mode
each instance's file and command come from templates ({instance}, {host}, {port}, {job})."""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass
from pathlib import Path

import httpx

from tui.advice.guard import file_k, guard_text
from tui.autopilot.policy import Table
from tui.configs.editing import open_config_async, unified_diff
from tui.configs.errors import ConfigError
from tui.tune.plan import TunePlanError, file_table
from tui.tune.runner import Changer

HEALTH_TIMEOUT_S = 120.0  # a server back after a restart within this (--health-timeout: a big model's load)


@dataclass(frozen=True)
class Change:
    ok: bool
    reason: str = ""
    diff: str = ""  # masked


@dataclass
class Target:
    name: str  # the instance (host:port) or the endpoint's URL
    config: Path
    restart_command: list[str]
    url: str  # base URL: /health and /metrics below it
    health_timeout_s: float = HEALTH_TIMEOUT_S

    def changer(self, client: httpx.AsyncClient) -> Changer:
        return Changer(
            self.config,
            self.restart_command,
            client,
            health_url=self.url + "/health",
            metrics_url=self.url + "/metrics",
            health_timeout_s=self.health_timeout_s,
        )

    async def running(self) -> tuple[int | None, Table | None]:
        """The file's k (0: speculation off; None: it cannot tell) and its k by batch size (None: none)."""
        try:
            opened = await open_config_async(self.config)
        except ConfigError:
            return None, None
        if opened.document is None:
            return None, None
        return file_k(opened.document), file_table(opened.document)

    async def edit(self, k: int | None = None, table: Table | None = None) -> tuple[str, str]:
        """The file's text, and as the guard writes `k` (None, 0: speculation off) or `table`; raises
        ConfigError or TunePlanError (a table on a file other than vLLM's) when that edit cannot be made."""
        opened = await open_config_async(self.config)
        if opened.document is None:
            raise ConfigError(f"{self.config} does not parse: {opened.syntax_error}")
        return opened.text, guard_text(opened.document, k, table)

    async def set_config(
        self, client: httpx.AsyncClient, k: int | None = None, table: Table | None = None
    ) -> Change:
        """Write k or the table, restart, wait until the server is back."""
        try:
            old, new = await self.edit(k, table)
        except (ConfigError, TunePlanError) as error:
            return Change(False, str(error))
        return await self.write(client, new.encode("utf-8"), old)

    async def write(self, client: httpx.AsyncClient, data: bytes, old_text: str | None = None) -> Change:
        """Write exactly `data` (a rollback: the bytes found), restart, wait until the server is back."""
        if old_text is None:
            old_text = (await asyncio.to_thread(self.config.read_bytes)).decode("utf-8", "replace")
        diff = unified_diff(old_text, data.decode("utf-8", "replace"), self.config.name)
        outcome = await self.changer(client).write_and_restart(data)
        return Change(outcome.ok, outcome.reason or "", diff)


def from_templates(
    instance: str,
    job: str | None,
    config_template: str,
    restart_template: str,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
) -> Target:
    """An instance's target: {instance}, {host}, {port}, {job} filled in (shell-quoted in the command)."""
    host, _, port = instance.rpartition(":")
    values = {"instance": instance, "host": host or instance, "port": port, "job": job or ""}
    quoted = {name: shlex.quote(value) for name, value in values.items()}
    return Target(
        instance,
        Path(config_template.format(**values)),
        shlex.split(restart_template.format(**quoted)),
        f"http://{instance}",
        health_timeout_s,
    )
