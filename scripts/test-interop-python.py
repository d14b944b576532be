"""Interop tests: Hubbub's /echo, /healthz and /metrics driven by Python's `websockets` client.

Run through scripts/test-interop.sh, which starts hubbub and sets:
  HB_WS    e.g. ws://127.0.0.1:41234   (plain listener; also serves /healthz, /metrics)
  HB_WSS   e.g. wss://127.0.0.1:41235  (TLS listener, self-signed dev certificate)
  HB_CA    optional; certificate to trust for HB_WSS (default config/dev-cert/cert.pem)
  INTEROP_API_KEY  the operator key the server was started with (GET /metrics needs it)

Needs websockets >= 13 (the `websockets.asyncio` API) and pytest. Tests are plain sync
functions that drive asyncio with asyncio.run, so no pytest asyncio plugin is involved.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import ssl
import urllib.error
import urllib.parse
import urllib.request

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
TEST_TIMEOUT = 60.0  # seconds, per test
MIB = 1024 * 1024


def _env_url(name: str, scheme: str) -> str:
    value = os.environ.get(name, "").rstrip("/")
    if not value:
        pytest.fail(f"{name} is not set: run this file through scripts/test-interop.sh", pytrace=False)
    if urllib.parse.urlsplit(value).scheme != scheme:
        pytest.fail(f"{name}={value!r} should be a {scheme}:// URL", pytrace=False)
    return value


def _ssl_context() -> ssl.SSLContext:
    ca = pathlib.Path(os.environ.get("HB_CA") or REPO_ROOT / "config" / "dev-cert" / "cert.pem")
    if not ca.is_file():
        pytest.fail(f"certificate to trust for wss not found: {ca} (run config/make-dev-cert.sh)", pytrace=False)
    # Full verification: chain (the self-signed cert is its own trust anchor) and hostname.
    return ssl.create_default_context(cafile=str(ca))


def _base(scheme: str) -> str:
    return _env_url("HB_WS", "ws") if scheme == "ws" else _env_url("HB_WSS", "wss")


def _connect(scheme: str, compression: str | None, path: str = "/echo"):
    return connect(
        _base(scheme) + path,
        ssl=_ssl_context() if scheme == "wss" else None,
        compression=compression,
        max_size=8 * MIB,
        open_timeout=15,
        close_timeout=10,
        ping_interval=None,  # no keepalive pings of our own mixed into the tests
    )


def _run(coro, timeout: float = TEST_TIMEOUT):
    async def bounded():
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def _http_base() -> str:
    parts = urllib.parse.urlsplit(_env_url("HB_WS", "ws"))
    return f"http://{parts.netloc}"


def _http_get(path: str, headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(_http_base() + path, headers={"Accept": "*/*", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode("utf-8", "replace")


SCHEMES = ["ws", "wss"]
COMPRESSIONS = [pytest.param("deflate", id="deflate"), pytest.param(None, id="nocompression")]


def _describe(message: str | bytes) -> str:
    kind = "text" if isinstance(message, str) else "binary"
    return f"{kind} message of {len(message)} {'chars' if kind == 'text' else 'bytes'}"


async def _echo_once(ws, message: str | bytes) -> None:
    await ws.send(message)
    reply = await ws.recv()
    assert type(reply) is type(message), f"sent a {_describe(message)}, got back a {_describe(reply)}"
    assert reply == message, f"echo of a {_describe(message)} differs (got {_describe(reply)})"


# ---------------------------------------------------------------- WebSocket /echo


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_echo_messages(scheme: str, compression: str | None) -> None:
    compressible = ("Hubbub echoes every message back, same opcode. " * 30000)[:MIB]
    assert len(compressible) == MIB
    messages: list[tuple[str, str | bytes]] = [
        ("text", "hello, hubbub"),
        ("utf-8 text", "héllo wörld ✓ 🎶 — ünïcödé"),
        ("binary", bytes(range(256)) * 4),
        ("empty text", ""),
        ("empty binary", b""),
        ("1 MiB compressible text", compressible),
        ("256 KiB random binary", os.urandom(256 * 1024)),
        ("text after the large ones", "still here"),
    ]

    async def scenario() -> None:
        async with _connect(scheme, compression) as ws:
            for label, message in messages:
                try:
                    await _echo_once(ws, message)
                except ConnectionClosed as err:
                    pytest.fail(f"connection closed while echoing the {label} message: {err}", pytrace=False)

    _run(scenario())


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_ping_pong(scheme: str, compression: str | None) -> None:
    async def scenario() -> None:
        async with _connect(scheme, compression) as ws:
            for payload in (b"", b"hubbub-ping", os.urandom(125)):
                pong = await ws.ping(payload)
                latency = await asyncio.wait_for(pong, 10)
                assert latency >= 0
            # The connection still echoes after the control frames.
            await _echo_once(ws, "after pings")

    _run(scenario())


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_normal_close(scheme: str, compression: str | None) -> None:
    async def scenario() -> None:
        ws = await _connect(scheme, compression)
        await _echo_once(ws, "about to close")
        await ws.close(CloseCode.NORMAL_CLOSURE, "bye")
        received = ws.protocol.close_rcvd
        assert received is not None, "the server did not answer our close frame with one of its own"
        assert received.code == CloseCode.NORMAL_CLOSURE, f"server close code {received.code}, expected 1000"
        assert ws.close_code == 1000

    _run(scenario())


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_extension_negotiation(scheme: str, compression: str | None) -> None:
    async def scenario() -> None:
        async with _connect(scheme, compression) as ws:
            header = ws.response.headers.get_all("Sec-WebSocket-Extensions")
            names = [ext.name for ext in ws.protocol.extensions]
            if compression == "deflate":
                assert header, "offered permessage-deflate but the server accepted no extension"
                assert names == ["permessage-deflate"], f"negotiated extensions {names} (header {header})"
            else:
                assert not header, f"offered no extension but the server sent Sec-WebSocket-Extensions: {header}"
                assert names == []
            await _echo_once(ws, "negotiated")

    _run(scenario())


@pytest.mark.parametrize("scheme", SCHEMES)
def test_concurrent_clients(scheme: str) -> None:
    clients, per_client = 50, 100

    async def client(n: int) -> int:
        async with _connect(scheme, "deflate") as ws:
            for i in range(per_client):
                message: str | bytes = f"client {n} message {i}" if i % 2 == 0 else f"{n}:{i}".encode() * 3
                await _echo_once(ws, message)
        return per_client

    async def scenario() -> None:
        results = await asyncio.gather(*(client(n) for n in range(clients)), return_exceptions=True)
        errors = [(n, r) for n, r in enumerate(results) if isinstance(r, BaseException)]
        assert not errors, f"{len(errors)} of {clients} clients failed; first: client {errors[0][0]}: {errors[0][1]!r}"
        assert sum(results) == clients * per_client

    _run(scenario(), timeout=120)


# ---------------------------------------------------------------- HTTP on the same port


def test_healthz() -> None:
    status, _, body = _http_get("/healthz")
    assert status == 200, f"GET /healthz answered {status}: {body[:200]!r}"


def test_metrics() -> None:
    key = os.environ["INTEROP_API_KEY"]
    status, _, body = _http_get("/metrics")
    assert status == 401, f"GET /metrics without the operator key answered {status}"
    assert key not in body
    status, _, _ = _http_get("/metrics", {"Authorization": "Bearer wrong-" + key})
    assert status == 401, f"GET /metrics with a wrong key answered {status}"
    status, content_type, body = _http_get("/metrics", {"Authorization": "Bearer " + key})
    assert status == 200, f"GET /metrics answered {status}: {body[:200]!r}"
    assert content_type.startswith(("text/plain", "application/openmetrics-text")), (
        f"GET /metrics Content-Type is {content_type!r}, not Prometheus text"
    )
    assert "# TYPE" in body, f"GET /metrics has no '# TYPE' line: {body[:300]!r}"



@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_wss_speaks_tls_1_2_and_1_3(version):
    async def run():
        ctx = _ssl_context()
        ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, version)
        async with connect(_base("wss") + "/echo", ssl=ctx, open_timeout=15) as ws:
            await ws.send("tls " + version)
            assert await ws.recv() == "tls " + version
            assert ws.transport.get_extra_info("ssl_object").version() == version.replace("_", ".")

    _run(run())
