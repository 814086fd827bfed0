"""Volt trainer: model loading, OpenAI-compatible inference server, GRPO/PPO LoRA update."""
