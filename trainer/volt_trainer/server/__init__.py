"""Volt's OpenAI-compatible inference server: dynamic-batching engine, LoRA adapters, FastAPI app."""
