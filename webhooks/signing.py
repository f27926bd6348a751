"""Signing webhook bodies: the Standard Webhooks headers, and our own legacy scheme for secrets not yet rotated.

Standard Webhooks (https://www.standardwebhooks.com): `webhook-signature` is `v1,` and the base64 HMAC-SHA256 of
"<webhook-id>.<webhook-timestamp>.<body>", keyed with the bytes the secret's base64 (after `whsec_`) encodes; several
signatures are separated by spaces, and a receiver accepts the message when one matches. Receivers verify with the
`standardwebhooks` library; we sign with the standard library's hmac rather than that library's `Webhook.sign`, so
the tests, which verify every delivery with the library, check us against an independent implementation, and so a
malformed secret of ours fails loudly here (the library's decoding skips characters outside base64 silently).
"""

import base64
import binascii
import hashlib
import hmac
from datetime import datetime

from .models import Endpoint, SecretScheme

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
EVENT_HEADER = "Pilothouse-Event"

# The scheme of before (docs/webhooks.md, "Endpoints added before Standard Webhooks"), sent while a legacy secret signs.
LEGACY_SIGNATURE_HEADER = "Pilothouse-Signature"
LEGACY_TIMESTAMP_HEADER = "Pilothouse-Timestamp"
LEGACY_DELIVERY_HEADER = "Pilothouse-Delivery"

SECRET_PREFIX = "whsec_"


def secret_key(secret: str) -> bytes:
    """The HMAC key of a Standard Webhooks secret: the bytes its base64 encodes."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a Standard Webhooks secret starts with whsec_")
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error as error:
        raise ValueError("a Standard Webhooks secret is whsec_ and standard base64") from error


def standard_signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def legacy_signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def signed_headers(endpoint: Endpoint, message_id: str, body: bytes, now: datetime) -> dict[str, str]:
    """The headers that identify and sign one attempt: one signature per secret signing at `now`.

    Standard secrets (the current one, and a retiring one during its grace) sign `webhook-signature`; a legacy secret
    (an endpoint never rotated, or the retiring secret of its first rotation) signs `Pilothouse-Signature` as before.
    """
    timestamp = int(now.timestamp())
    headers = {ID_HEADER: message_id, TIMESTAMP_HEADER: str(timestamp)}
    standard = []
    for secret, scheme in endpoint.signing_secrets(now):
        if scheme == SecretScheme.STANDARD:
            standard.append(standard_signature(secret, message_id, timestamp, body))
        else:
            headers[LEGACY_DELIVERY_HEADER] = message_id
            headers[LEGACY_TIMESTAMP_HEADER] = str(timestamp)
            headers[LEGACY_SIGNATURE_HEADER] = legacy_signature(secret, timestamp, body)
    if standard:
        headers[SIGNATURE_HEADER] = " ".join(standard)
    return headers
