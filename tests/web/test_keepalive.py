"""Keep-alive on the real server: a connection is closed after KEEPALIVE_REQUESTS requests, so connections spread.

gunicorn's workers share one listening socket, and keep-alive connections opened in a burst pile
onto whichever worker accepts first; closing each after KEEPALIVE_REQUESTS requests makes the
client reconnect, and the reconnections spread over the workers (bench/README.md, "Keep-alive").
Checked here: the answers before the last keep the connection, the last says Connection: close
and the server closes it, and a new connection is served. The spreading itself is measured by
bench/ingest.py --reuse 0 (wrk, 32 keep-alive connections).
"""

from __future__ import annotations

import http.client

from survey.web.server import KEEPALIVE_REQUESTS


def test_a_kept_alive_connection_is_closed_after_its_requests(live_server):
    """Requests 1..N-1 keep the connection; the N-th answer says close and the server closes it."""
    port = int(live_server["origin"].rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for number in range(1, KEEPALIVE_REQUESTS + 1):
            connection.request("GET", "/healthz")
            reply = connection.getresponse()
            reply.read()
            assert reply.status == 200, number
            closing = reply.getheader("Connection", "").lower() == "close"
            assert closing == (number == KEEPALIVE_REQUESTS), number
        assert connection.sock is None, "http.client closed the connection the server closed"
        connection.request("GET", "/healthz")
        assert connection.getresponse().status == 200, "a new connection is served"
    finally:
        connection.close()

