"""The embedded broker: kombu's filesystem transport, made safe for concurrent publishers.

kombu's `filesystem` transport (5.7) creates a message file under its final name and only then
writes the message into it, and a consumer takes a file by moving it out of the folder,
without the writer's lock. A consumer that polls while a publisher is between the two reads an
empty or half-written file; `json.loads` raises, and the worker stops with "Unrecoverable
error: JSONDecodeError" (found under `make run` with load). Here a message is written to a
hidden temporary file in the same folder and renamed into place (atomic on POSIX), so a
consumer only ever sees whole messages; and a file that still cannot be read (left by an
older version, a full disk, a hand edit) is logged and moved aside to `bad/` beside the
queue folder instead of stopping the worker.

project/celery.py registers this class under kombu's own `filesystem` alias, so every
`filesystem://` URL (the default, or set by hand) gets it in every process that loads the
project: web, worker and beat.
"""

import json
import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.json import dumps, loads

logger = logging.getLogger("contextstore.broker")

TEMP_PREFIX = ".writing-"  # never ends in ".<queue>.msg", so no consumer takes it


class Channel(filesystem.Channel):
    # the stubs of kombu.transport.filesystem.Channel and its base name the argument differently
    def _put(self, queue: str, payload: dict[str, Any], **kwargs: Any) -> None:  # type: ignore[override]
        # kombu's own name: milliseconds first, so the folder's sort order is publish order.
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        folder = self.data_folder_out
        temp = os.path.join(folder, f"{TEMP_PREFIX}{uuid.uuid4()}")
        try:
            with open(temp, "wb") as f:
                f.write(dumps(payload).encode())
            os.replace(temp, os.path.join(folder, name))
        except OSError as exc:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        """kombu's `_get`, but a message that cannot be decoded is moved aside, not raised."""
        wanted = f"{queue}.msg"
        processed = self.processed_folder if self.store_processed else tempfile.gettempdir()
        for filename in sorted(os.listdir(self.data_folder_in)):
            if filename.partition(".")[2] != wanted:
                continue
            taken = os.path.join(processed, filename)
            try:
                shutil.move(os.path.join(self.data_folder_in, filename), processed)
            except OSError:
                continue  # taken by another consumer meanwhile
            try:
                with open(taken, "rb") as f:
                    payload = f.read()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            try:
                message = loads(payload.decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                self._set_aside(taken, filename, exc)
                continue
            if not self.store_processed:
                os.remove(taken)
            return message
        raise Empty()

    def _set_aside(self, taken: str, filename: str, exc: Exception) -> None:
        bad = Path(self.data_folder_in).parent / "bad"
        bad.mkdir(parents=True, exist_ok=True)
        try:
            shutil.move(taken, bad / filename)
        except OSError:
            logger.exception("could not move the unreadable message %s aside", taken)
        logger.error("broker: message %s is not a message (%s: %s); moved to %s, the worker goes on",
                     filename, type(exc).__name__, exc, bad)


class Transport(filesystem.Transport):
    Channel = Channel

    @property
    def default_connection_params(self) -> dict[str, Any]:
        # A folder, not a host: without a default hostname kombu does not warn at every start
        # that "No hostname was supplied" (twice per worker start under `make run`).
        return {"port": self.default_port}
