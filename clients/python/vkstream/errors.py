"""Typed exceptions, one per wire error code (docs/PROTOCOL.md section 6)."""


class VkstreamError(Exception):
    """Base class. ``code`` is the wire error code ("" for client-side failures)."""

    code = ""

    def __init__(self, message="", *, code=None, field=None, request_id=None, retry_after_ms=0):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.field = field
        self.request_id = request_id
        self.retry_after_ms = retry_after_ms

    def __str__(self):
        parts = [self.code or "error", self.message]
        if self.field:
            parts.append("(field %s)" % self.field)
        if self.request_id:
            parts.append("(request %s)" % self.request_id)
        return ": ".join(p for p in parts[:2] if p) + "".join(" " + p for p in parts[2:])


class ConnectionClosedError(VkstreamError):
    """The server closed the connection (or it broke) while a request was pending."""


class NotRunningError(ConnectionClosedError):
    """Nothing listens at the endpoint: vkstreamd is not running there (the message says how to start it)."""


class ProtocolViolationError(VkstreamError):
    """The server sent something that is not valid protocol (bad frame, not a map, ...)."""


class ClientTimeoutError(VkstreamError):
    """No answer within the client's timeout."""


class BadFrameError(VkstreamError):
    code = "bad_frame"


class FrameTooLargeError(VkstreamError):
    code = "frame_too_large"


class InvalidRequestError(VkstreamError):
    code = "invalid_request"


class UnknownTypeError(VkstreamError):
    code = "unknown_type"


class MissingFieldError(VkstreamError):
    code = "missing_field"


class InvalidFieldError(VkstreamError):
    code = "invalid_field"


class UnsupportedVersionError(VkstreamError):
    code = "unsupported_version"


class NotFoundError(VkstreamError):
    code = "not_found"


class AlreadyExistsError(VkstreamError):
    code = "already_exists"


class OverloadedError(VkstreamError):
    code = "overloaded"


class TooManyRequestsError(VkstreamError):
    code = "too_many_requests"


class PromptTooLongError(VkstreamError):
    code = "prompt_too_long"


class CapacityExceededError(VkstreamError):
    code = "capacity_exceeded"


class RequestCancelledError(VkstreamError):
    code = "cancelled"


class DeadlineExceededError(VkstreamError):
    code = "deadline_exceeded"


class UnsupportedError(VkstreamError):
    code = "unsupported"


class UnauthorizedError(VkstreamError):
    code = "unauthorized"


class ShuttingDownError(VkstreamError):
    code = "shutting_down"


class SlowConsumerError(VkstreamError):
    code = "slow_consumer"


class DeviceError(VkstreamError):
    code = "device_error"


class ModelLoadFailedError(VkstreamError):
    """The named model exists but could not be loaded (bad file, not enough memory, ...)."""

    code = "model_load_failed"


class InternalError(VkstreamError):
    code = "internal"


class PullFailedError(VkstreamError):
    """A ``pull`` could not download the model (network, HTTP error, size or sha256 mismatch)."""

    code = "pull_failed"


ERROR_CLASSES = {
    cls.code: cls
    for cls in (
        BadFrameError, FrameTooLargeError, InvalidRequestError, UnknownTypeError, MissingFieldError,
        InvalidFieldError, UnsupportedVersionError, NotFoundError, AlreadyExistsError, OverloadedError,
        TooManyRequestsError, PromptTooLongError, CapacityExceededError, RequestCancelledError,
        DeadlineExceededError, UnsupportedError, UnauthorizedError, ShuttingDownError, SlowConsumerError,
        DeviceError, ModelLoadFailedError, InternalError, PullFailedError,
    )
}


def error_from_message(msg):
    """The typed exception for a server ``error`` map (answer or stream event).

    Unknown codes (newer servers) become a plain VkstreamError carrying the code."""
    code = msg.get("code") or ""
    cls = ERROR_CLASSES.get(code, VkstreamError)
    kwargs = dict(field=msg.get("field"), request_id=msg.get("id"), retry_after_ms=msg.get("retry_after_ms") or 0)
    if cls is VkstreamError:
        kwargs["code"] = code
    return cls(str(msg.get("message") or ""), **kwargs)
