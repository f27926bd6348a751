"""Signing webhook bodies: HMAC-SHA256 over "<timestamp>.<body>" with the endpoint's secret (docs/webhooks.md)."""

import hashlib
import hmac

SIGNATURE_HEADER = "Pilothouse-Signature"
TIMESTAMP_HEADER = "Pilothouse-Timestamp"
EVENT_HEADER = "Pilothouse-Event"
DELIVERY_HEADER = "Pilothouse-Delivery"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"
