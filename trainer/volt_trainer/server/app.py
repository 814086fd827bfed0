"""``build_app(engine, admin_key)``: the FastAPI app (routes + error shape); the process lives in volt_trainer.serve."""

from __future__ import annotations

import asyncio
import hmac
import time
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request
from fastapi.responses import PlainTextResponse

from .adapters import AdapterVersion
from .chat import chat_completions
from .chat_format import render_chat_prompt
from .completions import completions
from .disconnect import unless_disconnected
from .engine import Engine
from .errors import ApiError, install_error_handlers
from .metrics import render_metrics
from .protocol import ChatCompletionRequest, CompletionRequest, LoadLoraRequest, TokenizeRequest, UnloadLoraRequest


def admin_guard(admin_key: str | None):
    """Control endpoints (adapter load/unload) need ``Authorization: Bearer <admin key>``; without a key they are off."""

    async def require_admin(request: Request) -> None:
        if not admin_key:
            raise ApiError(
                403,
                "control endpoints are disabled: start the server with VOLT_MODEL_SERVER_ADMIN_KEY set",
                code="admin_key_not_configured",
            )
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {admin_key}".encode()):
            raise ApiError(
                401,
                "control endpoints need the admin key (Authorization: Bearer <VOLT_MODEL_SERVER_ADMIN_KEY>)",
                code="invalid_admin_key",
            )

    return require_admin


def build_app(engine: Engine, admin_key: str | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI):
        engine.start()
        try:
            yield
        finally:
            engine.stop()

    app = FastAPI(title="volt-serve", lifespan=lifespan)
    install_error_handlers(app)
    created = int(time.time())
    admin = [Depends(admin_guard(admin_key))]

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "active": engine.active_count()}

    @app.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(render_metrics(engine), media_type="text/plain; version=0.0.4")

    @app.get("/v1/models")
    async def models() -> dict:
        base = {
            "id": engine.base_name,
            "object": "model",
            "created": created,
            "owned_by": "volt",
            "root": engine.base_name,
            "parent": None,
        }
        adapters = [
            {
                "id": v.name,
                "object": "model",
                "created": created,
                "owned_by": "volt",
                "root": v.path,
                "parent": engine.base_name,
                "version": v.version,
            }
            for v in list(engine.adapters.served.values())
        ]
        return {"object": "list", "data": [base, *adapters]}

    @app.post("/v1/chat/completions")
    async def chat(request: ChatCompletionRequest, raw: Request):
        return await unless_disconnected(raw, chat_completions(engine, request))

    @app.post("/v1/completions")
    async def complete(request: CompletionRequest, raw: Request):
        return await unless_disconnected(raw, completions(engine, request))

    @app.post("/tokenize")
    async def tokenize(request: TokenizeRequest) -> dict:
        # vLLM's shape: exactly one of messages (chat template applied) or prompt.
        if (request.messages is None) == (request.prompt is None):
            raise ApiError(400, "give exactly one of messages or prompt", code="invalid_tokenize_request")
        if request.messages is not None:
            if not request.messages:
                raise ApiError(400, "messages: at least one message", code="invalid_tokenize_request")
            tokens = render_chat_prompt(
                engine.tokenizer, request.messages, request.tools, request.add_generation_prompt
            )
        else:
            tokens = engine.tokenizer(request.prompt, add_special_tokens=request.add_special_tokens)["input_ids"]
        return {"count": len(tokens), "max_model_len": engine.max_model_len, "tokens": tokens}

    @app.post("/v1/load_lora_adapter", dependencies=admin)
    async def load_lora(request: LoadLoraRequest) -> dict:
        future = engine.call(lambda: engine.adapters.load(request.lora_name, request.lora_path, request.load_inplace))
        version: AdapterVersion = await asyncio.wrap_future(future)
        return {
            "status": "ok",
            "lora_name": version.name,
            "version": version.version,
            "system_fingerprint": f"{version.name}@{version.version}",
        }

    @app.post("/v1/unload_lora_adapter", dependencies=admin)
    async def unload_lora(request: UnloadLoraRequest) -> dict:
        version = await asyncio.wrap_future(engine.call(lambda: engine.adapters.unload(request.lora_name)))
        return {"status": "ok", "lora_name": version.name, "version": version.version}

    return app
