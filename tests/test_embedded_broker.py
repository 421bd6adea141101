"""The embedded broker (`filesystem://`, project/broker.py) under concurrent publishers.

kombu's own filesystem transport let a consumer take a message file before its publisher had
written it: the consumer read an empty or partial file and raised JSONDecodeError, which
stopped the worker ("Unrecoverable error"). These tests use the transport as every process of
the project does, through the `filesystem://` URL.
"""

import multiprocessing
import random
import time
from pathlib import Path

from kombu import Connection

from project import broker

FORK = multiprocessing.get_context("fork")
PUBLISHERS, MESSAGES = 4, 200


def _options(root: Path) -> dict:
    folders = {"data_folder_in": str(root / "queue"), "data_folder_out": str(root / "queue"),
               "control_folder": str(root / "control"), "processed_folder": str(root / "processed")}
    for folder in folders.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    return {**folders, "store_processed": False}


def _publish(root: Path, publisher: int) -> None:
    with Connection("filesystem://", transport_options=_options(root)) as conn:
        queue = conn.SimpleQueue("race")
        for number in range(MESSAGES):
            time.sleep(random.random() * 0.01)  # keep the queue nearly empty: the consumer waits on it
            # a body that takes a moment to encode, as a task with a big argument does
            queue.put({"publisher": publisher, "number": number, "pad": ["x"] * 2000})


def test_a_consumer_polling_beside_many_publishers_reads_every_message_whole(tmp_path):
    publishers = [FORK.Process(target=_publish, args=(tmp_path, p)) for p in range(PUBLISHERS)]
    for process in publishers:
        process.start()
    received, failures = set(), []
    deadline = time.monotonic() + 60
    with Connection("filesystem://", transport_options=_options(tmp_path)) as conn:
        queue = conn.SimpleQueue("race")
        assert isinstance(conn.default_channel, broker.Channel)
        while len(received) + len(failures) < PUBLISHERS * MESSAGES and time.monotonic() < deadline:
            try:
                message = queue.get_nowait()  # as fast as it can: the race is at the file's birth
            except queue.Empty:
                continue
            except Exception as exc:  # kombu's own transport: JSONDecodeError on a half-written file
                failures.append(repr(exc))
                continue
            received.add((message.payload["publisher"], message.payload["number"]))
            message.ack()
    for process in publishers:
        process.join(30)
    assert failures == []
    assert len(received) == PUBLISHERS * MESSAGES
    assert not (tmp_path / "bad").exists()


def test_an_unreadable_message_is_set_aside_and_the_next_one_delivered(tmp_path, caplog):
    options = _options(tmp_path)
    with Connection("filesystem://", transport_options=options) as conn:
        queue = conn.SimpleQueue("jobs")
        # older than anything published now: the consumer meets it first
        (tmp_path / "queue" / "0_torn.jobs.msg").write_bytes(b'{"body": "eyJ')
        queue.put({"job": 7})
        message = queue.get(timeout=5)
        message.ack()
    assert message.payload == {"job": 7}
    assert [p.name for p in (tmp_path / "bad").iterdir()] == ["0_torn.jobs.msg"]
    assert (tmp_path / "bad" / "0_torn.jobs.msg").read_bytes() == b'{"body": "eyJ'
    assert "0_torn.jobs.msg is not a message" in caplog.text
    assert list((tmp_path / "queue").iterdir()) == []  # no temporary file left behind either
