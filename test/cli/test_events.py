"""The event stream (issue 60 item 3), live on net_null: every change the
shaper applies, with its old and new text and where it came from, seen
alike by `dpdk-shaper-ctl watch --json` and `GET /v1/events` (Server-Sent
Events), replayed after an id, and bounded: a watcher that never reads is
dropped and counted (`events_lost`) while forwarding goes on, a 17th is
refused."""
import http.client
import json
import queue
import re
import socket
import subprocess
import threading
import time

from conftest import REPO  # noqa: F401  (the path to scripts/)
from test_api import Api, api  # noqa: F401  (the fixture)
from test_ctl import CTL, live  # noqa: F401  (the fixture)
from shaper_client import Shaper

WAIT = 30   # seconds: a bound on each wait, never a timing asserted


def lines_of(stream, out):
    for line in stream:
        out.put(line)


class CtlWatch:
    """`dpdk-shaper-ctl watch --json [since ID]`, its lines on a queue."""

    def __init__(self, prefix, *words):
        self.proc = subprocess.Popen(
            [CTL, "-f", prefix, "watch", "--json"] + list(words),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # its first reply (to stderr): the watch is set up
        head = self.proc.stderr.readline()
        assert head.startswith('{"status": "ok"'), head
        self.q = queue.Queue()
        threading.Thread(target=lines_of, args=(self.proc.stdout, self.q),
                         daemon=True).start()

    def events(self, n):
        """The next n events but overload's (the shaper's own: this
        machine may fall behind at any time)."""
        got = []
        while len(got) < n:
            e = json.loads(self.q.get(timeout=WAIT))
            if e["source"] != "shaper":
                got.append(e)
        return got

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class SseWatch:
    """GET /v1/events, its messages ({id, data}) on a queue."""

    def __init__(self, a, path="/v1/events", headers=None):
        self.c = http.client.HTTPConnection(a.host, a.port, timeout=WAIT)
        h = a.auth()
        h.update(headers or {})
        self.c.request("GET", path, headers=h)
        self.r = self.c.getresponse()
        assert self.r.status == 200, (self.r.status, self.r.read())
        assert self.r.getheader("Content-Type").startswith(
            "text/event-stream")
        # its first comment: the watch is set up
        assert self.r.readline().startswith(b": watching")
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            self._messages()
        except (AttributeError, OSError, ValueError):
            pass    # closed by stop()

    def _messages(self):
        msg = {}
        for raw in iter(self.r.readline, b""):
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                msg["id"] = int(line[4:])
            elif line.startswith("data: "):
                msg["data"] = json.loads(line[6:])
            elif line == "" and "data" in msg:
                self.q.put(msg)
                msg = {}

    def events(self, n):
        got = []
        while len(got) < n:
            m = self.q.get(timeout=WAIT)
            assert m["id"] == m["data"]["id"], m
            if m["data"]["source"] != "shaper":
                got.append(m["data"])
        return got

    def stop(self):
        # shut the socket first: close() alone waits for the reader
        # thread's readline, which returns only at the next keep-alive
        # comment (15 s)
        if self.c.sock is not None:
            try:
                self.c.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.c.close()


def brief(events):
    return [(e["source"], e["port"], e["what"], e["old"], e["new"])
            for e in events]


def test_six_changes_seen_alike_and_replayed(live, api, tmp_path):
    sched = tmp_path / "sched.txt"
    # late enough that the three changes before it are made by then
    sched.write_text("6s set netem 1 delay 9ms\n")
    lv = live(["--netem", "delay 1ms", "--schedule", str(sched)])
    a = api(lv.prefix)
    w, s = CtlWatch(lv.prefix), SseWatch(a)
    try:
        with Shaper(lv.prefix) as c:
            c.cmd("set netem 0 delay 5ms")
            c.cmd("update netem 0 loss 1%")
        st, r = a.req("PUT", "/v1/ports/0/netem", {"text": "delay 7ms"})
        assert st == 200, r
        want = [
            ("ctl", 0, "netem", "delay 1ms", "delay 5ms"),
            ("ctl", 0, "netem", "delay 5ms", "delay 5ms loss random 1%"),
            ("rest", 0, "netem", "delay 5ms loss random 1%", "delay 7ms"),
            ("schedule", 1, "netem", "delay 1ms", "delay 9ms"),
        ]
        got = w.events(4)
        assert brief(got) == want, got
        with Shaper(lv.prefix) as c:
            c.cmd("set tbf 1 rate 10mbit burst 10kb limit 100kb for 200ms")
        tbf = "rate 10Mbit burst 10240b limit 102400b"
        want += [("ctl", 1, "tbf", "off", tbf),
                 ("revert", 1, "tbf", tbf, "off")]
        got += w.events(2)
        assert brief(got) == want, got
        sse = s.events(6)
        assert sse == got
        ids = [e["id"] for e in got]
        assert ids == sorted(ids) and len(set(ids)) == 6, ids
        link = [e["link_ns"] for e in got]
        assert link == sorted(link) and link[3] >= 6e9, link
        assert all(e["shards"] == [0] and e["wall"].endswith("Z")
                   for e in got), got
    finally:
        w.stop()
        s.stop()
    # replays: the kept events after an id, then on as they come
    w = CtlWatch(lv.prefix, "since", str(ids[0]))
    s = SseWatch(a, "/v1/events?since=%d" % ids[1])
    s2 = SseWatch(a, headers={"Last-Event-ID": str(ids[2])})
    try:
        assert w.events(5) == got[1:]
        assert s.events(4) == got[2:]
        assert s2.events(3) == got[3:]
    finally:
        w.stop()
        s.stop()
        s2.stop()
    rc, out, err = lv.ctl("watch", "since", "x")
    assert rc == 1 and "usage: watch [since ID]" in err, (out, err)
    assert a.req("GET", "/v1/events?since=x")[0] == 400
    lv.stop()


def tx_packets(c, port=1):
    return int(re.search(r"tx_packets: (\d+)",
                         c.cmd("show port stats %d" % port)).group(1))


def test_watchers_bounded(live, api):
    lv = live(["--netem", "delay 1ms"])
    a = api(lv.prefix)
    # a watcher that never reads
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    idle.connect(lv.path)
    idle.sendall(b"watch\n")
    words = ("delay %dms 1ms 10%% distribution normal loss 1%% 25%% "
             "duplicate 1%% corrupt 0.1%% reorder 10%% 50%% gap 3")
    with Shaper(lv.prefix) as c:
        lost = 0
        for i in range(5000):
            c.cmd("set netem 0 " + words % (1 + i % 2))
            if i % 50 == 49:
                lost = int(re.search(r"events_lost (\d+)",
                                     c.cmd("show events")).group(1))
                if lost:
                    break
        assert lost > 0, "a watcher that never reads was never dropped"
        assert "0 watchers" in c.cmd("show events")
        # the shaper closed it: what it had sent, then the end
        idle.settimeout(WAIT)
        while idle.recv(65536):
            pass
        idle.close()
        # and forwarding went on (a rate, no timing)
        t0 = tx_packets(c)
        time.sleep(0.5)
        assert tx_packets(c) > t0
    # 16 watchers at most; the 17th is told, and stays a client
    socks = []
    try:
        for i in range(16):
            x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            x.connect(lv.path)
            x.sendall(b"watch\n")
            x.settimeout(WAIT)
            assert x.recv(4096).startswith(b"ok\nwatching from event ")
            socks.append(x)
        with Shaper(lv.prefix) as c:
            r = c.request("watch")
            assert r["status"] == "error", r
            assert r["output"] == ("error: too many watchers (16): try "
                                   "again later\n"), r
            assert "16 watchers" in c.cmd("show events")
        # so is a REST client, in its own words
        st, r = a.req("GET", "/v1/events")
        assert st == 503 and "too many watchers (16)" in r["error"], r
    finally:
        for x in socks:
            x.close()
    lv.stop()


def test_toggles_and_captures_are_events(live, tmp_path):
    """disable/enable (issue 61) and a drop capture's start and stop
    (issue 60) are changes applied too: each an event, with the
    source that made it."""
    lv = live(["--netem", "delay 1ms"])
    w = CtlWatch(lv.prefix)
    try:
        pcap = str(tmp_path / "d.pcapng")
        for words in (("disable", "0"), ("enable", "0"),
                      ("capture", "drops", "start", pcap),
                      ("capture", "drops", "stop")):
            rc, out, err = lv.ctl(*words)
            assert rc == 0, (words, out, err)
        got = w.events(4)
    finally:
        w.stop()
    assert [(e["port"], e["what"], e["old"], e["new"], e["source"])
            for e in got[:2]] == [(0, "port", "enabled", "disabled", "ctl"),
                                  (0, "port", "disabled", "enabled", "ctl")]
    assert got[2]["what"] == "capture drops" and got[2]["old"] == "off"
    assert got[2]["new"].startswith(pcap + " snaplen 128")
    assert (got[3]["what"], got[3]["old"], got[3]["new"]) == \
        ("capture drops", pcap, "off")
    assert [e["id"] for e in got] == sorted(e["id"] for e in got)
