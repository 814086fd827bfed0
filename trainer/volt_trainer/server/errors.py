"""OpenAI-style error bodies ``{error: {message, type, param, code}}`` for every failure the app returns."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    503: "service_unavailable",
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code

    def body(self) -> dict:
        kind = _TYPES.get(self.status, "server_error" if self.status >= 500 else "invalid_request_error")
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


def _validation_error(exc: RequestValidationError) -> ApiError:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    if first.get("type") == "json_invalid":
        return ApiError(400, f"request body is not valid JSON: {first.get('ctx', {}).get('error', first.get('msg'))}")
    path = [str(part) for part in first.get("loc", ()) if part != "body"]
    param = ".".join(path) or None
    message = f"{param}: {first.get('msg')}" if param else str(first.get("msg"))
    return ApiError(400, message, param=param)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(_validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(ApiError(exc.status_code, str(exc.detail)))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        return error_response(ApiError(500, f"internal error: {type(exc).__name__}: {exc}"))
