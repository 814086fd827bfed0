"""Volt's OpenAI-compatible model server (vLLM extension fields, LoRA adapters, dynamic batching, prefix caching).

    VOLT_MODEL_SERVER_ADMIN_KEY=... python -m volt_trainer.serve --model smollm2-135m-instruct --host 127.0.0.1 --port 8500

Adapter load/unload need ``Authorization: Bearer $VOLT_MODEL_SERVER_ADMIN_KEY`` (read from the environment, never
argv, which other local users can see); without the variable they are disabled.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass

import torch
import uvicorn

from .model import DEFAULT_MODEL, default_data_dir, load_model
from .server.app import build_app
from .server.engine import Engine
from .server.packed_engine import PackedEngine
from .server.packed_forward import supports as packed_supported

ENGINES = ("auto", "packed", "hf")
ADAPTER_STEPS = ("mixed", "separate")


@dataclass
class ServeConfig:
    model: str = DEFAULT_MODEL
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8500
    max_batch: int = 64  # one decode step for a whole GRPO batch of short calls: ~5x the tokens/s of 8 on 2 CPU cores
    max_model_len: int | None = None  # None: the model's own context (SmolLM2-135M: 8192)
    data_dir: str = ""
    device: str | None = None
    threads: int | None = None
    prefix_cache_mb: int = 512  # 0 turns prefix caching off
    engine: str = "auto"  # packed steps (Llama models) or the HF left-padded batch; auto = packed where supported
    adapter_steps: str = "mixed"  # packed: one forward for every adapter in flight, or one forward per adapter
    admin_key: str | None = None

    def __post_init__(self) -> None:
        if self.max_batch < 1:
            raise ValueError("max_batch: must be at least 1")
        if self.max_model_len is not None and self.max_model_len < 2:
            raise ValueError("max_model_len: must be at least 2")
        if self.threads is not None and self.threads < 1:
            raise ValueError("threads: must be at least 1")
        if self.adapter_steps not in ADAPTER_STEPS:
            raise ValueError(f"adapter_steps: must be one of {', '.join(ADAPTER_STEPS)}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine: must be one of {', '.join(ENGINES)}")
        if self.prefix_cache_mb < 0:
            raise ValueError("prefix_cache_mb: must be >= 0 (0 = off)")
        if not 0 <= self.port < 65536:
            raise ValueError("port: must be in [0, 65535]")
        if self.admin_key is not None and len(self.admin_key) < 8:
            raise ValueError("admin_key (VOLT_MODEL_SERVER_ADMIN_KEY): must be at least 8 characters")
        self.data_dir = self.data_dir or default_data_dir()


def parse_args(argv: list[str] | None = None) -> ServeConfig:
    parser = argparse.ArgumentParser(prog="volt-serve", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL, help="local HF model dir, or smollm2-135m-instruct")
    parser.add_argument("--served-model-name", default=None, help="name clients use (default: --model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8500)
    parser.add_argument("--max-batch", type=int, default=64, help="most sequences decoded together")
    parser.add_argument(
        "--max-model-len", type=int, default=None, help="prompt + completion token limit (default: the model's context)"
    )
    parser.add_argument("--data-dir", default="", help="model cache root (default: $VOLT_DATA_DIR or .volt)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (1 is fastest on a shared, busy CPU)"
    )
    parser.add_argument(
        "--prefix-cache-mb", type=int, default=512, help="memory for reusable prompt-prefix KV blocks, MiB; 0 = off"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="packed: one packed forward per step for all sequences (Llama models); hf: the left-padded HF batch; auto: packed where supported",
    )
    parser.add_argument(
        "--adapter-steps",
        choices=ADAPTER_STEPS,
        default="mixed",
        help="packed engine with several adapters in flight: mixed = one forward for all (each LoRA applied to its own rows), separate = one forward per adapter",
    )
    return ServeConfig(**vars(parser.parse_args(argv)), admin_key=os.environ.get("VOLT_MODEL_SERVER_ADMIN_KEY") or None)


def model_context(model) -> int:
    """The context the model was trained for (`max_position_embeddings`), which the server serves unless told less."""
    return int(getattr(model.config, "max_position_embeddings", None) or 2048)


def make_engine(config: ServeConfig) -> Engine:
    if config.threads:
        torch.set_num_threads(config.threads)
    model, tokenizer = load_model(config.model, config.data_dir, config.device)
    packed = config.engine == "packed" or (config.engine == "auto" and packed_supported(model))
    options = dict(
        max_batch=config.max_batch,
        max_model_len=config.max_model_len or model_context(model),
        prefix_cache_bytes=config.prefix_cache_mb << 20,
    )
    if packed:
        return PackedEngine(
            model,
            tokenizer,
            config.served_model_name or config.model,
            mix_adapters=config.adapter_steps == "mixed",
            **options,
        )
    return Engine(model, tokenizer, config.served_model_name or config.model, **options)


async def serve(config: ServeConfig) -> None:
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(make_engine(config), config.admin_key), host=config.host, port=config.port, log_level="warning"
        )
    )
    task = asyncio.create_task(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.05)
    if server.started:
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"volt-serve listening on http://{config.host}:{port}", flush=True)
    await task


def main(argv: list[str] | None = None) -> None:
    asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
