"""The serving engines a host lists for the page (`python app.py --server URL[,baseline=URL][,label=NAME][,model=NAME][,check=PRESET]`).

A visitor picks one by its label; the app only ever calls the addresses listed here, never one that arrives
in a request (a public page that fetched visitor-typed URLs would be a way into the host's network).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .client import base_url


@dataclass(frozen=True)
class Server:
    label: str                       # what the page's menu shows
    url: str                         # a vLLM server with speculation and per-request metrics
    baseline_url: str | None = None  # the same target without speculation, to race (optional)
    model: str | None = None         # the served model to ask for (None: the server's first)
    check: str | None = None         # a preset with the same target weights here: the exactness check's local pass


def parse_server(text: str) -> Server:
    """'http://h:8000/v1,baseline=http://h:8001/v1,label=Lab vLLM,model=NAME' -> Server (one line if malformed)."""
    url, *options = [part.strip() for part in text.split(",")]
    fields: dict = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in ("baseline", "label", "model", "check") or not value:
            raise ConfigError(f"--server takes URL[,baseline=URL][,label=NAME][,model=NAME][,check=PRESET], not {option!r}")
        fields[key] = value
    url = base_url(url)
    baseline = base_url(fields["baseline"]) if "baseline" in fields else None
    return Server(fields.get("label", url), url, baseline, fields.get("model"), fields.get("check"))


def by_label(servers: tuple[Server, ...], label) -> Server:
    """The listed server with this label; anything else is refused (a visitor cannot name an address)."""
    for server in servers:
        if server.label == label:
            return server
    raise ConfigError("pick one of the servers this page lists")
