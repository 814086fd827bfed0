"""Stop generating for a client that is gone: a non-streamed answer nobody will read still holds batch slots.

Starlette notices a dropped connection only while it streams a response, so a non-streamed handler would decode to
``max_tokens`` for an agent that timed out (and, on a loaded machine, slow every live request down). Like vLLM's
``with_cancellation``, the handler races the ASGI ``http.disconnect`` message; cancelling it frees its sequences
(``Generation.events`` cancels them in its ``finally``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from fastapi import Request, Response

CLIENT_CLOSED = 499  # nginx's "client closed request": nobody reads it, but logs and metrics do


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_disconnected(request: Request, work: Coroutine[Any, Any, Any]) -> Any:
    """The result of ``work``, or a 499 once the client has gone (``work`` is cancelled then)."""
    handler = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({handler, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not handler.done():
            handler.cancel()
        watcher.cancel()
    if handler.cancelled():
        return Response(status_code=CLIENT_CLOSED)
    return handler.result()
