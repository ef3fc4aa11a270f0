"""A gunicorn worker that reads each request whole, under a deadline, before a thread serves it.

gunicorn's ``gthread`` worker hands a connection to one of its threads as soon as a byte
arrives; the thread then blocks reading the rest of the headers and the body. Sixteen
clients that declare a body and send it a byte at a time hold sixteen threads, and every
respondent waits (or times out). This worker reads requests in its main loop instead,
without blocking, into a buffer per connection: only a request whose headers and declared
body have all arrived goes to a thread, which then parses it from memory. A request not
whole within :data:`READ_DEADLINE` seconds of its first byte (or of the connection, for the
first request) is answered 408 and its connection closed.

Requests the buffer does not wait for: a declared body over the app's limit (the app
answers 413 without reading it), headers longer than :data:`MAX_HEAD` (gunicorn refuses
them), and a chunked body (no length is declared; it is handed on once its last chunk is
seen, or at the size limit). ``Expect: 100-continue`` is answered here, so that the client
sends the body the buffer waits for; the header is then dropped from what the app sees.
Behind a buffering proxy (docs/how-to/deploy.md) requests arrive whole and this costs nothing.
"""

from __future__ import annotations

import errno
import re
import selectors
import time
from functools import partial

from gunicorn.workers.gthread import ThreadWorker

READ_DEADLINE = 10.0
MAX_HEAD = 64 * 1024
# The app's limit (MAX_CONTENT_LENGTH), set by ``serve``; larger bodies are not buffered.
MAX_BODY = 64 * 1024
RECV = 65536
# A kept-alive connection is closed after this many requests (the answer says "Connection: close"; the
# client opens a new one), set by ``serve``; 0 keeps it open. gunicorn's workers share one listening
# socket, and keep-alive connections opened in a burst land on whichever worker accepts first, often
# nearly all on one; reconnecting lets them spread again (bench/README.md, "Keep-alive").
KEEPALIVE_REQUESTS = 0
TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\nContent-Length: 50\r\n"
                    b"Connection: close\r\n\r\nThe request did not arrive in time; send it again.")
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?$", re.I | re.M)
_CHUNKED = re.compile(rb"^transfer-encoding[ \t]*:.*chunked", re.I | re.M)
_EXPECT = re.compile(rb"^expect[ \t]*:[ \t]*100-continue[ \t]*\r\n", re.I | re.M)


def whole(buffer: bytearray, conn) -> bool:
    """Return whether ``buffer`` holds a whole request (or as much as is worth waiting for); answer 100-continue."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return len(buffer) > MAX_HEAD
    head = bytes(buffer[:end + 2])
    if _CHUNKED.search(head):
        return buffer.endswith(b"0\r\n\r\n") or len(buffer) > MAX_HEAD + MAX_BODY
    match = _LENGTH.search(head)
    length = int(match.group(1)) if match else 0
    if length > MAX_BODY:
        return True
    if _EXPECT.search(head):
        # Answer it here and drop it: the client sends the body now, and gunicorn answers it no second time.
        buffer[:end + 2] = _EXPECT.sub(b"", head)
        conn.sock.sendall(CONTINUE)
        return whole(buffer, conn)
    return len(buffer) - (end + 4) >= length


class BufferingWorker(ThreadWorker):
    """``gthread`` with each request read whole in the main loop, under READ_DEADLINE, before a thread takes it."""

    def init_process(self):
        self.buffering = {}  # conn -> (buffer, deadline)
        super().init_process()

    def accept(self, listener):
        """Accept a connection and read its first request in the main loop."""
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = self._tconn(client, address, listener)
        self._buffer(conn)

    def _tconn(self, client, address, listener):
        from gunicorn.workers.gthread import TConn

        return TConn(self.cfg, client, address, listener.getsockname())

    def on_client_socket_readable(self, conn, client):
        """A kept-alive connection sends its next request: read it in the main loop too."""
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        self._buffer(conn)

    def _buffer(self, conn):
        conn.sock.setblocking(False)
        self.buffering[conn] = (bytearray(), time.monotonic() + READ_DEADLINE)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._readable, conn))

    def _readable(self, conn, client):
        buffer, _ = self.buffering[conn]
        try:
            data = client.recv(RECV)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        buffer += data
        try:
            complete = whole(buffer, conn)
        except OSError:
            self._drop(conn)
            return
        if complete:
            self.poller.unregister(client)
            del self.buffering[conn]
            conn.early = bytes(buffer)
            conn.data_ready = True
            self.enqueue_req(conn)

    def _drop(self, conn, answer: bytes | None = None):
        """Stop reading a connection and close it, after ``answer`` if the socket takes it at once."""
        self.buffering.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if answer is not None:
            try:
                conn.sock.send(answer)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self):
        """Also answer 408 to, and close, the connections whose request is not whole by its deadline."""
        super().murder_pending()
        now = time.monotonic()
        for conn in [c for c, (_, deadline) in self.buffering.items() if deadline <= now]:
            self._drop(conn, TIMEOUT_RESPONSE)

    def handle_request(self, req, conn):
        """Serve one request, asking the client to close the connection after its KEEPALIVE_REQUESTS-th."""
        served = getattr(conn, "served", 0) + 1
        conn.served = served
        if KEEPALIVE_REQUESTS and served >= KEEPALIVE_REQUESTS:
            req.must_close = True
        return super().handle_request(req, conn)

    def handle(self, conn):
        """Serve the buffered request: the parser reads it from memory, then the socket for anything after."""
        early = getattr(conn, "early", None)
        if early is not None:
            conn.early = None
            conn.sock.setblocking(True)
            conn.init()
            conn.parser.unreader.unread(early)
        return super().handle(conn)
