"""Alert webhooks: which addresses may be posted to, the signature, one attempt (no database;
services/alerts.py records what happened).

Server-side request forgery: a rule's URL is written by a workspace's editor, and the worker
posts to it from inside the deployment. So only http and https, with a host and no
credentials in the URL; every address the host resolves to must be public (not loopback,
private, link-local — cloud metadata at 169.254.169.254 included —, shared, multicast or
reserved), checked when the rule is saved and again before every attempt (the name may resolve
elsewhere by then); redirects are never followed (a 3xx is a failed attempt). A deployment that
posts to its own network sets ALERT_WEBHOOK_ALLOW_PRIVATE. What remains: a name that resolves
to a public address for the check and a private one a moment later (DNS rebinding within one
attempt); a proxy or egress firewall closes that.

Signature: `X-Contextstore-Signature: sha256=<hex>`, the HMAC-SHA256 with the rule's secret of
`<X-Contextstore-Timestamp>.<body>` (the body as sent, bytes)."""

import hashlib
import hmac
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

SIGNATURE_HEADER = "X-Contextstore-Signature"
TIMESTAMP_HEADER = "X-Contextstore-Timestamp"


def url_problem(url: str, *, allow_private: bool, resolve: bool = True) -> str | None:
    """Why `url` may not be posted to, or None. `resolve`: look its host up (every attempt);
    without, only an address written as such (and localhost) is checked."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "The webhook URL is not a valid URL."
    if parts.scheme not in ("http", "https"):
        return "The webhook URL must start with http:// or https://."
    host = parts.hostname
    if not host:
        return "The webhook URL has no host."
    if parts.username is not None or parts.password is not None:
        return "The webhook URL may not hold a user name or password."
    if allow_private:
        return None
    if host == "localhost" or host.endswith(".localhost"):
        return "The webhook URL may not point at this machine."
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        if not resolve:
            return None
        try:
            infos = socket.getaddrinfo(host, port or (443 if parts.scheme == "https" else 80),
                                       type=socket.SOCK_STREAM)
        except OSError:
            return f"The webhook's host {host} does not resolve."
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if not address.is_global or address.is_multicast:
            return f"The webhook's host {host} is a private, local or reserved address ({address})."
    return None


def signature(secret: str, timestamp: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


@dataclass
class Attempt:
    ok: bool
    status: int | None = None
    error: str = ""


def post(url: str, *, body: bytes, secret: str, timestamp: str, event: str, timeout: float,
         allow_private: bool) -> Attempt:
    """One POST of `body`, signed; never follows a redirect. ok: a 2xx answer."""
    problem = url_problem(url, allow_private=allow_private)
    if problem:
        return Attempt(ok=False, error=problem)
    headers = {"Content-Type": "application/json", "User-Agent": "contextstore-alerts",
               "X-Contextstore-Event": event, TIMESTAMP_HEADER: timestamp,
               SIGNATURE_HEADER: signature(secret, timestamp, body)}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            response = client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        return Attempt(ok=False, error=f"{type(exc).__name__}: {exc}"[:500])
    if response.is_success:
        return Attempt(ok=True, status=response.status_code)
    what = "a redirect, not followed" if response.is_redirect else "not a 2xx answer"
    return Attempt(ok=False, status=response.status_code, error=f"HTTP {response.status_code} ({what})")
