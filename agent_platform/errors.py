"""Service errors: each a class carrying its envelope code and HTTP status, so a service says what went wrong once and
every caller answers the same way. The API turns any of them into the error envelope in one handler
(agent_platform/api.py); pages read the status and message from the error. Every app may import this module."""

from collections.abc import Mapping
from typing import Any, ClassVar


class ServiceError(Exception):
    """Why a service refused. `field` names the input at fault, if one is; `detail` is machine-readable context."""

    code: ClassVar[str] = "invalid_request"
    status: ClassVar[int] = 400

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        detail: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.detail = detail
        self.headers: dict[str, str] = dict(headers or {})


class InvalidRequest(ServiceError):
    code = "invalid_request"
    status = 400

    @classmethod
    def of_field(cls, field: str, message: str, detail: Any = None) -> "InvalidRequest":
        """The input `field` is wrong: the message starts with the field's name, as the envelope's messages do."""
        return cls(f"{field}: {message}", field=field, detail=detail)


class PayloadTooLarge(ServiceError):
    code = "invalid_request"
    status = 413


class MethodNotAllowed(ServiceError):
    code = "invalid_request"
    status = 405


class UnsupportedMediaType(ServiceError):
    code = "unsupported_media_type"
    status = 415


class AuthenticationFailed(ServiceError):
    code = "authentication_error"
    status = 401


class Forbidden(ServiceError):
    code = "permission_error"
    status = 403


class NotFound(ServiceError):
    code = "not_found"
    status = 404


class Conflict(ServiceError):
    code = "conflict"
    status = 409


class RateLimited(ServiceError):
    code = "rate_limited"
    status = 429


class ServiceUnavailable(ServiceError):
    code = "service_unavailable"
    status = 503


# Every concrete error, for documentation and for tests that check each code maps to one status.
ERROR_CLASSES: tuple[type[ServiceError], ...] = (
    InvalidRequest,
    PayloadTooLarge,
    MethodNotAllowed,
    UnsupportedMediaType,
    AuthenticationFailed,
    Forbidden,
    NotFound,
    Conflict,
    RateLimited,
    ServiceUnavailable,
)
