"""The address a request came from, for login throttling and the API's limit on bad tokens. Behind
TRUSTED_PROXIES proxies (each appending to X-Forwarded-For), the client is the entry that many places
from the right; anything further left was written by the client and proves nothing."""

from django.conf import settings


def client_address(request) -> str:
    hops = settings.TRUSTED_PROXIES
    if hops:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "")
