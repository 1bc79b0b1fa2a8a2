"""The Hugging Face hub's address and whether it answers: HF_ENDPOINT where set (a mirror, or the tests' local
server on 127.0.0.1), HF_HUB_OFFLINE to say there is none. Read at each call, so a test or a server can set them."""

from __future__ import annotations

import functools
import os
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://huggingface.co"


def endpoint() -> str:
    """The hub's base URL, without a trailing slash."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline() -> bool:
    """Whether the user said there is no hub (HF_HUB_OFFLINE=1)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").strip().lower() in ("1", "true", "yes", "on")


def reachable(timeout_s: float = 3.0) -> bool:
    """Whether the hub answers (a TCP connection to its host, once per address and process); without it models load
    from the local caches only, at once, not after retries."""
    return not offline() and _answers(endpoint(), timeout_s)


@functools.lru_cache(maxsize=8)
def _answers(address: str, timeout_s: float) -> bool:
    import socket

    parts = urlsplit(address)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


reachable.cache_clear = _answers.cache_clear  # what a test that changes the network calls
