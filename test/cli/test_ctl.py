"""The control socket and dpdk-shaper-ctl (issue 26) against a live shaper
on net_null: changes applied and seen by `show` and /shaper/config, exit
statuses, the socket's mode, and clients that misbehave (garbage, long and
half lines, too many connections) changing nothing while forwarding goes
on."""
import grp
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from conftest import (ASAN_BIN, BIN, BUILD, NULL_VDEVS, REPO, clean,
                      conservation, prefix, shaper_cmd, telemetry,
                      wait_started)

sys.path.insert(0, os.path.join(REPO, "scripts"))
from shaper_client import Refused, Shaper, sock_path  # noqa: E402

CTL = os.path.join(BUILD, "tools", "dpdk-shaper-ctl")
if not os.path.exists(CTL):   # a sanitizer build may hold only the program
    CTL = os.path.join(REPO, "build", "tools", "dpdk-shaper-ctl")


class Live:
    """A shaper running without a prompt, its control socket up."""

    def __init__(self, tmp_path, app_args=(), vdevs=NULL_VDEVS, binary=None,
                 lcores="0-1", file_prefix=None):
        # file_prefix: a shaper started again where another one was
        self.prefix = file_prefix or prefix()
        self.stats = str(tmp_path / ("stats-%s.json" % self.prefix))
        self.proc = subprocess.Popen(
            shaper_cmd(vdevs, list(app_args) + ["--stats-file", self.stats],
                       file_prefix=self.prefix, binary=binary,
                       lcores=lcores),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.head = wait_started(self.proc)
        self.path = sock_path(self.prefix)
        deadline = time.monotonic() + 20
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.path)
                s.close()
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError("no control socket: " + self.head)
                time.sleep(0.05)

    def ctl(self, *words, json_form=False):
        cmd = [CTL, "-f", self.prefix] + (["--json"] if json_form else [])
        p = subprocess.run(cmd + list(words), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def stop(self):
        self.proc.send_signal(2)
        out, _ = self.proc.communicate(timeout=60)
        self.out = self.head + clean(out.decode(errors="replace"))
        with open(self.stats) as f:
            return json.load(f)


@pytest.fixture
def live(tmp_path):
    procs = []

    def start(app_args=(), vdevs=NULL_VDEVS, binary=None, lcores="0-1",
              file_prefix=None):
        lv = Live(tmp_path, app_args, vdevs, binary, lcores, file_prefix)
        procs.append(lv)
        return lv
    yield start
    for lv in procs:
        if lv.proc.poll() is None:
            lv.proc.kill()
            lv.proc.wait()


def test_set_show_and_telemetry(live, need_telemetry_client):
    lv = live(["--netem", "delay 10ms loss 1%"])
    rc, out, err = lv.ctl("set", "netem", "0", "delay", "50ms")
    assert rc == 0, (out, err)
    assert "port 0: netem" in out and "delay 50ms" in out and "(was" in out
    rc, out, _ = lv.ctl("show", "netem", "0")
    assert rc == 0 and "delay 50ms" in out and "loss" not in out.split("\n")[0]
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    assert "delay 50ms" in conf["0"]["netem"], conf
    assert "delay 10ms" in conf["1"]["netem"], conf   # port 1 untouched
    rc, out, _ = lv.ctl("set", "tbf", "1", "rate", "10mbit", "burst", "10kb",
                        "limit", "100kb")
    assert rc == 0 and "tbf rate 10Mbit" in out
    assert "rate 10Mbit" in telemetry(lv.prefix, "/shaper/config")[0]["1"]["tbf"]
    rc, out, _ = lv.ctl("link", "down", "1")
    assert rc == 0
    rc, out, _ = lv.ctl("show", "schedule")
    assert "port 1: link down" in out
    # a word with a blank is sent quoted, as class rules take it
    rc, out, err = lv.ctl("set", "class", "web", "match", "ip_proto 6",
                          "netem", "delay 5ms")
    assert rc == 0, (out, err)
    rc, out, _ = lv.ctl("show", "class", "web")
    assert rc == 0 and "delay 5ms" in out
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out
    for p in ("0", "1"):
        a, b = conservation(st["ports"][p])
        assert a == b, (p, st["ports"][p])


def test_refused_changes_nothing(live):
    lv = live(["--netem", "delay 10ms loss 1%"])
    _, before, _ = lv.ctl("show", "config")
    for words in (["set", "netem", "0", "delay", "10m"],
                  ["set", "netem", "7", "delay", "1ms"],
                  ["set", "netem"],
                  ["shw", "config"],
                  ["set", "classify", "foo"]):
        rc, out, err = lv.ctl(*words)
        assert rc == 1, (words, out, err)
        assert err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert out == ""
    _, after, _ = lv.ctl("show", "config")
    assert after == before
    rc, out, _ = lv.ctl("show", "netem", "0")
    assert "delay 10ms" in out and "loss random 1%" in out
    lv.stop()


def test_json_reply(live):
    lv = live()
    rc, out, _ = lv.ctl("set", "netem", "0", "delay", "7ms", json_form=True)
    assert rc == 0
    r = json.loads(out)
    assert r["status"] == "ok" and r["command"] == "set netem 0 delay 7ms"
    assert "delay 7ms" in r["output"]
    rc, out, _ = lv.ctl("set", "netem", "0", "delay", "x", json_form=True)
    assert rc == 1
    r = json.loads(out)
    assert r["status"] == "error" and r["output"].startswith("error: ")
    lv.stop()


def test_missing_shaper_and_usage():
    p = subprocess.run([CTL, "-f", "h26_nobody_here", "show", "config"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=10)
    assert p.returncode == 3
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1
    assert "/dpdk/h26_nobody_here/shaper_ctl.sock" in p.stderr
    for args in ([], ["-f"], ["--bogus", "show", "config"],
                 ["-f", "a/b", "show", "config"]):
        p = subprocess.run([CTL] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=10)
        assert p.returncode == 2, (args, p.stderr)
    # the default prefix is DPDK's
    p = subprocess.run([CTL, "show", "config"], stderr=subprocess.PIPE,
                       text=True, timeout=10)
    assert p.returncode in (0, 3)
    if p.returncode == 3:
        assert "/dpdk/rte/shaper_ctl.sock" in p.stderr


def test_socket_mode_group_and_off(live):
    lv = live()
    st = os.stat(lv.path)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    lv.stop()
    assert not os.path.exists(lv.path)     # removed at exit
    g = grp.getgrgid(1).gr_name
    run_dpdk = os.path.dirname(os.path.dirname(lv.path))
    was = os.stat(run_dpdk)
    lv = live(["--ctl-group", g])
    st = os.stat(lv.path)
    assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == 1
    lv.stop()
    # the group was let through the shared run directory: as it was
    os.chown(run_dpdk, was.st_uid, was.st_gid)
    os.chmod(run_dpdk, stat.S_IMODE(was.st_mode))
    p = subprocess.run(shaper_cmd(NULL_VDEVS, ["--ctl-group",
                                               "h26_no_such_group"]),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    assert p.returncode == 2 and "no such group" in p.stdout


def test_no_ctl(tmp_path):
    pre = prefix()
    proc = subprocess.Popen(shaper_cmd(NULL_VDEVS, ["--no-ctl"],
                                       file_prefix=pre),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_started(proc)
        time.sleep(0.5)
        assert not os.path.exists(sock_path(pre))
        assert os.path.isdir(os.path.dirname(sock_path(pre)))
    finally:
        proc.send_signal(2)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def recv_reply(s):
    """One framed text reply: (status, lines)."""
    buf = b""
    while not buf.endswith(b"\n.\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    lines = buf.decode(errors="replace").split("\n")
    return lines[0], lines[1:-2]


def test_garbage_long_half_lines_and_many_clients(live):
    lv = live(["--netem", "delay 10ms"])
    _, before, _ = lv.ctl("show", "config")
    c1 = Shaper(path=lv.path)
    tx0 = int(c1.cmd("show port stats 1").split("tx_packets: ")[1].split()[0])

    s = socket.socket(socket.AF_UNIX)
    s.connect(lv.path)
    s.sendall(b"\x00\x01\xffset netem 0 delay 1ms\n")
    st, lines = recv_reply(s)
    assert st == "error" and "not text" in lines[0]
    s.sendall(b"set netem 0 delay 1ms " + b"x" * 3000 + b"\n")
    st, lines = recv_reply(s)
    assert st == "error" and "more than 2048" in lines[0]
    s.sendall(b"\xc3\x28 show config\n")       # not UTF-8
    st, lines = recv_reply(s)
    assert st == "error"
    # still served after all that, \r\n too
    s.sendall(b"show netem 0\r\n")
    st, lines = recv_reply(s)
    assert st == "ok" and "delay 10ms" in lines[0]
    # a half line, then hang up: not run
    s.sendall(b"set netem 0 delay 1ms")
    s.close()

    # more connections than it serves: the extra ones get an error and are
    # closed; the others are still served
    socks = []
    refused = 0
    for _ in range(200):
        t = socket.socket(socket.AF_UNIX)
        t.settimeout(10)
        try:
            t.connect(lv.path)
        except OSError:
            refused += 1       # the listen backlog is full: refused too
            t.close()
            continue
        socks.append(t)
    time.sleep(0.5)
    busy = 0
    for t in socks:
        t.setblocking(False)
        try:
            d = t.recv(4096)
        except BlockingIOError:
            continue
        if b"too many control clients" in d:
            busy += 1
    assert busy + refused >= 200 - 16, (busy, refused)
    for t in socks:
        t.close()
    time.sleep(0.3)
    assert lv.ctl("show", "config")[1] == before
    tx1 = int(c1.cmd("show port stats 1").split("tx_packets: ")[1].split()[0])
    assert tx1 > tx0          # forwarding went on
    c1.close()
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out
    for p in ("0", "1"):
        a, b = conservation(st["ports"][p])
        assert a == b


def test_half_line_times_out(live):
    lv = live(["--netem", "delay 10ms"])
    s = socket.socket(socket.AF_UNIX)
    s.connect(lv.path)
    s.settimeout(15)
    s.sendall(b"set netem 0 delay 1ms")
    t0 = time.monotonic()
    st, lines = recv_reply(s)
    waited = time.monotonic() - t0
    assert st == "error" and "half a line" in lines[0]
    assert 4.5 < waited < 12, waited
    assert s.recv(10) == b""                   # then closed
    s.close()
    assert "delay 10ms" in lv.ctl("show", "netem", "0")[1]
    lv.stop()


# on the release build and on the AddressSanitizer one (build-san, which
# scripts/test.sh builds): no crash, no leak, whoever publishes
@pytest.mark.parametrize("binary", ["release", "asan"])
def test_two_clients_under_load_last_change_wins(live, binary):
    if binary == "asan" and not os.path.exists(ASAN_BIN):
        pytest.skip("no build-san (scripts/test.sh builds it)")
    lv = live(["--netem", "delay 1ms"],
              binary=ASAN_BIN if binary == "asan" else BIN)
    n = 1000
    errors = []
    last = {}

    def client(port):
        try:
            with Shaper(path=lv.path) as c:
                for i in range(n):
                    us = 100 + (i * 7 + port) % 900
                    out = c.set("netem", port, "delay %dus" % us)
                    assert "port %d: netem" % port in out, out
                    last[port] = us
        except Exception as e:       # reported by the main thread
            errors.append(repr(e))

    th = [threading.Thread(target=client, args=(p,)) for p in (0, 1)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout=600)
    assert not errors, errors[:3]
    assert set(last) == {0, 1}
    for p in (0, 1):
        out = lv.ctl("show", "netem", str(p))[1]
        assert "delay %dus" % last[p] in out, (p, last[p], out)
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out
    assert "AddressSanitizer" not in lv.out and "LeakSanitizer" not in lv.out
    for p in ("0", "1"):
        a, b = conservation(st["ports"][p])
        assert a == b, (p, st["ports"][p])
        assert st["ports"][p]["tx_packets"] > 0


def test_atomic_all_or_nothing(live, tmp_path, need_telemetry_client):
    lv = live(["--netem", "delay 10ms loss 1%"])
    _, before, _ = lv.ctl("show", "config")
    good = tmp_path / "good.cmd"
    # one bad line anywhere: nothing of the file applies
    for bad_line in ("set tbf 1 rate 10",                # the parser
                     "set queue 1 fq_codel",             # the stage
                     "show config",                      # not a change
                     "sett netem 0 delay 1ms",           # no command
                     "set netem 0 delay 99ms"):          # 0 changed twice
        f = tmp_path / "bad.cmd"
        f.write_text("set netem 0 delay 20ms\nupdate netem 1 loss 5%%\n"
                     "%s\n" % bad_line)
        rc, out, err = lv.ctl("--atomic", str(f))
        assert rc == 1, (bad_line, out, err)
        assert "nothing" in err, err
        assert lv.ctl("show", "config")[1] == before, bad_line
    good.write_text("# a comment\nset netem 0 delay 20ms\n\n"
                    "update netem 1 loss 5%\n"
                    "set tbf all rate 10mbit burst 10kb limit 100kb\n")
    rc, out, err = lv.ctl("--atomic", str(good))
    assert rc == 0, (out, err)
    assert "atomic: 3 changes applied at once" in out
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    assert conf["0"]["netem"].endswith("delay 20ms"), conf
    assert "delay 10ms loss random 5%" in conf["1"]["netem"], conf
    assert "rate 10Mbit" in conf["0"]["tbf"] and "rate 10Mbit" in conf["1"]["tbf"]
    # from stdin, JSON reply
    p = subprocess.run([CTL, "-f", lv.prefix, "--json", "--atomic", "-"],
                       input="clear tbf all\nclear netem 1\n",
                       stdout=subprocess.PIPE, text=True, timeout=30)
    assert p.returncode == 0, p.stdout
    assert json.loads(p.stdout)["status"] == "ok"
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    assert conf["0"]["tbf"] == "off" and conf["1"]["netem"] == "off", conf
    # forwarding stopped: the main lcore makes the changes itself
    with Shaper(lv.prefix) as sh:
        sh.stop()
        assert "2 changes applied at once" in sh.atomic(
            ["set netem 0 delay 7ms", "set netem 1 delay 8ms"])
        sh.start()
        conf = telemetry(lv.prefix, "/shaper/config")[0]
        assert conf["0"]["netem"].endswith("delay 7ms"), conf
        assert conf["1"]["netem"].endswith("delay 8ms"), conf
        with pytest.raises(Refused):   # (the client's own form of 1)
            sh.atomic(["set netem 0 delay 1ms", "set netem 1 delay 1m"])
        assert telemetry(lv.prefix, "/shaper/config")[0] == conf
    # usage errors of the tool
    assert lv.ctl("--atomic", str(tmp_path / "missing"))[0] == 2
    assert lv.ctl("--atomic", str(good), "show", "config")[0] == 2
    st = lv.stop()
    for p in ("0", "1"):
        a, b = conservation(st["ports"][p])
        assert a == b


def test_body_lines(live):
    """`body METHOD PATH LENGTH` and LENGTH bytes: the shaper parses a REST
    body itself (lib/conf/ctl_body.c). The bytes are no lines, however they are
    cut; a bad header or body is refused and changes nothing."""
    lv = live(["--netem", "delay 10ms"])
    s = socket.socket(socket.AF_UNIX)
    s.connect(lv.path)
    s.settimeout(15)
    body = b'{"text":\n "delay 20ms",\n "x": "set netem 1 delay 1ms\\n"}'
    data = b"body PATCH /v1/ports/0/netem %d\n" % len(body) + body
    for i in range(len(data)):            # byte by byte
        s.sendall(data[i:i + 1])
    st, lines = recv_reply(s)
    assert st == "ok" and "delay 20ms (was" in lines[0], lines
    # a body and the line after it in one piece: two replies
    s.sendall(data.replace(b"20ms", b"30ms") + b"show netem 1\n")
    buf = b""
    while buf.count(b"\n.\n") < 2:
        d = s.recv(65536)
        assert d, buf
        buf += d
    first, second = buf.decode().split("\n.\n")[:2]
    assert first.startswith("ok\n") and "delay 30ms (was" in first, buf
    assert second.startswith("ok\n") and "delay 10ms" in second, buf
    assert "delay 1ms" not in buf.decode()   # the body's bytes ran no line
    # refused: the body's shape, a bad header; nothing changed
    before = lv.ctl("show", "config")[1]
    bad = b'{"text": "delay 1ms\\nclear netem 0"}'
    s.sendall(b"body PUT /v1/ports/0/netem %d\n" % len(bad) + bad)
    st, lines = recv_reply(s)
    assert st == "error" and lines[0].startswith("error: body: "), lines
    for hdr in (b"body PUT /v1/ports/0/netem\n", b"body PUT x -1\n",
                b"body PUT x 70000\n", b"body PUT x 5 6\n"):
        s.sendall(hdr)
        st, lines = recv_reply(s)
        assert st == "error" and "usage: body" in lines[0], (hdr, lines)
    s.sendall(b'json body POST /v1/batch 3\n[1]')
    r = json.loads(s.recv(65536).decode())
    assert r["status"] == "error" and "change 1" in r["output"], r
    assert lv.ctl("show", "config")[1] == before
    # half a body, then nothing: an error, closed, not run
    s.sendall(b"body PUT /v1/ports/0/netem 100\n{\"text\": ")
    st, lines = recv_reply(s)
    assert st == "error" and "half a line" in lines[0], lines
    assert s.recv(10) == b""
    s.close()
    assert lv.ctl("show", "config")[1] == before
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


@pytest.mark.parametrize("layout", ["rtc", "pipeline"])
def test_atomic_is_one_publish(live, layout):
    """Two profiles that drop every frame, one at tbf (frames longer than
    its burst: tbf_oversize) and one at netem (loss 100%), swapped in
    under load by batches that change tbf first. The owner makes a
    batch's changes between two of its rounds, so every frame meets
    either profile and none leaves; a batch published one stage after
    the other lets frames through the new tbf and the old netem."""
    args = ["--tbf", "rate 100gbit burst 32 limit 64kb",
            "--netem", "delay 1us"]
    if layout == "pipeline":   # an RX lcore and a TX lcore
        lv = live(args + ["--rx-lcores", "1", "--tx-lcores", "2"],
                  lcores="0@0,1@0,2@1")
    else:
        lv = live(args)
    a = ["set tbf all rate 100gbit burst 32 limit 64kb",
         "set netem all delay 1us"]
    b = ["set tbf all rate 100gbit burst 1mb limit 64kb",
         "set netem all delay 1us loss 100%"]
    with Shaper(lv.prefix) as sh:
        for i in range(300):
            sh.atomic(b if i % 2 == 0 else a)
        out = sh.show("tbf")
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out
    assert "burst 32b" in out or "burst 32" in out, out
    for p in ("0", "1"):
        port = st["ports"][p]
        a_, b_ = conservation(port)
        assert a_ == b_, (p, port)
        d = port["drops"]
        # both profiles met, at load
        assert d.get("tbf_oversize", 0) > 10000 and d.get("lost", 0) > 10000, d
        assert port["tx_packets"] == 0, (p, port["tx_packets"], d)


def test_stages_off_on_shards(live, tmp_path, need_telemetry_client):
    """Every way of turning a stage off, on a link of two shards on two
    workers (--queues 2, the default as soon as there are two workers):
    a schedule's `set netem all off` at start, `clear`, `set ... off`, a
    class's stage off, an atomic batch with a clear, and a `for` whose
    change back is off. Each once crashed the shaper (the shards' copies
    of an off change were twinned as confs). After them the shaper still
    forwards on both shards, conservation holds per port and per shard,
    and the pool is full at exit."""
    sched = tmp_path / "off.txt"
    sched.write_text("0 set netem all off\n200ms set netem all delay 1ms\n")
    lv = live(["--queues", "2", "--netem", "delay 1ms",
               "--tbf", "rate 500mbit burst 64kb limit 1mb",
               "--police", "rate 1gbit burst 1mb", "--schedule", str(sched)],
              lcores="0@0,1@0,2@1")
    time.sleep(0.5)   # the schedule's off and on, both made
    for words in (["clear", "netem", "0"], ["set", "tbf", "0", "off"],
                  ["set", "police", "0", "off"],
                  ["set", "class", "web", "match", "dst_ip 10.1.0.0/16",
                   "netem", "delay 2ms"],
                  ["set", "class", "web", "netem", "off"],
                  ["set", "netem", "0", "delay", "1ms", "for", "200ms"]):
        rc, out, err = lv.ctl(*words)
        assert rc == 0, (words, out, err)
        assert lv.proc.poll() is None, (words, lv.head)
    batch = tmp_path / "off.cmd"
    batch.write_text("clear tbf all\nclear netem 1\nset police 1 off\n")
    rc, out, err = lv.ctl("--atomic", str(batch))
    assert rc == 0, (out, err)
    time.sleep(0.5)   # the `for` reverts to off
    assert lv.proc.poll() is None, lv.head
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    for p in ("0", "1"):
        assert conf[p]["netem"] == "off" and conf[p]["tbf"] == "off", conf
        assert conf[p]["police"] == "off", conf
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out[-3000:]
    assert "mbuf leak" not in lv.out
    for port in st["ports"].values():
        a, b = conservation(port)
        assert a == b, port
        assert all(s["tx_packets"] > 0 for s in port["shards"]), port
