"""Who a request comes from, as far as the server can tell: the key of the per-client cap.

A client chooses its own Gradio `session_hash` (a script can send a new one with every request),
so a cap keyed on it is no cap. The server's own view of the client is its address: the TCP peer
of the connection, or, behind a reverse proxy that the server trusts, the address that proxy
saw. On a Hugging Face Space (SPACE_ID set) every connection comes from the Space's proxy (an
internal 10.x address), which passes the visitor's address on in `X-Forwarded-For`; there, and
wherever SPECVIZ_TRUST_FORWARDED=1 says the app sits behind such a proxy, the key is the rightmost
address of that header that is not an internal hop (private, loopback, link-local or shared
address space). A visitor can prepend anything to the header, but the proxies append on its
right what they saw, so the rightmost outside address is the one the first proxy saw. Without a
trusted proxy the header is ignored (any client could send one).

An IPv6 client is keyed by its /64: one household or phone is given a whole /64 and may pick any
address inside it, so a key per address would be a key per request for a script. (An IPv4-mapped
IPv6 address is keyed as its IPv4 address.)
"""
from __future__ import annotations

import ipaddress
import os
from typing import Mapping

INTERNAL = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "::1/128", "fc00::/7", "fe80::/10"))


def behind_proxy(env: Mapping[str, str] | None = None) -> bool:
    """Does this server sit behind a proxy whose X-Forwarded-For it can believe?"""
    env = os.environ if env is None else env
    return bool(env.get("SPACE_ID")) or env.get("SPECVIZ_TRUST_FORWARDED", "") in ("1", "true")


def client_key(request, trust_forwarded: bool | None = None) -> str:
    """The address this request comes from ("" when the server cannot tell)."""
    trust = behind_proxy() if trust_forwarded is None else trust_forwarded
    if trust:
        forwarded = _header(request, "x-forwarded-for")
        for part in reversed([p.strip() for p in forwarded.split(",") if p.strip()]):
            address = _address(part)
            if address is not None and not any(address in net for net in INTERNAL):
                return keyed(address)
    client = getattr(request, "client", None)
    host = str(getattr(client, "host", "") or "")
    address = _address(host) if host else None
    return keyed(address) if address is not None else host


def keyed(address) -> str:
    """The per-client key of one address: IPv4 as it is, IPv6 as its /64 network."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _header(request, name: str) -> str:
    headers = getattr(request, "headers", None)
    try:
        return str(headers.get(name, "") or "") if headers is not None else ""
    except Exception:        # noqa: BLE001 (an odd header object: no forwarded address)
        return ""


def _address(text: str):
    try:
        return ipaddress.ip_address(text.split("%")[0].strip("[]"))
    except ValueError:
        return None
