"""boto3 clients, made on first use (nothing at import: cold start) with short timeouts.

Endpoint and region come from botocore's own variables (AWS_ENDPOINT_URL, AWS_DEFAULT_REGION).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_lock = threading.Lock()


@functools.cache
def _config() -> Any:
    from botocore.config import Config

    # API Gateway gives up after 29 s; botocore's defaults wait 60 s per try.
    return Config(
        connect_timeout=2, read_timeout=5, retries={"max_attempts": 3, "mode": "standard"}
    )


_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    found = _clients.get(service)
    if found is not None:
        return found
    with _lock:
        if service not in _clients:
            import boto3

            _clients[service] = boto3.session.Session().client(service, config=_config())
        return _clients[service]


def reset() -> None:
    """Forget every client and PynamoDB connection (tests and `make run` move the endpoint)."""
    with _lock:
        _clients.clear()
    from chalicelib.signing_keys import forget_all
    from chalicelib.store.base import reset_connections

    reset_connections()
    forget_all()
