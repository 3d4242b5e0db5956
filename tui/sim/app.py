"""The simulator's HTTP face: starlette routes for the OpenAI API, /metrics, /health and /sim/control."""

from __future__ import annotations

import hmac
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tui.sim.config import SimConfig
from tui.sim.engine import MetricsRecorder, SimEngine, SimRequest
from tui.sim.faults import GARBAGE_METRICS, FaultSettings, control_error
from tui.sim.gpu_page import CONTENT_TYPE as GPU_CONTENT_TYPE
from tui.sim.gpu_page import GPU_METRICS_PATH, SimGpus
from tui.sim.logs import VERSIONS, LogWriter
from tui.sim.openai_shapes import BODIES, ChunkMaker, GenerateBody, error_body
from tui.sim.per_request import ResponseOptions, StepLog, decorate, sglang_meta_info


class ServedSim(Protocol):
    """What the routes read of the running server (tui.sim.server.SimServer, which builds this app: a
    protocol, so that this module does not import that one back)."""

    flavor: str
    config: SimConfig
    engine: SimEngine
    recorder: MetricsRecorder
    log: LogWriter
    faults: FaultSettings
    api_key: str | None
    gpu: SimGpus | None
    accepting: bool
    rng: random.Random
    responses: ResponseOptions
    step_log: StepLog | None

    @property
    def model(self) -> str: ...

    def control(self, **changes: Any) -> dict[str, Any]: ...


MAX_BODY_BYTES = 4 * 1024 * 1024
DISCONNECT_AFTER_CHUNKS = 3


class SimulatedDisconnect(ConnectionAbortedError):
    """Raised inside a stream to drop the connection mid-response (the disconnect fault)."""


class _HideSimulatedDisconnects(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SimulatedDisconnect))


logging.getLogger("uvicorn.error").addFilter(_HideSimulatedDisconnects())


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, param), status_code=status)


class AccessMiddleware:
    """Access log lines (when the response starts, as uvicorn logs them) and HTTP metrics (when it ends)."""

    def __init__(self, app: ASGIApp, sim: ServedSim, known_paths: set[str]) -> None:
        self.app = app
        self.sim = sim
        self.known_paths = known_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = 500
        sent = 0
        client = scope.get("client") or ("127.0.0.1", 0)
        method, path = scope["method"], scope["path"]

        async def counting_send(message: Message) -> None:
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                if not path.startswith("/sim/"):
                    self.sim.log.access(f"{client[0]}:{client[1]}", method, path, status)
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            length = dict(scope.get("headers") or []).get(b"content-length", b"0")
            request_bytes = int(length) if length.isdigit() else 0
            handler = path if path in self.known_paths else "none"  # bounded values, as the instrumentator
            elapsed = time.monotonic() - started
            self.sim.recorder.http_request(method, handler, status, request_bytes, sent, elapsed)


Handler = Callable[[ServedSim, Request], Awaitable[Response]]
Endpoint = tuple[str, str, Handler]  # (method, path, handler)


def _refused(sim: ServedSim, request: Request) -> JSONResponse | None:
    if sim.api_key is None:
        return None
    header = request.headers.get("authorization", "")
    token = header[7:] if header.lower().startswith("bearer ") else ""
    if hmac.compare_digest(token.encode(), sim.api_key.encode()):
        return None
    return _error(401, "Unauthorized")


async def _read_json(request: Request) -> dict[str, Any] | JSONResponse:
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > MAX_BODY_BYTES:
            return _error(413, f"request body is larger than {MAX_BODY_BYTES} bytes")
        parts.append(part)
    try:
        data = json.loads(b"".join(parts))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return _error(400, f"JSON decode error: {error}")
    if not isinstance(data, dict):
        return _error(400, "expected a JSON object")
    return data


async def _until_finished(sim: ServedSim, sim_request: SimRequest) -> None:
    """Wait for a non-streamed request's last token; abort it if the client went away first."""
    try:
        while not (await sim_request.outbox.get()).finished:
            pass
    finally:
        sim.engine.abort(sim_request)


def _event(obj: dict[str, Any]) -> str:
    return f"data: {json.dumps(obj, ensure_ascii=False, separators=(',', ':'))}\n\n"


# ---- every flavour ---------------------------------------------------------------------------------


async def health(sim: ServedSim, request: Request) -> Response:
    if not sim.accepting:
        return Response(status_code=503)
    if sim.flavor == "llamacpp":
        return JSONResponse({"status": "ok"})
    return Response(status_code=200)


async def version(sim: ServedSim, request: Request) -> Response:
    return JSONResponse({"version": VERSIONS[sim.flavor]})


async def models(sim: ServedSim, request: Request) -> Response:
    if refused := _refused(sim, request):
        return refused
    config, model = sim.config, sim.model
    card: dict[str, Any] = {
        "id": model,
        "object": "model",
        "created": int(time.time()),
        "owned_by": sim.flavor,
    }
    if sim.flavor == "llamacpp":  # its own fields, in its order
        n_ctx = config.max_model_len // config.max_num_seqs
        card = {"id": model, "aliases": [model], "tags": [], **card, "meta": {"n_ctx": n_ctx}}
    else:
        card |= {"root": config.model, "parent": None, "max_model_len": config.max_model_len}
    return JSONResponse({"object": "list", "data": [card]})


async def metrics(sim: ServedSim, request: Request) -> Response:
    if sim.faults.garbage_metrics:
        return Response(GARBAGE_METRICS, media_type="text/plain")
    recorder = sim.recorder
    return Response(recorder.render(), headers={**recorder.headers(), "content-type": recorder.content_type})


async def gpu_metrics(sim: ServedSim, request: Request) -> Response:
    assert sim.gpu is not None
    return Response(sim.gpu.render(), headers={"content-type": GPU_CONTENT_TYPE})


async def control(sim: ServedSim, request: Request) -> Response:
    data = await _read_json(request)
    if isinstance(data, JSONResponse):
        return data
    try:
        applied = sim.control(**data)
    except (ValidationError, ValueError, TypeError) as error:
        return _error(400, control_error(error))
    return JSONResponse({"ok": True, "applied": applied})


async def generate(sim: ServedSim, request: Request, kind: str) -> Response:
    """`POST /v1/completions`, `/v1/chat/completions` and SGLang's native `/generate` (by `kind`)."""
    if refused := _refused(sim, request):
        return refused
    if not sim.accepting:
        return _error(503, "The server is shutting down.")
    data = await _read_json(request)
    if isinstance(data, JSONResponse):
        return data
    try:
        body = BODIES[kind].model_validate(data)
        prompt_text, prompt_tokens, limit = body.request()  # prompt_tokens None: the engine counts the text
    except ValidationError as error:
        first = error.errors()[0]
        param = ".".join(str(part) for part in first["loc"])
        return _error(400, f"{param}: {first['msg']}", None if kind == "generate" else param)
    except ValueError as error:
        return _error(400, str(error), "prompt")
    flavor = sim.flavor
    # SGLang's native API names no model, and the error fault is the OpenAI API's.
    if not isinstance(body, GenerateBody):
        if flavor != "llamacpp" and body.model not in (None, sim.model):
            return _error(404, f"The model `{body.model}` does not exist.", "model")
        if sim.faults.error_rate and sim.rng.random() < sim.faults.error_rate:
            return _error(500, "Internal server error (simulated fault)")
    engine = sim.engine
    sim_request = engine.new_request(
        endpoint=kind,
        prompt_text=prompt_text,
        prompt_tokens=prompt_tokens,
        max_tokens=limit,
        **body.sampling.engine_args(),
    )
    max_len, prompt = sim.config.max_model_len, sim_request.prompt_tokens
    if prompt >= max_len:
        if isinstance(body, GenerateBody):
            return _error(400, f"The input ({prompt} tokens) is longer than the model's context length "
                          f"({max_len} tokens).")  # fmt: skip
        return _error(400, f"This model's maximum context length is {max_len} tokens. However, your request "
                      f"has {prompt} input tokens.")  # fmt: skip
    engine.submit(sim_request)
    if isinstance(body, GenerateBody):
        rid = body.rid or sim_request.request_id
        details = body.return_spec_tokens_details
        if body.stream:
            return StreamingResponse(
                _sglang_stream(sim, sim_request, rid, details), media_type="text/event-stream"
            )
        await _until_finished(sim, sim_request)
        return JSONResponse(
            {"text": sim_request.text(), "meta_info": sglang_meta_info(sim_request, rid, details)}
        )
    maker = ChunkMaker(flavor, kind, sim.model, sim_request)
    if body.stream:
        drop = bool(sim.faults.disconnect_rate) and sim.rng.random() < sim.faults.disconnect_rate
        return StreamingResponse(
            _stream(sim, sim_request, maker, body.include_usage, drop),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"} if flavor == "llamacpp" else None,
        )
    await _until_finished(sim, sim_request)
    return JSONResponse(decorate(maker.full_response(), flavor, sim_request, sim.responses, sim.step_log))


async def _stream(
    sim: ServedSim, sim_request: SimRequest, maker: ChunkMaker, include_usage: bool, drop: bool
) -> AsyncIterator[str]:
    flavor = sim.flavor
    chunks = 0
    try:
        if maker.kind == "chat":
            yield _event(maker.role_chunk())
        while True:
            delivery = await sim_request.outbox.get()
            finish = (sim_request.finish_reason or "abort") if delivery.finished else None
            if flavor == "llamacpp":
                for index in range(delivery.start, delivery.end):
                    yield _event(maker.text_chunk(sim_request.output[index]))
                if delivery.finished:
                    yield _event(maker.finish_chunk(finish or "abort", include_timings=not include_usage))
            elif delivery.end > delivery.start or finish:
                yield _event(maker.text_chunk(sim_request.text(delivery.start, delivery.end), finish))
            chunks += 1
            if drop and chunks >= DISCONNECT_AFTER_CHUNKS and not delivery.finished:
                raise SimulatedDisconnect("simulated disconnect mid-stream")
            if delivery.finished:
                break
        if include_usage:
            usage = maker.usage_chunk()
            yield _event(decorate(usage, flavor, sim_request, sim.responses, sim.step_log))
        yield "data: [DONE]\n\n"
    finally:
        sim.engine.abort(sim_request)


async def flush_cache(sim: ServedSim, request: Request) -> Response:
    """vLLM's `POST /reset_prefix_cache` (dev mode) or SGLang's `POST /flush_cache`: drop the prefix cache."""
    if refused := _refused(sim, request):
        return refused
    sim.engine.prefix_cache.clear()
    if sim.flavor == "sglang":
        return Response("Cache flushed.\nPlease check backend logs for more details. ", status_code=200)
    return Response(status_code=200)


# ---- SGLang ----------------------------------------------------------------------------------------


async def _sglang_stream(
    sim: ServedSim, sim_request: SimRequest, rid: str, details: bool
) -> AsyncIterator[str]:
    try:
        while True:
            delivery = await sim_request.outbox.get()
            if delivery.end > delivery.start or delivery.finished:
                meta = sglang_meta_info(sim_request, rid, details)
                chunk = {"text": sim_request.text(0, delivery.end), "meta_info": meta, "index": 0}
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            if delivery.finished:
                break
        yield "data: [DONE]\n\n"
    finally:
        sim.engine.abort(sim_request)


async def server_info(sim: ServedSim, request: Request) -> Response:
    config = sim.config
    gauges: dict[str, float] = getattr(sim.recorder, "gauges", {})  # SGLang's recorder's
    state: dict[str, Any] = {"last_gen_throughput": gauges.get("gen_throughput", 0.0)}
    state["effective_max_running_requests_per_dp"] = config.max_num_seqs
    if config.k and gauges.get("spec_accept_length"):
        state["avg_spec_accept_length"] = gauges["spec_accept_length"]
    return JSONResponse(
        {
            "model_path": config.model,
            "served_model_name": sim.model,
            "tp_size": config.tensor_parallel_size,
            "mem_fraction_static": config.gpu_memory_utilization,
            "max_running_requests": config.max_num_seqs,
            "speculative_algorithm": config.spec_method if config.k else None,
            "speculative_num_steps": (config.adaptive_start if config.adaptive else config.k) or None,
            "speculative_eagle_topk": config.eagle_topk if config.k else None,
            "speculative_adaptive": config.adaptive is not None,  # its tier in use: the spec_num_steps gauge
            "speculative_num_draft_tokens": (config.num_draft_tokens or config.k + 1) if config.k else None,
            "disable_radix_cache": not config.enable_prefix_caching,
            "version": VERSIONS["sglang"],
            "internal_states": [state],
        }
    )


# ---- llama.cpp -------------------------------------------------------------------------------------


async def props(sim: ServedSim, request: Request) -> Response:
    config = sim.config
    n_ctx = config.max_model_len // config.max_num_seqs
    types = "none"  # llama.cpp's quirk: /props says "none" even when drafting (see /slots)
    return JSONResponse(
        {
            "default_generation_settings": {"params": {"speculative.types": types}, "n_ctx": n_ctx},
            "total_slots": config.max_num_seqs,
            "model_alias": sim.model,
            "model_path": sim.model,
            "build_info": VERSIONS["llamacpp"],
            "is_sleeping": False,
            "endpoint_slots": True,
            "endpoint_props": False,
            "endpoint_metrics": True,
        }
    )


async def slots(sim: ServedSim, request: Request) -> Response:
    config = sim.config
    busy = {running.slot: running for running in sim.engine.running}
    types = "none,draft-simple" if config.k else "none"
    n_ctx, body = config.max_model_len // config.max_num_seqs, []
    for slot in range(config.max_num_seqs):
        entry: dict[str, Any] = {"id": slot, "n_ctx": n_ctx, "speculative": bool(config.k)}
        entry["is_processing"] = slot in busy
        if slot in busy:
            running = busy[slot]
            remain = running.target_tokens - running.generated
            next_token = {"has_next_token": True, "n_remain": remain, "n_decoded": running.generated}
            entry.update(
                id_task=running.number,
                n_prompt_tokens=running.prompt_tokens + running.generated,
                params={"speculative.types": types},
                next_token=[next_token],
            )
        body.append(entry)
    return JSONResponse(body)


SHARED_ROUTES: list[Endpoint] = [
    ("GET", "/health", health),
    ("GET", "/version", version),
    ("GET", "/v1/models", models),
    ("GET", "/metrics", metrics),
    ("POST", "/v1/completions", partial(generate, kind="completion")),
    ("POST", "/v1/chat/completions", partial(generate, kind="chat")),
    ("POST", "/sim/control", control),
]
FLAVOR_ROUTES: dict[str, list[Endpoint]] = {
    "vllm": [
        ("GET", "/ping", health),
        ("POST", "/ping", health),
        ("POST", "/reset_prefix_cache", flush_cache),  # dev mode only in vLLM
    ],
    "sglang": [
        ("GET", "/health_generate", health),
        ("GET", "/server_info", server_info),
        ("POST", "/generate", partial(generate, kind="generate")),
        ("POST", "/flush_cache", flush_cache),
    ],
    "llamacpp": [("GET", "/props", props), ("GET", "/slots", slots)],
}
GPU_ROUTE: Endpoint = ("GET", GPU_METRICS_PATH, gpu_metrics)  # `spectop sim --gpu`


def build_app(sim: ServedSim) -> ASGIApp:
    table = [*SHARED_ROUTES, *FLAVOR_ROUTES[sim.flavor], *([GPU_ROUTE] if sim.gpu is not None else [])]
    routes = [Route(path, partial(handler, sim), methods=[method]) for method, path, handler in table]
    return AccessMiddleware(Starlette(routes=routes), sim, {path for _, path, _ in table})
