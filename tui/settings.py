"""Monitor settings: `spectop.toml` from `--config`, `./spectop.toml` or the user config folder;
`--endpoint URL` works with none. API keys are never stored, only their variable's name."""

from __future__ import annotations

import argparse
import difflib
import os
import shlex
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from tui.auth import api_key_from_env
from tui.paths import user_config_dir
from tui.validators import (
    EnvName,
    HttpUrl,
    friendly_message,
    normalize_http_url,
    parse_matchers,
    scheme_was_added,
    without_credentials,
)

Backend = Literal["auto", "vllm", "sglang", "llamacpp", "openai"]

SETTINGS_FILE_NAME = "spectop.toml"


class SettingsError(Exception):
    """A settings file that cannot be used; the message names file, endpoint and field."""


class AlertSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    acceptance_warning: float = Field(0.6, ge=0.0, le=1.0, description="warn below this acceptance rate")
    acceptance_critical: float = Field(
        0.3, ge=0.0, le=1.0, description="critical below this: drafting slows the server down"
    )
    sustained_s: float = Field(
        30.0, ge=0.0, description="how long acceptance must stay low before the alert fires"
    )

    @model_validator(mode="after")
    def _critical_below_warning(self) -> AlertSettings:
        if self.acceptance_critical > self.acceptance_warning:
            raise ValueError("acceptance_critical must not be above acceptance_warning")
        return self


class EndpointSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    url: HttpUrl = Field(description="base URL of the server, e.g. http://127.0.0.1:8000")
    metrics_url: HttpUrl | None = Field(None, description="default: url + /metrics")
    backend: Backend = "auto"
    log_file: Path | None = None
    config_file: Path | None = Field(None, description="the server's config.toml / settings.json")
    model: str | None = None
    api_key_env: EnvName | None = Field(
        None, description="NAME of the environment variable holding the API key (never the key)"
    )
    restart_command: list[str] | None = Field(None, description="run without a shell after a config save")
    acceptance_threshold: float | None = Field(None, ge=0.0, le=1.0)
    guard: Literal["off", "ask", "auto"] = Field(
        "off", description="when acceptance stays below the threshold: offer (ask) or switch (auto) spec off"
    )
    guard_cooldown_s: float = Field(600.0, ge=0.0, description="the guard never acts twice within this")
    autopilot: Literal["off", "propose", "auto"] = Field(
        "propose", description="what `o` does here: nothing, propose (a dry run) or change k (proved)"
    )
    health_timeout_s: float | None = Field(
        None,
        gt=0.0,
        description="after a restart, how long /health may take to answer (a real vLLM: 30-90 s and more); "
        "default 30 s for the editor, 60 s for the guard and the tune screen",
    )
    gpu_metrics_url: HttpUrl | None = Field(None, description="a DCGM exporter page with this server's GPUs")
    gpus: list[int | str] | None = Field(None, description="the server's GPUs: NVML indices or UUIDs")

    @field_validator("restart_command", mode="before")
    @classmethod
    def _split_command(cls, value: object) -> object:
        return shlex.split(value) if isinstance(value, str) else value

    @property
    def resolved_metrics_url(self) -> str:
        return self.metrics_url or f"{self.url}/metrics"

    def api_key(self) -> str | None:
        """The key from the environment, or None. Never log or store the result."""
        return api_key_from_env(self.api_key_env)


class PrometheusSettings(BaseModel):
    """Fleet mode: read a Prometheus server instead of scraping each endpoint (`prometheus = {...}`)."""

    model_config = ConfigDict(extra="forbid")

    url: HttpUrl = Field(description="base URL of the Prometheus server, e.g. http://prometheus:9090")
    match: Annotated[str, AfterValidator(parse_matchers)] | None = Field(
        None, description='label matchers that select the instances, e.g. {job="vllm"}'
    )
    group_by: str = Field(
        "job",
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        description="label that groups instances in the table ('model' = the model name)",
    )
    bearer_token_env: EnvName | None = Field(
        None, description="NAME of the env variable holding a bearer token"
    )
    basic_auth_user: str | None = None
    basic_auth_password_env: EnvName | None = Field(
        None, description="NAME of the env variable holding the password"
    )
    tls_verify: bool = True
    timeout_s: float = Field(10.0, gt=0.0, le=300.0, description="timeout of each Prometheus request")


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    poll_interval_s: float = Field(2.0, gt=0.0, le=3600.0)
    window_s: float = Field(60.0, gt=0.0, description="sliding window for derived figures")
    history_s: float = Field(1800.0, gt=0.0, description="how much history sparklines and charts keep")
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    endpoints: list[EndpointSettings] = Field(default_factory=list)
    prometheus: PrometheusSettings | None = Field(None, description="fleet mode: read this Prometheus")
    source: Path | None = Field(None, exclude=True, description="file these settings came from")
    notes: list[str] = Field(default_factory=list, exclude=True, description="what spectop assumed")

    @model_validator(mode="after")
    def _unique_names(self) -> Settings:
        names = [endpoint.name for endpoint in self.endpoints]
        twice = next((name for index, name in enumerate(names) if name in names[:index]), None)
        if twice is not None:
            raise ValueError(f"endpoint name {twice!r} is used twice")
        return self


def endpoint_from_url(url: str, name: str | None = None) -> EndpointSettings:
    """An endpoint from a bare URL: either the base URL or the metrics URL."""
    url = url.strip().rstrip("/")
    metrics_url = None
    if url.endswith("/metrics"):
        metrics_url = url
        url = url[: -len("/metrics")]
    normalized = normalize_http_url(url)  # the same rule as the settings file: host:port gets http://
    if metrics_url is not None:
        metrics_url = f"{normalized}/metrics"
    host = normalized.split("://", 1)[1]
    return EndpointSettings(name=name or host, url=normalized, metrics_url=metrics_url)


def find_settings_file(config_path: str | os.PathLike[str] | None) -> Path | None:
    if config_path is not None:
        path = Path(config_path)
        if not path.is_file():
            raise SettingsError(f"{path}: settings file not found")
        return path
    for candidate in (Path.cwd() / SETTINGS_FILE_NAME, user_config_dir() / SETTINGS_FILE_NAME):
        if candidate.is_file():
            return candidate
    return None


def _describe_location(data: dict, location: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    if len(location) >= 2 and location[0] == "endpoints" and isinstance(location[1], int):
        index = location[1]
        endpoints = data.get("endpoints") or []
        entry = endpoints[index] if index < len(endpoints) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        parts.append(f"endpoint {name!r}" if name else f"endpoint #{index + 1}")
        location = location[2:]
    if location:
        parts.append("field " + ".".join(str(item) for item in location))
    return ", ".join(parts) or "top level"


def _model_at(location: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The settings model that holds the field at `location` (for "did you mean")."""
    parent = location[:-1]
    if len(parent) == 2 and parent[0] == "endpoints":
        return EndpointSettings
    sections: dict[object, type[BaseModel]] = {"alerts": AlertSettings, "prometheus": PrometheusSettings}
    return Settings if not parent else sections.get(parent[0]) if len(parent) == 1 else None


def _describe_problem(item: dict) -> str:
    message = friendly_message(item)
    location = tuple(item["loc"])
    if item.get("type") == "extra_forbidden" and location:
        model = _model_at(location)
        if model is not None:
            known = [name for name, field in model.model_fields.items() if not field.exclude]
            close = difflib.get_close_matches(str(location[-1]), known, n=1, cutoff=0.6)
            message += f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(known)}"
    return message


def _url_notes(data: dict, settings: Settings) -> list[str]:
    notes = []
    endpoints = data.get("endpoints")
    raw_endpoints = endpoints if isinstance(endpoints, list) else []
    for raw, endpoint in zip(raw_endpoints, settings.endpoints, strict=False):
        for field_name in ("url", "metrics_url"):
            given = raw.get(field_name) if isinstance(raw, dict) else None
            used = getattr(endpoint, field_name)
            if isinstance(given, str) and used and scheme_was_added(given, used):
                where = f"endpoint {endpoint.name!r}: {field_name} {given!r}"
                notes.append(f"{where} has no scheme; using {used}")
    return notes


def parse_settings(text: str, source: Path | None = None) -> Settings:
    label = str(source) if source else "<settings>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{label}: not valid TOML: {error}") from error
    try:
        settings = Settings.model_validate(data)
    except ValidationError as error:
        problems = [
            f"{label}: {_describe_location(data, tuple(item['loc']))}: {_describe_problem(dict(item))}"
            for item in error.errors()
        ]
        raise SettingsError("\n".join(problems)) from error
    settings.source = source
    settings.notes = [f"{label}: {note}" for note in _url_notes(data, settings)]
    if source is not None:
        # Relative paths in the file are relative to the file, not to the cwd.
        for endpoint in settings.endpoints:
            for attribute in ("log_file", "config_file"):
                path = getattr(endpoint, attribute)
                if path is not None and not path.is_absolute():
                    setattr(endpoint, attribute, (source.parent / path).resolve())
    return settings


def load_settings(
    config_path: str | os.PathLike[str] | None = None, endpoint_urls: list[str] | None = None
) -> Settings:
    """Settings from the first file found, plus endpoints given as URLs on the command line."""
    path = find_settings_file(config_path)
    settings = parse_settings(path.read_text(encoding="utf-8"), path) if path else Settings()
    if endpoint_urls:
        extra = []
        for url in endpoint_urls:
            try:
                endpoint = endpoint_from_url(url)
            except ValueError as error:  # a ValidationError too
                problem = error.errors()[0] if isinstance(error, ValidationError) else None
                why = error if problem is None else friendly_message(dict(problem))
                raise SettingsError(f"--endpoint {without_credentials(url)}: {why}") from error
            if scheme_was_added(url, endpoint.url):
                settings.notes.append(f"--endpoint {url}: no scheme given; using {endpoint.url}")
            extra.append(endpoint)
        # URLs on the command line replace the endpoints of a file found by lookup, and add to those of a
        # file named with --config.
        settings.endpoints = extra if config_path is None else [*settings.endpoints, *extra]
    return settings


def prometheus_settings(
    base: PrometheusSettings | None, url: str | None, match: str | None = None, group_by: str | None = None
) -> PrometheusSettings | None:
    """The settings file's `prometheus` table with the flags applied; None when neither is given."""
    if url is None and base is None:
        if match is not None or group_by is not None:
            raise SettingsError("--match and --group-by need --prometheus URL")
        return None
    data: dict[str, object] = base.model_dump() if base is not None else {}
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
    flags = (getattr(args, name, None) for name in ("prometheus", "match", "group_by"))
    settings.prometheus = prometheus_settings(settings.prometheus, *flags)
    return settings
