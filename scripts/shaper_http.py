"""Bounded HTTP/1.1 serving for shaper-api and shaper-exporter, on aiohttp
(Debian's python3-aiohttp; its low-level server, no framework).

aiohttp parses requests and writes replies. What it leaves unbounded is
bounded here, in a subclass of its connection (RequestHandler):

- time: a request must arrive whole (line, headers and body) within
  `timeout` seconds of its first byte (of the connect, for a connection's
  first request). aiohttp has no such deadline: a client sending a byte a
  second would hold its connection for ever. A reply the client does not
  read, and an idle keep-alive connection, get the same time.
- connections: at most `max_conns` open. At the limit the oldest one that
  has not sent a whole request (or is idle) is closed to make room; if
  none, the new one is answered 503. So idle or slow clients cannot lock
  out a real one.
- a half-close (EOF) in the middle of a body fails the body's read, and
  the handler answers 400; aiohttp would drop the connection unanswered.
  A half-close after a whole request still gets its answer.
- the parser's refusals are answered in the caller's format (JSON for
  the API), 414/431 for a line too long.

Blocking work (the shaper's sockets) runs on a fixed pool of threads,
all started at once, so the process's threads never grow with its
clients.
"""
import asyncio
import concurrent.futures
import http
import logging
import signal
import socket
import threading

from aiohttp import web, web_protocol
from aiohttp.http_exceptions import LineTooLong


class ShortBody(Exception):
    """The client half-closed before its body was whole."""


class Bounds:
    """What a server allows: the client's time (seconds), open
    connections, threads, and how an error reply's body is made:
    render(code, message) -> (content type, bytes)."""

    def __init__(self, timeout, max_conns, threads, render):
        self.timeout = timeout
        self.max_conns = max_conns
        self.threads = threads
        self.render = render


def raw_reply(bounds, code, msg):
    """An error reply as bytes, for where no request object exists."""
    ctype, body = bounds.render(code, msg)
    return ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            "Connection: close\r\n\r\n" % (code, http.HTTPStatus(code).phrase,
                                           ctype, len(body))).encode() + body


class Conn(web_protocol.RequestHandler):
    """One client connection, with its deadline (see the module's text).
    The handler calls answering() once its request is whole: the time
    is then the server's, not the client's."""

    def __init__(self, manager, *, bounds, **kw):
        super().__init__(manager, **kw)
        self.bounds = bounds
        self.deadline = None  # a TimerHandle while it is the client's turn
        self.idle = False     # the last reply is written, no byte since
        self.sending = True   # the client has not sent a whole request
        self.got = False      # bytes of a request not yet answered
        self.answered = 0     # replies written (_request_count: parsed)
        self.body = None      # the last parsed request's body (a stream)

    def connection_made(self, transport):
        super().connection_made(transport)
        self._arm()
        conns = self._manager.connections
        if len(conns) <= self.bounds.max_conns:
            return
        old = next((c for c in conns if c is not self and c.sending and
                    c.transport is not None), None)
        if old is not None:
            old.drop()
        else:
            transport.write(raw_reply(self.bounds, 503,
                                      "too many connections"))
            self.force_close()

    def _arm(self):
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self._force_close:
            return
        self.deadline = self._loop.call_later(self.bounds.timeout,
                                              self._expire)

    def _expire(self):
        self.deadline = None
        self.drop()

    def drop(self):
        """Closed at once, whatever is unsent."""
        tr = self.transport
        self.force_close()
        if tr is not None:
            tr.abort()

    def answering(self):
        self.sending = False
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def data_received(self, data):
        if self.idle:
            # a new request: its time runs from its first byte
            self.idle = False
            self._arm()
        self.got = True
        super().data_received(data)
        if self._messages:
            self.body = self._messages[-1][1]

    def eof_received(self):
        # a body not whole fails its reader: the handler (400), or
        # aiohttp's lingering read of a refused body (which would
        # otherwise wait its whole time)
        short = self.body is not None and not self.body.is_eof()
        if short:
            self.body.set_exception(ShortBody())
        if self._request_count > self.answered:
            # a request whole up to its body: answer it, then close
            self.close()
            return True
        if self.got and not short and self.transport is not None:
            # half a request line or header
            self.transport.write(raw_reply(self.bounds, 400,
                                           "the request ends unfinished"))
            self.force_close()
        return None

    async def finish_response(self, request, resp, start_time):
        self._arm()           # the client's time to take the reply
        try:
            return await super().finish_response(request, resp, start_time)
        finally:
            self.idle, self.sending, self.got = True, True, False
            self.answered += 1
            self._arm()

    def connection_lost(self, exc):
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self.body is not None and not self.body.is_eof():
            self.body.set_exception(ConnectionResetError("connection lost"))
        super().connection_lost(exc)

    def handle_error(self, request, status=500, exc=None, message=None):
        """The parser's refusals (and a handler's crash) in the caller's
        format; no traceback logged."""
        if request.writer.output_size > 0:
            raise ConnectionError("reply already started")
        if isinstance(exc, LineTooLong):
            # its text quotes the line: not echoed
            status, message = 431, "a request line or header over %d " \
                "bytes" % self.max_field_size
        text = message or (str(exc) if exc and status != 500 else "") or \
            http.HTTPStatus(status).phrase
        ctype, body = self.bounds.render(status, "bad request: %s" %
                                         text[:200] if status == 400
                                         else text)
        resp = web.Response(status=status, body=body,
                            headers={"Content-Type": ctype})
        resp.force_close()
        return resp


class Server(web.Server):
    def __init__(self, handler, bounds, **kw):
        super().__init__(handler, **kw)
        self.bounds = bounds

    def __call__(self):
        return Conn(self, loop=self._loop, bounds=self.bounds,
                    **self._kwargs)


async def read_body(request, limit, need):
    """The request's body, whole, or web-ready (code, message): a GET,
    HEAD or DELETE (need False) carries none (400: it would otherwise
    be left for the next request); else Content-Length is required (411;
    no chunked bodies), at most `limit` bytes (413), and all of it must
    come (400)."""
    te = request.headers.get("Transfer-Encoding")
    n = request.headers.get("Content-Length")
    if not need:
        if te is not None or (n is not None and n.strip("0 \t") != ""):
            return None, (400, "a %s carries no body" % request.method)
        return b"", None
    if te is not None:
        return None, (411, "give Content-Length (no chunked bodies)")
    if n is None:
        return None, (411, "Content-Length is required")
    n = int(n)      # the parser took only digits
    if n > limit:
        return None, (413, "the body is over %d bytes" % limit)
    try:
        return await request.content.readexactly(n), None
    except (ShortBody, asyncio.IncompleteReadError):
        return None, (400, "the body is shorter than its Content-Length")


def listen(host, port, backlog=1024):
    """A bound, listening socket (OSError if not)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(backlog)
    except OSError:
        s.close()
        raise
    return s


def start_pool(n):
    """n threads, every one started now."""
    pool = concurrent.futures.ThreadPoolExecutor(n, "answer")
    gate = threading.Barrier(n)
    list(pool.map(lambda _: gate.wait(), range(n)))
    return pool


STOP_GRACE = 2.0    # seconds a stop gives the requests being answered


def serve(sock, handler, bounds, max_field=8190):
    """Serve `sock` with handler(request, pool) until SIGTERM or SIGINT;
    the pool runs the blocking work (loop.run_in_executor(pool, ...))."""
    # aiohttp logs each refused request and each lost client with a
    # traceback: the replies say what went wrong, the log stays quiet
    for name in ("aiohttp", "asyncio"):
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False
    pool = start_pool(bounds.threads)

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_default_executor(pool)
        srv = Server(lambda r: handler(r, pool), bounds, access_log=None,
                     keepalive_timeout=bounds.timeout,
                     lingering_time=bounds.timeout,
                     max_line_size=max_field, max_field_size=max_field)
        runner = web.ServerRunner(srv)
        await runner.setup()
        # a stop waits this long for what is being answered: an event
        # stream (text/event-stream) never ends by itself
        site = web.SockSite(runner, sock, backlog=1024,
                            shutdown_timeout=STOP_GRACE)
        await site.start()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(main())
    pool.shutdown(wait=False)
