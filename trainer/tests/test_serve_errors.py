"""Bad requests get OpenAI-style 4xx errors naming the field, and the server keeps serving."""

from __future__ import annotations

import time

import httpx2 as httpx
import pytest
from conftest import ADMIN_HEADERS, ADMIN_KEY
from volt_trainer.model import DEFAULT_MODEL

USER = [{"role": "user", "content": "hi"}]
CASES = [
    ("/v1/chat/completions", {"model": DEFAULT_MODEL}, 400, "messages"),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": []}, 400, "messages"),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": "hi"}, 400, "messages"),
    (
        "/v1/chat/completions",
        {"model": DEFAULT_MODEL, "messages": [{"role": "wizard", "content": "x"}]},
        400,
        "messages.0.role",
    ),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": USER, "max_tokens": -1}, 400, "max_tokens"),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": USER, "temperature": "hot"}, 400, "temperature"),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": USER, "top_p": 0}, 400, "top_p"),
    ("/v1/chat/completions", {"model": DEFAULT_MODEL, "messages": USER, "max_tokens": 100000}, 400, "max_tokens"),
    ("/v1/chat/completions", {"model": "no-such-model", "messages": USER}, 404, "model"),
    ("/v1/chat/completions", {"messages": USER}, 400, "model"),
    ("/v1/completions", {"model": DEFAULT_MODEL, "prompt": [99999999]}, 400, "prompt"),
    ("/v1/completions", {"model": DEFAULT_MODEL, "prompt": "x", "n": 0}, 400, "n"),
    ("/v1/load_lora_adapter", {"lora_name": "a b", "lora_path": "/tmp"}, 400, "lora_name"),
]


@pytest.fixture(scope="module")
def http(server_url: str):
    with httpx.Client(base_url=server_url, timeout=120, headers=ADMIN_HEADERS) as client:
        yield client


@pytest.mark.parametrize(("path", "body", "status", "param"), CASES)
def test_bad_request_is_an_openai_error(http: httpx.Client, path: str, body: dict, status: int, param: str) -> None:
    response = http.post(path, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["param"] == param
    assert param.split(".")[0] in error["message"]
    assert set(error) == {"message", "type", "param", "code"}


def test_invalid_json_and_unknown_route(http: httpx.Client) -> None:
    broken = http.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and "JSON" in broken.json()["error"]["message"]
    missing = http.get("/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"


def test_server_still_healthy_after_bad_input(http: httpx.Client) -> None:
    for _, body, _, _ in CASES:
        http.post("/v1/chat/completions", json=body)
    assert http.get("/health").json()["status"] == "ok"
    ok = http.post("/v1/chat/completions", json={"model": DEFAULT_MODEL, "messages": USER, "max_tokens": 2})
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["role"] == "assistant"


def test_client_that_disconnects_mid_stream_frees_its_batch_slot(http: httpx.Client) -> None:
    body = {"model": DEFAULT_MODEL, "messages": USER, "max_tokens": 500, "ignore_eos": True, "stream": True}
    with http.stream("POST", "/v1/chat/completions", json=body) as streaming:
        lines = streaming.iter_lines()
        assert sum(1 for _, line in zip(range(4), (ln for ln in lines if ln.startswith("data: ")))) == 4
    deadline = time.monotonic() + 60
    while http.get("/health").json()["active"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert http.get("/health").json()["active"] == 0


@pytest.mark.parametrize("path", ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"])
@pytest.mark.parametrize("auth", [None, "Bearer wrong-key-123", ADMIN_KEY])
def test_control_endpoints_need_the_admin_key(server_url: str, path: str, auth: str | None) -> None:
    headers = {"authorization": auth} if auth else {}
    response = httpx.post(
        f"{server_url}{path}", json={"lora_name": "policy", "lora_path": "/tmp"}, headers=headers, timeout=60
    )
    assert response.status_code == 401, response.text
    assert response.json()["error"] == {
        "message": "control endpoints need the admin key (Authorization: Bearer <VOLT_MODEL_SERVER_ADMIN_KEY>)",
        "type": "authentication_error",
        "param": None,
        "code": "invalid_admin_key",
    }
    assert httpx.get(f"{server_url}/health", timeout=60).json()["status"] == "ok"


def test_control_endpoints_are_off_without_a_configured_key() -> None:
    import asyncio

    from volt_trainer.server.app import admin_guard
    from volt_trainer.server.errors import ApiError

    class _Request:
        headers = {"authorization": "Bearer anything-at-all"}

    with pytest.raises(ApiError) as refused:
        asyncio.run(admin_guard(None)(_Request()))  # type: ignore[arg-type]
    assert refused.value.status == 403 and refused.value.code == "admin_key_not_configured"
