"""AsyncContextStore's connections on asyncio streams (contextstore_client/_asyncio_net.py): each
test runs on that backend and on anyio's, httpcore's own, and expects the same outcome: answers
over kept-alive and over TLS connections, a connection the server closed while idle replaced,
and the failures the client's retry rules read (a refused connection retried, a lost answer to
a POST not, a read timeout on a GET retried, an untrusted certificate a connection failure)."""

import asyncio
import datetime
import ipaddress
import ssl

import contextstore_client as cs_client
import httpcore
import httpx
import pytest
from contextstore_client._asyncio_net import AsyncioBackend
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

BACKENDS = ["asyncio", "anyio"]


class Server:
    """A scripted HTTP/1.1 server: each request is answered {"iteration": n} (n counts requests),
    kept alive unless `close_after`; with `silent`, never answered."""

    def __init__(self, *, silent: bool = False, close_after: bool = False) -> None:
        self.silent, self.close_after = silent, close_after
        self.requests: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.requests.append(head.split(b"\r\n")[0])
                if self.silent:
                    await reader.read()  # until the client gives up and closes
                    break
                body = b'{"iteration": %d, "state": {}, "memory": [], "revision": 1}' % len(self.requests)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def start(self, tls: ssl.SSLContext | None = None) -> tuple[asyncio.Server, int]:
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=tls)
        return server, server.sockets[0].getsockname()[1]


def connect(backend: str, url: str, **options) -> cs_client.AsyncContextStore:
    store = cs_client.AsyncContextStore(url, "cs_t", backoff=0.001, **options)
    pool = store._http._transport._pool
    assert isinstance(pool._network_backend, AsyncioBackend)  # what every AsyncContextStore gets
    if backend == "anyio":
        pool._network_backend = httpcore.AnyIOBackend()
    return store


def handle(store: cs_client.AsyncContextStore) -> cs_client.AsyncThreadHandle:
    return cs_client.AsyncThreadHandle(store, cs_client.Thread(id=7, session=1, session_key="s", name="main"))


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[ssl.SSLContext, str]:
    """A self-signed certificate for 127.0.0.1: the server's context and the CA file's path."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context, str(folder / "cert.pem")


@pytest.mark.parametrize("backend", BACKENDS)
def test_answers_on_a_kept_alive_connection_and_after_the_server_closed_it(backend):
    async def scenario() -> None:
        kept = Server()
        server, port = await kept.start()
        async with server, connect(backend, f"http://127.0.0.1:{port}") as store:
            assert [await handle(store).increment_iteration() for _ in range(3)] == [1, 2, 3]
            assert kept.connections == 1
        closing = Server(close_after=True)
        server, port = await closing.start()
        async with server, connect(backend, f"http://127.0.0.1:{port}") as store:
            assert await handle(store).increment_iteration() == 1
            await asyncio.sleep(0.1)  # the server has closed the idle connection
            assert await handle(store).increment_iteration() == 2  # a POST: not a retry
            assert closing.connections == 2

    asyncio.run(scenario())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_lost_answer_is_retried_for_a_get_and_not_for_a_post(backend):
    async def scenario() -> None:
        silent = Server(silent=True)
        server, port = await silent.start()
        async with server, connect(backend, f"http://127.0.0.1:{port}", timeout=0.3, retries=2) as store:
            with pytest.raises(cs_client.ConnectionFailed) as lost:
                await handle(store).increment_iteration()
            assert isinstance(lost.value.__cause__, httpx.ReadTimeout) and len(silent.requests) == 1
            with pytest.raises(cs_client.ConnectionFailed) as again:
                await handle(store).state()
            assert isinstance(again.value.__cause__, httpx.ReadTimeout) and len(silent.requests) == 4

    asyncio.run(scenario())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_connection_is_a_connect_error(backend):
    async def scenario() -> None:
        server, port = await Server().start()
        server.close()
        await server.wait_closed()
        async with connect(backend, f"http://127.0.0.1:{port}", retries=1) as store:
            with pytest.raises(cs_client.ConnectionFailed) as refused:
                await handle(store).increment_iteration()
            assert isinstance(refused.value.__cause__, httpx.ConnectError)

    asyncio.run(scenario())


@pytest.mark.parametrize("backend", BACKENDS)
def test_tls_with_a_trusted_and_an_untrusted_certificate(backend, certificate, monkeypatch):
    context, ca_file = certificate

    async def scenario(trusted: bool) -> None:
        tls = Server()
        server, port = await tls.start(context)
        async with server, connect(backend, f"https://127.0.0.1:{port}", retries=0) as store:
            if trusted:
                assert [await handle(store).increment_iteration() for _ in range(2)] == [1, 2]
                assert tls.connections == 1
            else:
                with pytest.raises(cs_client.ConnectionFailed) as untrusted:
                    await handle(store).increment_iteration()
                assert isinstance(untrusted.value.__cause__, httpx.ConnectError)
                assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value)
                assert tls.requests == []

    asyncio.run(scenario(trusted=False))
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)  # httpx trusts it (trust_env)
    asyncio.run(scenario(trusted=True))
