"""The grader's end of one worker's pipes: messages written and read within a call's deadline.

A message is written to the worker (`post`) or read from it (`receive`) within a call's deadline, each
bounded in size; a worker that closes its end, or sends what is no message, has died (`WorkerDied`). Where
there is no sandbox (Windows), the worker's stdout is read by a thread instead (`PlainReader`).
"""

from __future__ import annotations

import os
import queue
import selectors
import threading
import time
from collections.abc import Callable
from typing import IO

from grader.runtime.codec import CodecError, dumps, loads
from grader.sandbox.deadlines import Deadline


class WorkerDied(Exception):
    """The worker ended, or broke the protocol, during a call."""


class WorkerPipe:
    """The two pipes of one running worker, seen from the grader: `reader` what it sends, `writer` what it
    is sent (plain: buffered streams of a process without a sandbox, read by a thread). `death_reason`
    says why the worker stopped answering once a pipe is closed."""

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        message_bytes: int,
        poll: float,
        death_reason: Callable[[], str],
        plain: bool = False,
    ):
        self.reader, self.writer = reader, writer
        self._message_bytes, self._poll, self._death_reason = message_bytes, poll, death_reason
        self._plain = PlainReader(reader) if plain else None
        if self._plain is None:
            os.set_blocking(reader.fileno(), False)  # polled first, then waited for (`_read`)
            os.set_blocking(writer.fileno(), False)  # a worker that reads nothing cannot block the grader
            self._readable = selectors.DefaultSelector()  # one per worker: most calls take well under 1 ms
            self._readable.register(reader, selectors.EVENT_READ)
            self._writable = selectors.DefaultSelector()
            self._writable.register(writer, selectors.EVENT_WRITE)
        self._buffer = bytearray()
        self.last_size = 0  # the length of the last message received

    def post(self, message: dict, deadline: Deadline) -> bool:
        """Write one message to the worker; False once `deadline` has passed with the worker's pipe still
        full (a worker that does not read its answers)."""
        data = memoryview(dumps(message).encode("utf-8") + b"\n")
        fd = self.writer.fileno()
        while data:
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                if deadline.passed():
                    return False
                self._writable.select(deadline.poll_seconds())
            except OSError:
                raise WorkerDied(self._death_reason()) from None
        return True

    def receive(self, deadline: Deadline, waiting_only: bool = False) -> dict | None:
        """The next message, or None once the deadline has passed: checked before each message and each
        chunk, whether or not the worker's messages are waiting already (`waiting_only`: only while none
        is, for a hello that may have waited for the grader since its worker was started ahead)."""
        if not waiting_only and deadline.passed():
            return None
        end = self._buffer.find(b"\n")
        while end < 0:  # each chunk is searched once and appended in place: linear in the message
            if (not waiting_only and deadline.passed()) or (chunk := self._read(deadline)) is None:
                return None
            if not chunk:
                raise WorkerDied(self._death_reason())
            if (newline := chunk.find(b"\n")) >= 0:
                end = len(self._buffer) + newline
            self._buffer += chunk
            if end < 0 and len(self._buffer) > self._message_bytes:
                raise WorkerDied("the answer was larger than the grader accepts")
        if end > self._message_bytes:
            raise WorkerDied("the answer was larger than the grader accepts")
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self.last_size = end
        try:
            message = loads(line.decode("utf-8", "replace"))
        except CodecError:
            raise WorkerDied("the worker sent something that is not a message") from None
        if type(message) is not dict:
            raise WorkerDied("the worker sent something that is not a message")
        return message

    def _read(self, deadline: Deadline) -> bytes | None:
        """The worker's next bytes (b"" once it has closed its end), or None once the deadline has passed;
        polled for `poll` seconds before this process sleeps until they come."""
        if self._plain is not None:
            return self._plain.read(deadline)
        fd = self.reader.fileno()
        spin_until = time.perf_counter() + self._poll
        while True:
            try:
                return os.read(fd, 1 << 20)
            except BlockingIOError:
                pass
            if time.perf_counter() < spin_until:
                continue
            if deadline.passed():
                return None
            self._readable.select(deadline.poll_seconds())

    def close(self) -> None:
        handles = (
            (self.reader, self.writer)
            if self._plain
            else (self._readable, self._writable, self.reader, self.writer)
        )
        for handle in handles:
            try:
                handle.close()
            except OSError:
                pass


class PlainReader:
    """A plain worker's stdout, read by a thread (Windows cannot wait on a pipe with a timeout): the
    grader takes its chunks from a queue, waiting at most until the call's deadline."""

    def __init__(self, stream: IO[bytes]):
        self.chunks: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        while True:
            try:
                chunk = stream.read1(1 << 20)
            except (OSError, ValueError):  # closed here when the worker is killed
                chunk = b""
            self.chunks.put(chunk)
            if not chunk:
                return

    def read(self, deadline: Deadline) -> bytes | None:
        while True:
            try:
                return self.chunks.get(timeout=max(0.001, deadline.poll_seconds()))
            except queue.Empty:
                if deadline.passed():
                    return None
