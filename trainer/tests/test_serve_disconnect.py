"""A client that hangs up stops its generation: a non-streamed request nobody will read frees its batch slots."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlparse

import httpx2 as httpx
import pytest
from volt_trainer.model import DEFAULT_MODEL


def active_sequences(url: str) -> float:
    for line in httpx.get(f"{url}/metrics", timeout=60).text.splitlines():
        if line.startswith("volt_serve_active_sequences "):
            return float(line.split()[1])
    raise AssertionError("volt_serve_active_sequences missing from /metrics")


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_hung_up_requests_stop_decoding(server_url: str, stream: bool) -> None:
    # Long answers (ignore_eos) that would decode for minutes on a CPU; the client hangs up once they are decoding.
    body = json.dumps(
        {
            "model": DEFAULT_MODEL,
            "messages": [{"role": "user", "content": "Count to a thousand."}],
            "max_tokens": 900,
            "ignore_eos": True,
            "temperature": 0,
            "stream": stream,
        }
    ).encode()
    url = urlparse(server_url)
    sockets = []
    for _ in range(3):
        s = socket.create_connection((url.hostname, url.port))
        s.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        sockets.append(s)
    assert wait_for(lambda: active_sequences(server_url) >= 3, 60), "the three requests never started decoding"
    for s in sockets:
        s.close()
    assert wait_for(lambda: active_sequences(server_url) == 0, 30), (
        "sequences of clients that hung up are still decoding"
    )
    # The server still answers.
    answer = httpx.post(
        f"{server_url}/v1/chat/completions",
        timeout=120,
        json={"model": DEFAULT_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
    )
    assert answer.status_code == 200, answer.text
