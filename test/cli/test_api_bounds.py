"""scripts/shaper-api's HTTP bounds (issue 58 items 3, 5, 6, 12) against a
live shaper on net_null: the token on loopback too and its file's mode,
malformed requests (a GET or DELETE with a body, a bad Content-Length, a
short body then a half-close) answered 400 with nothing applied, a 10 MB
body refused 413, a client sending a byte every 2 s dropped at the 10 s
timeout while others are answered, 500 concurrent GETs all answered, and
the connection bound. The malformed ones go on raw sockets."""
import grp
import os
import select
import socket
import stat
import threading
import time

from test_api import api, nolimit  # noqa: F401  (api: the fixture)
from test_ctl import live  # noqa: F401  (the fixture)


def raw(a, data, half_close=True, timeout=20):
    """Everything the API answers to DATA (b"TOKEN" replaced by the
    token) on one connection, read to its close."""
    s = socket.create_connection(("127.0.0.1", a.port), timeout=timeout)
    s.sendall(data.replace(b"TOKEN", a.token.encode()))
    if half_close:
        s.shutdown(socket.SHUT_WR)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except ConnectionResetError:
        pass
    s.close()
    return out


def statuses(out):
    return [int(l.split()[1]) for l in out.split(b"\r\n")
            if l.startswith(b"HTTP/1.")]


def netem0(a):
    return nolimit(a.req("GET", "/v1/ports/0/netem")[1]["text"])


AUTH = b"Authorization: Bearer TOKEN\r\n"


def test_no_token_refused_on_loopback(live, api):
    """Without --token-file the API makes a token (0600 beside the control
    socket, removed at exit) and wants it from loopback clients too."""
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    assert os.path.dirname(a.token_file) == os.path.dirname(lv.path)
    st = os.stat(a.token_file)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert len(a.token) >= 32
    for h in ({}, {"Authorization": "Bearer " + a.token[:-1]}):
        assert a.req("GET", "/v1/config", headers=h)[0] == 401
        st, r = a.req("PUT", "/v1/ports/0/netem", {"text": "loss 100%"},
                      headers=h)
        assert st == 401, r
    assert "delay 10ms" in lv.ctl("show", "netem", "0")[1]
    assert "loss" not in lv.ctl("show", "netem", "0")[1]
    assert a.req("GET", "/v1/config")[0] == 200
    a.stop()
    assert not os.path.exists(a.token_file)
    lv.stop()


def test_token_file_follows_ctl_group(live, api):
    """The shaper's --ctl-group lets a group use the socket: the token
    file is then the group's to read (0640), no one else's."""
    g = grp.getgrnam("daemon")
    lv = live(["--ctl-group", "daemon"])
    assert os.stat(lv.path).st_gid == g.gr_gid
    a = api(lv.prefix)
    st = os.stat(a.token_file)
    assert stat.S_IMODE(st.st_mode) == 0o640, oct(st.st_mode)
    assert st.st_gid == g.gr_gid
    assert a.req("GET", "/v1/config")[0] == 200
    a.stop()
    lv.stop()


def test_malformed_requests_answered_400_nothing_applied(live, api):
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    smuggled = (b"DELETE /v1/ports/0/netem HTTP/1.1\r\nHost: x\r\n" + AUTH +
                b"\r\n").replace(b"TOKEN", a.token.encode())
    # a GET's or DELETE's body is refused, never run as a request
    for method in (b"GET /v1/config", b"DELETE /v1/ports/1/netem"):
        out = raw(a, method + b" HTTP/1.1\r\nHost: x\r\n" + AUTH +
                  b"Content-Length: %d\r\n\r\n" % len(smuggled) + smuggled)
        assert statuses(out) == [400], out
        assert b"carries no body" in out, out
    # a Content-Length that is not digits
    body = b'{"text": "delay 1ms"}'
    for cl in (b"x", b"\xb2", b"1e2", b"-1", b"5, 5"):
        out = raw(a, b"PUT /v1/ports/0/netem HTTP/1.1\r\nHost: x\r\n" +
                  AUTH + b"Content-Length: " + cl + b"\r\n\r\n" + body)
        assert statuses(out) == [400], (cl, out)
    # a short body, then a half-close: not applied
    out = raw(a, b"PUT /v1/ports/0/netem HTTP/1.1\r\nHost: x\r\n" + AUTH +
              b"Content-Length: %d\r\n\r\n" % (len(body) + 20) + body)
    assert statuses(out) == [400], out
    assert b"shorter than its Content-Length" in out
    # half a request: answered too
    out = raw(a, b"PUT /v1/ports/0/netem HTTP/1.1\r\nHost: x\r\n")
    assert statuses(out) == [400], out
    assert netem0(a) == "delay 10ms"
    assert nolimit(a.req("GET", "/v1/ports/1/netem")[1]["text"]) == \
        "delay 10ms"
    # a whole request then a half-close is answered (and applied)
    out = raw(a, b"PUT /v1/ports/0/netem HTTP/1.1\r\nHost: x\r\n" + AUTH +
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert statuses(out) == [200], out
    assert netem0(a) == "delay 1ms"
    a.stop()
    lv.stop()


def test_ten_mb_body_refused_413(live, api):
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    big = b'{"text": "delay 1ms", "x": "' + b"x" * (10 << 20) + b'"}'
    st, r = a.req("PUT", "/v1/ports/0/netem", raw=big)
    assert st == 413, r
    assert netem0(a) == "delay 10ms"
    a.stop()
    lv.stop()


def test_slow_client_dropped_at_timeout(live, api):
    """A request sent a byte every 2 s is closed 10 s after its first
    byte (not 10 s after its last), while other clients are answered."""
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    req = (b"GET /v1/config HTTP/1.1\r\nHost: x\r\n" + AUTH +
           b"X-Pad: " + b"p" * 64 + b"\r\n\r\n").replace(
               b"TOKEN", a.token.encode())
    s = socket.create_connection(("127.0.0.1", a.port), timeout=5)
    t0 = time.monotonic()
    closed_at = [None]

    def dribble():
        for i in range(len(req)):
            try:
                s.send(req[i:i + 1])
            except OSError:
                closed_at[0] = time.monotonic() - t0
                return
            r, _, _ = select.select([s], [], [], 2.0)
            if r:
                try:
                    if s.recv(100) == b"":
                        closed_at[0] = time.monotonic() - t0
                        return
                except OSError:
                    closed_at[0] = time.monotonic() - t0
                    return
            if time.monotonic() - t0 > 25:
                return
    th = threading.Thread(target=dribble)
    th.start()
    answered = 0
    while th.is_alive():
        assert a.req("GET", "/v1/config")[0] == 200
        answered += 1
        time.sleep(0.5)
    th.join()
    s.close()
    assert closed_at[0] is not None, "still open after 25 s"
    assert 9.5 <= closed_at[0] <= 13.0, closed_at[0]
    assert answered >= 5
    a.stop()
    lv.stop()


def test_500_concurrent_gets_all_answered(live, api):
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    n = 500
    req = (b"GET /v1/config HTTP/1.1\r\nHost: x\r\n" + AUTH +
           b"Connection: close\r\n\r\n").replace(b"TOKEN", a.token.encode())
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", a.port))
        socks.append(s)
    # every one connected, then every request sent at once
    pending = set(socks)
    end = time.monotonic() + 60
    while pending and time.monotonic() < end:
        _, w, _ = select.select([], list(pending), [], 1.0)
        for s in w:
            s.send(req)
            pending.discard(s)
    assert not pending
    got = {s: b"" for s in socks}
    open_ = set(socks)
    while open_ and time.monotonic() < end:
        r, _, _ = select.select(list(open_), [], [], 1.0)
        for s in r:
            try:
                b = s.recv(65536)
            except OSError:
                b = b""
            if b:
                got[s] += b
            else:
                open_.discard(s)
    for s in socks:
        s.close()
    codes = [statuses(got[s])[:1] for s in socks]
    assert codes == [[200]] * n, "%d of %d not 200: %s" % (
        sum(c != [200] for c in codes), n,
        sorted({str(c) for c in codes}))
    a.stop()
    lv.stop()


def test_connections_bounded(live, api):
    """At --max-connections the oldest idle connection makes room: 60
    idle clients hold no more than 20 connections, and a request is
    answered."""
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix, ["--max-connections", "20"])
    idle = [socket.create_connection(("127.0.0.1", a.port), timeout=5)
            for _ in range(60)]
    assert a.req("GET", "/v1/config")[0] == 200
    time.sleep(0.5)
    shut = 0
    for s in idle:
        s.setblocking(False)
        try:
            shut += s.recv(10) == b""
        except BlockingIOError:
            pass
        except OSError:
            shut += 1
        s.close()
    assert shut >= 60 - 20 + 1, shut
    a.stop()
    lv.stop()
