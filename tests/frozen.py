"""A dependency that accepts connections and never answers (a frozen Redis, say)."""

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def frozen_server() -> Iterator[int]:
    """A TCP server on loopback that accepts every connection and never sends a byte; yields
    its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        server.close()
