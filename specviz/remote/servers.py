"""The serving engines a host lists for the page: `python app.py --server URL[,baseline=URL][,label=NAME][,model=NAME][,check=PRESET]`,
or spaces.yaml's `servers:` list (the same fields, one mapping a server; app/profile.py reads it).

A visitor picks one by its label; the app only ever calls the addresses listed here, never one that arrives
in a request (a public page that fetched visitor-typed URLs would be a way into the host's network).
`merge` joins the two lists, refusing a label listed twice (the menu could not tell them apart) and a `check`
that names no preset of the hosting profile (the exactness check's local pass would fail for every visitor).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .client import base_url

OPTIONS = ("baseline", "label", "model", "check")     # a server's fields besides its url (--server and spaces.yaml)


@dataclass(frozen=True)
class Server:
    label: str                       # what the page's menu shows
    url: str                         # a vLLM server with speculation and per-request metrics
    baseline_url: str | None = None  # the same target without speculation, to race (optional)
    model: str | None = None         # the served model to ask for (None: the server's first)
    check: str | None = None         # a preset with the same target weights here: the exactness check's local pass


def make_server(url: str, baseline: str | None = None, label: str | None = None, model: str | None = None,
                check: str | None = None) -> Server:
    """One listed server from its fields (addresses normalised by client.base_url; the label defaults to the url)."""
    url = base_url(url)
    return Server(label or url, url, base_url(baseline) if baseline else None, model, check)


def parse_server(text: str) -> Server:
    """'http://h:8000/v1,baseline=http://h:8001/v1,label=Lab vLLM,model=NAME' -> Server (one line if malformed)."""
    url, *options = [part.strip() for part in text.split(",")]
    fields: dict = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or key not in OPTIONS or not value:
            raise ConfigError(f"--server takes URL[,baseline=URL][,label=NAME][,model=NAME][,check=PRESET], not {option!r}")
        fields[key] = value
    return make_server(url, **fields)


def merge(listed: tuple[Server, ...], given: tuple[Server, ...], presets) -> tuple[Server, ...]:
    """spaces.yaml's servers, then --server's, in that order; `presets` are the profile's preset keys."""
    out: list[Server] = []
    for server in (*listed, *given):
        if any(s.label == server.label for s in out):
            raise ConfigError(f"two servers are listed under the label {server.label!r} (spaces.yaml servers and "
                              f"--server): give each its own label=NAME")
        if server.check is not None and server.check not in presets:
            raise ConfigError(f"server {server.label!r}: check={server.check} is not a preset of this profile "
                              f"({', '.join(presets)})")
        out.append(server)
    return tuple(out)


def by_label(servers: tuple[Server, ...], label) -> Server:
    """The listed server with this label; anything else is refused (a visitor cannot name an address)."""
    for server in servers:
        if server.label == label:
            return server
    raise ConfigError("pick one of the servers this page lists")
