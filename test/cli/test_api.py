"""scripts/shaper-api (issue 26) with a real HTTP client (http.client)
against a live shaper on net_null: every endpoint and error code, PATCH
changing only what it names, batches all or nothing, the token, bounded
bodies and headers."""
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from conftest import PY, REPO, conservation, telemetry
from test_ctl import live  # noqa: F401  (the fixture)

API = os.path.join(REPO, "scripts", "shaper-api")
sys.path.insert(0, os.path.join(REPO, "scripts"))


def nolimit(text):
    """netem's text without its effective limit (it depends on the pool)."""
    return re.sub(r"^limit \d+ ", "", text)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Api:
    def __init__(self, prefix, extra=(), host="127.0.0.1"):
        self.port = free_port()
        self.host = host
        self.proc = subprocess.Popen(
            [PY, API, "--file-prefix", prefix, "--listen",
             "%s:%d" % (host, self.port)] + list(extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert "serving http://" in line, (line, self.proc.stderr.read())
        # without --token-file: the token it made, and where
        self.token = self.token_file = None
        if "--token-file" not in extra:
            line = self.proc.stdout.readline()
            m = re.match(r"shaper-api: token in (\S+) ", line)
            assert m, line
            self.token_file = m.group(1)
            with open(self.token_file) as f:
                self.token = f.read().strip()

    def auth(self):
        return {"Authorization": "Bearer %s" % self.token}

    def req(self, method, path, body=None, headers=None, raw=None):
        """headers: the token's by default (when it made one)."""
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        if headers is None and self.token:
            headers = self.auth()
        h = dict(headers or {})
        data = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else None)
        if data is not None:
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        try:
            return r.status, json.loads(text)
        except ValueError:        # http.server's own errors are HTML
            return r.status, text

    def stop(self):
        self.proc.terminate()
        self.proc.communicate(timeout=10)


@pytest.fixture
def api():
    apis = []

    def start(*a, **k):
        x = Api(*a, **k)
        apis.append(x)
        return x
    yield start
    for x in apis:
        if x.proc.poll() is None:
            x.stop()


def test_endpoints_and_errors(live, api, need_telemetry_client):
    lv = live(["--netem", "delay 10ms loss 1%", "--queue-port", "1",
               "fq_codel target 5ms"])
    a = api(lv.prefix)
    st, conf = a.req("GET", "/v1/config")
    assert st == 200 and "delay 10ms" in conf["0"]["netem"], conf
    st, stats = a.req("GET", "/v1/stats")
    assert st == 200 and "tx_packets" in stats["ports"]["1"]
    assert "lost" in stats["ports"]["1"]["drops"]
    st, r = a.req("GET", "/v1/ports/0/netem")
    assert st == 200 and r["kind"] == "netem"
    assert nolimit(r["text"]) == "delay 10ms loss random 1%", r
    assert r["params"]["delay"] == "10ms" and \
        r["params"]["loss"] == "random 1%", r
    # PUT replaces
    st, r = a.req("PUT", "/v1/ports/0/netem", {"text": "delay 20ms"})
    assert st == 200 and "delay 20ms" in r["output"], r
    assert nolimit(a.req("GET", "/v1/ports/0/netem")[1]["text"]) == \
        "delay 20ms"
    # PATCH keeps what it does not name
    st, r = a.req("PATCH", "/v1/ports/0/netem", {"text": "loss 5%"})
    assert st == 200, r
    assert nolimit(a.req("GET", "/v1/ports/0/netem")[1]["text"]) == \
        "delay 20ms loss random 5%"
    # 400: the parser's one line, nothing changed
    st, r = a.req("PATCH", "/v1/ports/0/netem", {"text": "delay 10m"})
    assert st == 400 and r["error"].startswith("error: ") and \
        "unit" in r["error"], r
    assert "loss random 5%" in a.req("GET", "/v1/ports/0/netem")[1]["text"]
    # 404: port, key, class, endpoint
    assert a.req("GET", "/v1/ports/7/netem")[0] == 404
    assert a.req("PUT", "/v1/ports/7/netem", {"text": "delay 1ms"})[0] == 404
    assert a.req("GET", "/v1/ports/0/bogus")[0] == 404
    assert a.req("GET", "/v1/classes/nobody")[0] == 404
    assert a.req("PATCH", "/v1/classes/nobody", {"text": "prio 1"})[0] == 404
    assert a.req("GET", "/v2/config")[0] == 404
    # 409: what the stage refuses at run time
    st, r = a.req("PATCH", "/v1/ports/1/queue", {"text": "flows 2048"})
    assert st == 409 and "flows" in r["error"], r
    st, r = a.req("PATCH", "/v1/ports/1/queue", {"text": "interval 50ms"})
    assert st == 200, r
    q = a.req("GET", "/v1/ports/1/queue")[1]
    assert q["kind"] == "fq_codel" and q["params"]["target"] == "5ms" and \
        q["params"]["interval"] == "50ms", q
    # DELETE: off
    assert a.req("DELETE", "/v1/ports/0/netem")[0] == 200
    r = a.req("GET", "/v1/ports/0/netem")[1]
    assert r["text"] == "off" and r["kind"] is None
    # classes
    st, r = a.req("PUT", "/v1/classes/voip",
                  {"text": "match 'ip_proto 17' netem 'delay 5ms loss 1%'"})
    assert st == 200, r
    st, r = a.req("PATCH", "/v1/classes/voip", {"text": "netem 'loss 3%'"})
    assert st == 200, r
    st, r = a.req("GET", "/v1/classes/voip")
    assert st == 200 and "delay 5ms loss random 3%" in r["text"], r
    assert a.req("DELETE", "/v1/classes/voip")[0] == 200
    # links
    st, r = a.req("POST", "/v1/links/1", {"up": False})
    assert st == 200 and "down" in r["output"], r
    assert "port 1: link down" in lv.ctl("show", "schedule")[1]
    assert a.req("POST", "/v1/links/1", {"up": "no"})[0] == 400
    assert a.req("POST", "/v1/links/9", {"up": True})[0] == 404
    assert a.req("POST", "/v1/links/1", {"up": True})[0] == 200
    # batch: all or nothing
    before = telemetry(lv.prefix, "/shaper/config")[0]
    st, r = a.req("POST", "/v1/batch", [
        {"op": "set", "port": 0, "key": "netem", "text": "delay 30ms"},
        {"op": "update", "port": 1, "key": "netem", "text": "loss 200%"}])
    assert st == 400, r
    assert telemetry(lv.prefix, "/shaper/config")[0] == before
    st, r = a.req("POST", "/v1/batch", [
        {"op": "set", "port": 0, "key": "netem", "text": "delay 30ms"},
        {"op": "update", "port": 1, "key": "netem", "text": "loss 2%"},
        {"op": "set", "port": "all", "key": "tbf",
         "text": "rate 10mbit burst 10kb limit 100kb"}])
    assert st == 200 and "3 changes applied at once" in r["output"], r
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    assert conf["0"]["netem"].endswith("delay 30ms")
    assert "delay 10ms loss random 2%" in conf["1"]["netem"]
    # malformed and oversize bodies
    for raw in (b"{", b"\xff\xfe", b"[]", b'{"text": 5}',
                b'{"text": "delay 1ms\\nset tbf 0 off"}', b'"x"'):
        st, r = a.req("PUT", "/v1/ports/0/netem", raw=raw)
        assert st == 400, (raw, r)
    st, r = a.req("PUT", "/v1/ports/0/netem",
                  raw=b'{"text": "' + b"x" * 70000 + b'"}')
    assert st == 413, r
    assert st == 413 and conf == telemetry(lv.prefix, "/shaper/config")[0]
    many = {"X-%d" % i: "y" for i in range(40)}
    many.update(a.auth())
    st, _ = a.req("GET", "/v1/config", headers=many)
    assert st == 431
    a.stop()
    st = lv.stop()
    for p in ("0", "1"):
        x, y = conservation(st["ports"][p])
        assert x == y


def test_token_and_non_loopback(live, api, tmp_path):
    lv = live(["--netem", "delay 10ms"])
    # anything but loopback needs a token file
    p = subprocess.run([PY, API, "--file-prefix", lv.prefix, "--listen",
                        "0.0.0.0:%d" % free_port()],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=20)
    assert p.returncode == 2 and "needs --token-file" in p.stderr
    tok = tmp_path / "token"
    tok.write_text("s3cret-token-0123456789\n")
    os.chmod(tok, 0o644)
    p = subprocess.run([PY, API, "--file-prefix", lv.prefix, "--listen",
                        "0.0.0.0:%d" % free_port(), "--token-file",
                        str(tok)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=20)
    assert p.returncode != 0 and "readable by others" in p.stderr
    os.chmod(tok, 0o600)
    # (a short --client-timeout: test_api_bounds checks the default's 10 s)
    a = api(lv.prefix, ["--token-file", str(tok), "--client-timeout", "2"],
            host="0.0.0.0")
    a.host = "127.0.0.1"
    good = {"Authorization": "Bearer s3cret-token-0123456789"}
    for h in ({}, {"Authorization": "Bearer wrong"},
              {"Authorization": "s3cret-token-0123456789"}):
        st, r = a.req("PUT", "/v1/ports/0/netem", {"text": "delay 1ms"},
                      headers=h)
        assert st == 401, (h, r)
        assert a.req("GET", "/v1/config", headers=h)[0] == 401
    assert "delay 10ms" in lv.ctl("show", "netem", "0")[1]
    st, r = a.req("PUT", "/v1/ports/0/netem", {"text": "delay 1ms"},
                  headers=good)
    assert st == 200, r
    assert "delay 1ms" in lv.ctl("show", "netem", "0")[1]
    # a slow client is dropped, and others are still served
    s = socket.create_connection(("127.0.0.1", a.port))
    s.sendall(b"GET /v1/config HTTP/1.1\r\nHost: x\r\n")
    t0 = time.monotonic()
    s.settimeout(30)
    assert s.recv(100) == b""
    assert time.monotonic() - t0 < 10
    s.close()
    assert a.req("GET", "/v1/config", headers=good)[0] == 200
    a.stop()
    lv.stop()


def test_patch_under_load_changes_only_what_it_names(live, api):
    lv = live(["--netem", "delay 10ms 1ms loss 1% duplicate 1%", "--tbf",
               "rate 100mbit burst 32kb limit 128kb"])
    a = api(lv.prefix)
    tbf = a.req("GET", "/v1/ports/1/tbf")[1]["text"]
    for i in range(50):
        st, r = a.req("PATCH", "/v1/ports/1/netem",
                      {"text": "loss %d%%" % (i % 10 + 1)})
        assert st == 200, r
    n = a.req("GET", "/v1/ports/1/netem")[1]
    assert n["params"]["delay"] == "10ms 1ms" and \
        n["params"]["duplicate"] == "1%" and \
        n["params"]["loss"] == "random 10%", n
    assert a.req("GET", "/v1/ports/1/tbf")[1]["text"] == tbf
    assert a.req("GET", "/v1/ports/0/netem")[1]["params"]["loss"] == \
        "random 1%"
    a.stop()
    st = lv.stop()
    for p in ("0", "1"):
        x, y = conservation(st["ports"][p])
        assert x == y


def test_body_parser_garbage():
    """The body parser on malformed input: ApiError 400, never another
    exception (a fuzzing of its own, seeded, a few thousand bodies)."""
    import importlib.machinery
    import importlib.util
    import random
    loader = importlib.machinery.SourceFileLoader("shaper_api", API)
    spec = importlib.util.spec_from_loader("shaper_api", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    rnd = random.Random(26)
    seeds = [b'{"text": "delay 1ms"}', b'{"up": true}',
             b'[{"op": "set", "port": 0, "key": "netem", "text": "x"}]']
    for i in range(5000):
        b = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 6)):
            op = rnd.randint(0, 2)
            pos = rnd.randint(0, len(b))
            if op == 0:
                b[pos:pos] = bytes([rnd.randint(0, 255)])
            elif op == 1 and b:
                del b[min(pos, len(b) - 1)]
            elif b:
                b[min(pos, len(b) - 1)] = rnd.choice(b'{}[]",:0 \\\n')
        for want in ("text", "link", "batch"):
            try:
                r = mod.parse_body(bytes(b), want)
            except mod.ApiError as e:
                assert e.code == 400
                continue
            if want == "text":
                assert isinstance(r, str) and "\n" not in r and r
            elif want == "link":
                assert isinstance(r, bool)
            else:
                assert all("\n" not in l for l in r)


def test_for_field(live, api):
    """PUT/PATCH take an optional "for": the change expires (the CLI's
    `... for TIME`); GET's text stays the profile alone meanwhile."""
    lv = live(["--netem", "delay 10ms"])
    a = api(lv.prefix)
    st, r = a.req("PUT", "/v1/ports/0/netem",
                  {"text": "loss 100%", "for": "400ms"})
    assert st == 200 and "(reverts in" in r["output"], r
    st, r = a.req("GET", "/v1/ports/0/netem")
    assert nolimit(r["text"]) == "loss random 100%", r
    st, r = a.req("PATCH", "/v1/ports/1/netem",
                  {"text": "loss 5%", "for": "400ms"})
    assert st == 200 and "(reverts in" in r["output"], r
    assert nolimit(a.req("GET", "/v1/ports/1/netem")[1]["text"]) == \
        "delay 10ms loss random 5%"
    time.sleep(1.0)
    for p in (0, 1):
        assert nolimit(a.req("GET", "/v1/ports/%d/netem" % p)[1]["text"]) \
            == "delay 10ms"
    for bad in (5, "", "1 s", "soon", "500us"):
        st, r = a.req("PUT", "/v1/ports/0/netem",
                      {"text": "loss 1%", "for": bad})
        assert st == 400 and "error" in r, (bad, st, r)
    assert nolimit(a.req("GET", "/v1/ports/0/netem")[1]["text"]) == \
        "delay 10ms"


def test_delete_on_shards(live, api):
    """REST DELETE of every stage on a link of two shards over two workers
    (it once crashed the shaper: the shards' copies of an off change were
    twinned as confs), then the shaper still forwards on both shards and
    conserves."""
    lv = live(["--queues", "2", "--netem", "delay 1ms",
               "--tbf", "rate 500mbit burst 64kb limit 1mb",
               "--police", "rate 1gbit burst 1mb"], lcores="0@0,1@0,2@1")
    a = api(lv.prefix)
    for key in ("netem", "tbf", "police"):
        for p in ("0", "1"):
            st, body = a.req("DELETE", "/v1/ports/%s/%s" % (p, key))
            assert st == 200, (key, p, body)
            assert lv.proc.poll() is None, (key, p, lv.head)
    for key in ("netem", "tbf", "police"):
        st, prof = a.req("GET", "/v1/ports/1/%s" % key)
        assert st == 200 and prof["text"] == "off", (key, prof)
    time.sleep(0.3)
    stats = lv.stop()
    assert lv.proc.returncode == 0, lv.out[-3000:]
    assert "mbuf leak" not in lv.out
    for port in stats["ports"].values():
        a_, b_ = conservation(port)
        assert a_ == b_, port
        assert all(s["tx_packets"] > 0 for s in port["shards"]), port
