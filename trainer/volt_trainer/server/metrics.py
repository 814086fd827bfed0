"""``GET /metrics``: the engine's counters and prefix-cache state as Prometheus text (format 0.0.4)."""

from __future__ import annotations

from .engine import Engine


def _line(name: str, kind: str, help_text: str, value: float) -> str:
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n{name} {value}\n"


def render_metrics(engine: Engine) -> str:
    cache, stats, counters = engine.prefix_cache, engine.prefix_cache.stats, engine.counters
    rows = [
        ("volt_serve_prefix_cache_enabled", "gauge", "1 when prefix caching is on", int(cache.enabled)),
        (
            "volt_serve_prefix_cache_queries_total",
            "counter",
            "prompt tokens looked up in the prefix cache",
            stats.queries,
        ),
        (
            "volt_serve_prefix_cache_hits_total",
            "counter",
            "prompt tokens served from the prefix cache (prefill tokens saved)",
            stats.hits,
        ),
        (
            "volt_serve_prefix_cache_hit_rate",
            "gauge",
            "hits / queries since start",
            stats.hits / stats.queries if stats.queries else 0.0,
        ),
        ("volt_serve_prefix_cache_blocks", "gauge", "cached KV blocks", len(cache)),
        ("volt_serve_prefix_cache_bytes", "gauge", "bytes held by cached KV blocks", cache.bytes),
        ("volt_serve_prefix_cache_capacity_bytes", "gauge", "most bytes the prefix cache may hold", cache.max_bytes),
        ("volt_serve_prefix_cache_evictions_total", "counter", "blocks evicted to make room", stats.evictions),
        (
            "volt_serve_prefix_cache_invalidations_total",
            "counter",
            "blocks dropped because their adapter version was unloaded",
            stats.invalidations,
        ),
        ("volt_serve_prefill_tokens_total", "counter", "prompt tokens run through the model", counters.prefill_tokens),
        (
            "volt_serve_prefill_seconds_total",
            "counter",
            "seconds spent in prefill (a packed step mixing prefill and decode is split by token share)",
            counters.prefill_seconds,
        ),
        ("volt_serve_decode_tokens_total", "counter", "tokens produced by decode steps", counters.decode_tokens),
        (
            "volt_serve_decode_seconds_total",
            "counter",
            "seconds spent in decode (a packed step mixing prefill and decode is split by token share)",
            counters.decode_seconds,
        ),
        (
            "volt_serve_forward_passes_total",
            "counter",
            "model forward passes (each reads every weight once)",
            counters.forward_passes,
        ),
        (
            "volt_serve_mixed_adapter_passes_total",
            "counter",
            "forward passes that served several adapters (or an adapter and the base) at once",
            counters.mixed_adapter_passes,
        ),
        ("volt_serve_active_sequences", "gauge", "sequences being decoded", engine.active_count()),
    ]
    return "".join(_line(*row) for row in rows)
