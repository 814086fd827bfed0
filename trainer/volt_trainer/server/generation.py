"""Bridges the engine's scheduler thread to asyncio, and accumulates each choice's tokens and text."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from .chat_format import TOOL_CALL_OPEN
from .engine import Engine, TokenEvent
from .errors import ApiError
from .sampling import SamplingParams


@dataclass
class ChoiceState:
    """One choice's output so far; ``hold_tool_calls`` keeps text from ``<tool_call>`` on out of the content stream."""

    index: int
    hold_tool_calls: bool = False
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    tops: list[tuple[tuple[int, float], ...]] = field(default_factory=list)
    text: str = ""
    sent: int = 0  # characters of text already released as content
    finish_reason: str | None = None
    stop_reason: str | int | None = None

    def add(self, event: TokenEvent) -> str:
        """Record an event; return the content it releases."""
        if event.token is not None:
            self.token_ids.append(event.token.token_id)
            self.logprobs.append(event.token.logprob)
            self.tops.append(event.token.top)
        self.text += event.text
        self.finish_reason = event.finish_reason
        self.stop_reason = event.stop_reason
        end = len(self.text)
        if self.hold_tool_calls:
            start = self.text.find(TOOL_CALL_OPEN, max(0, self.sent - len(TOOL_CALL_OPEN)))
            if start != -1:
                end = start
            else:
                for k in range(min(len(TOOL_CALL_OPEN) - 1, end), 0, -1):
                    if self.text.endswith(TOOL_CALL_OPEN[:k]):
                        end -= k
                        break
            if event.finish_reason and start == -1:
                end = len(self.text)
        released = self.text[self.sent : max(end, self.sent)]
        self.sent = max(end, self.sent)
        return released

    @property
    def held(self) -> str:
        return self.text[self.sent :]


class Generation:
    """Submits one request's choices and yields ``(choice index, event)`` as tokens are produced."""

    def __init__(self, engine: Engine, model: str, prompt_ids: list[int], params: list[SamplingParams]) -> None:
        loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[int, TokenEvent]] = asyncio.Queue()
        self._engine = engine

        def sink_for(index: int):
            def sink(event: TokenEvent) -> None:
                try:
                    loop.call_soon_threadsafe(self._queue.put_nowait, (index, event))
                except RuntimeError:
                    pass  # the event loop is gone (server shutting down); nobody is listening

            return sink

        self.prompt_ids = prompt_ids
        self.served, self._seqs = engine.submit(model, prompt_ids, params, [sink_for(i) for i in range(len(params))])
        self._remaining = len(params)

    async def events(self) -> AsyncIterator[tuple[int, TokenEvent]]:
        try:
            while self._remaining:
                index, event = await self._queue.get()
                if event.error:
                    raise ApiError(500, f"generation failed: {event.error}")
                if event.finish_reason:
                    self._remaining -= 1
                yield index, event
        finally:
            self._engine.cancel(self._seqs)  # client gone or error: free the batch slots
