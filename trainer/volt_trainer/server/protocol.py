"""Request bodies (OpenAI + vLLM extension fields), validated by pydantic; unknown fields are ignored."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from .sampling import SamplingParams


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class _Sampling(BaseModel):
    model: str
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=1.0, ge=0, le=2)
    top_p: float = Field(default=1.0, gt=0, le=1)
    n: int = Field(default=1, ge=1, le=16)
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    return_token_ids: bool = False
    ignore_eos: bool = False

    @field_validator("stop")
    @classmethod
    def _stop_list(cls, value: str | list[str] | None) -> list[str] | None:
        if isinstance(value, list) and len(value) > 4:
            raise ValueError("at most 4 stop strings")
        return value

    def stop_strings(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)

    def sampling(self, default_max_tokens: int, logprobs: bool, top_logprobs: int) -> list[SamplingParams]:
        """One SamplingParams per choice; choice i uses seed + i so choices differ but stay reproducible."""
        return [
            SamplingParams(
                max_tokens=self.max_tokens or default_max_tokens,
                temperature=self.temperature,
                top_p=self.top_p,
                stop=self.stop_strings(),
                logprobs=logprobs,
                top_logprobs=top_logprobs,
                seed=None if self.seed is None else self.seed + i,
                ignore_eos=self.ignore_eos,
            )
            for i in range(self.n)
        ]


class ChatCompletionRequest(_Sampling):
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = Field(default=0, ge=0, le=20)
    max_completion_tokens: int | None = Field(default=None, ge=1)


class CompletionRequest(_Sampling):
    prompt: str | list[int] = Field(min_length=1)
    logprobs: int | None = Field(default=None, ge=0, le=20)  # completions API: number of top logprobs
    echo: Literal[False] = False


class LoadLoraRequest(BaseModel):
    lora_name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:/-]+$")
    lora_path: str = Field(min_length=1)
    load_inplace: bool = False


class UnloadLoraRequest(BaseModel):
    lora_name: str = Field(min_length=1)


class TokenizeRequest(BaseModel):
    """vLLM's POST /tokenize: a chat (rendered by the chat template) or a plain prompt, as the engine tokenizes it."""

    model: str | None = None
    prompt: str | None = None
    messages: list[ChatMessage] | None = None
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    add_special_tokens: bool = False
