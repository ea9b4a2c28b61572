"""The request header every Kafka request starts with, as praha parses it.

Its own module because both the framing (which parses it) and the wire errors (which
carry it, so a refused request can still be answered with its correlation id) need it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The parsed request header; `size` is how many body bytes it took."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str = ""
    header_version: int = 1
    size: int = 0
