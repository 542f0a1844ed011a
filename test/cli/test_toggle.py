"""`disable P|all` and `enable P|all` (issue 61.3): a port as a bare wire
keeping its profile, under traffic, from every surface (a schedule, the
prompt, dpdk-shaper-ctl, the REST API); and `link down P carrier` (issue
61.8), which the kernel side of a net_tap port sees."""
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import (NULL_VDEVS, REPO, clean, conservation, outputs,
                      prefix, run_piped, shaper_cmd, wait_started)
from test_api import Api, api  # noqa: F401  (the fixture)
from test_ctl import CTL, live  # noqa: F401  (the fixture)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import pcaplib  # noqa: E402

RATE = 5000            # frames a second, paced
SECS = 3.6             # of traffic
DELAY_US = 5000        # the profile's delay
PROFILE = "delay 5ms loss 10%"


def seq_pcap(path, n, rate):
    frames = [pcaplib.eth_ipv4(0, 100, i) for i in range(n)]
    ts = [i * 10**9 // rate for i in range(n)]
    pcaplib.write(str(path), frames, ts)
    return ts


def seq_of(frame):
    # Ethernet 14 + IPv4 20 + UDP 8: the payload's first 4 bytes
    return int.from_bytes(frame[42:46], "big")


def ctl(pfx, *words):
    p = subprocess.run([CTL, "-f", pfx] + list(words), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def test_toggle_under_traffic_keeps_order_and_profile(tmp_path):
    """Sequence-numbered frames paced through port 0 to port 1, whose
    profile delays 5 ms and loses 10%; port 1 disabled and enabled by a
    schedule, at the prompt and through dpdk-shaper-ctl. What port 1 sent
    is in order, each frame at most once; every frame missing is a drop
    counted on port 1 (conservation exact), and none went missing while
    the port was a bare wire (frames sent with no delay on both sides of
    a gap); three bare-wire spells show; `show config` after each enable
    is the text before the disable."""
    n = int(RATE * SECS)
    ts = seq_pcap(tmp_path / "in.pcap", n, RATE)
    pcaplib.write(str(tmp_path / "empty.pcap"), [])
    out1 = tmp_path / "out1.pcap"
    sched = tmp_path / "s.txt"
    sched.write_text("0.5s disable 1\n0.9s enable 1\n")
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (tmp_path / "in.pcap",
                                                   tmp_path / "out0.pcap"),
             "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (tmp_path / "empty.pcap",
                                                   out1)]
    stats = str(tmp_path / "stats.json")
    pfx = prefix()
    cmd = shaper_cmd(vdevs, ["--netem-port", "1", PROFILE, "--pace",
                             "--schedule", str(sched),
                             "--stats-file", stats, "-i"],
                     file_prefix=pfx)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    head = wait_started(proc)
    t0 = time.monotonic()
    got = {}

    def at(t):
        time.sleep(max(0.0, t0 + t - time.monotonic()))

    def typed(line):
        proc.stdin.write((line + "\n").encode())
        proc.stdin.flush()

    def shell():
        at(0.3)
        got["before"] = ctl(pfx, "show", "config")
        at(1.3)
        typed("disable 1")
        at(1.7)
        typed("enable 1")
        at(2.1)
        got["disable"] = ctl(pfx, "disable", "1")
        got["shown"] = ctl(pfx, "show", "config")
        got["sched"] = ctl(pfx, "show", "schedule")
        at(2.5)
        got["enable"] = ctl(pfx, "enable", "1")
        got["after"] = ctl(pfx, "show", "config")
        at(SECS + 0.6)   # the capture sent, the delay line empty
        typed("quit")

    th = threading.Thread(target=shell)
    th.start()
    try:
        # (not communicate(): it would close the prompt's input)
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        th.join(timeout=60)
        if proc.poll() is None:
            proc.kill()
    out = head + clean(out.decode(errors="replace"))
    assert proc.returncode == 0, out
    for k in ("before", "disable", "shown", "sched", "enable", "after"):
        assert got[k][0] == 0, (k, got[k])
    # the profile back as it was; the port said disabled meanwhile
    assert got["after"][1] == got["before"][1], (got["before"], got["after"])
    assert "port 1 (peer 0) disabled" in got["shown"][1], got["shown"]
    assert "port 1 (peer 0)\n" in got["before"][1], got["before"]
    assert re.search(r"^port 1: link up, disabled\b", got["sched"][1],
                     re.M), got["sched"]
    assert got["disable"][1].startswith("port 1: disabled"), got["disable"]
    assert got["enable"][1].strip() == "port 1: enabled", got["enable"]
    # the schedule's and the prompt's (dpdk-shaper-ctl's went to it)
    assert out.count("port 1: disabled (a bare wire") == 2, out
    assert out.count("port 1: enabled") == 2, out

    with open(stats) as f:
        st = json.load(f)
    p1 = st["ports"]["1"]
    x, y = conservation(p1)
    assert x == y, p1
    assert p1["queued"] == 0 and "disabled" not in p1, p1
    _, frames = pcaplib.read(str(out1))
    seqs = [seq_of(b) for _, b in frames]
    # in order, none twice
    assert all(b > a for a, b in zip(seqs, seqs[1:])), \
        [(a, b) for a, b in zip(seqs, seqs[1:]) if b <= a][:5]
    assert p1["egress_in"] == n
    assert len(seqs) == p1["tx_packets"]
    lost = n - len(seqs)
    assert lost == sum(p1["drops"].values()), p1["drops"]
    assert p1["drops"]["lost"] > 0 and p1["drops"]["inbox_full"] == 0, \
        p1["drops"]
    # the delay of each frame sent, up to the clock's offset (the
    # smallest is a bare-wire frame's): under the profile no frame takes
    # less than 5 ms; on the wire one may wait (for the stages to drain,
    # or when the host takes the CPU away), but most take none
    d = [t - ts[s] for (t, _), s in zip(frames, seqs)]
    base = min(d)
    wire = [s for s, x in zip(seqs, d) if x - base < DELAY_US * 800]
    # the wire's spells: three, each of about 0.4 s of arrivals
    spells = [[wire[0], wire[0]]]
    for s in wire[1:]:
        if s - spells[-1][1] > 0.2 * RATE:
            spells.append([s, s])
        spells[-1][1] = s
    assert len(spells) == 3, spells
    assert all(hi - lo > 0.25 * RATE for lo, hi in spells), spells
    # every frame that arrived within a spell was sent: none lost on
    # the wire (the first and last of a spell arrived while disabled)
    sent = set(seqs)
    for lo, hi in spells:
        missing = [s for s in range(lo, hi + 1) if s not in sent]
        assert not missing, (lo, hi, missing[:10])
    # and under the profile frames went missing (10% loss)
    assert len([s for s in range(n) if s not in sent]) > 0.05 * n * 0.5


def test_bad_input_changes_nothing(tmp_path):
    """A port that is not there: one error line, nothing changed; a
    second disable (or an enable of an enabled port) says so and is no
    error; the words a toggle takes."""
    r = run_piped(tmp_path, ["show config", "disable 9", "show config",
                             "enable 0", "disable 0", "disable 0",
                             "disable all", "enable all", "show config",
                             "disable", "quit"],
                  ["--netem", PROFILE], timeout=60)
    o = outputs(r.out)
    assert o["disable 9"][0] == ("error: disable: no port '9': give all or "
                                 "a port id (the ports are 0, 1)\n"), r.out
    assert o["show config"][0] == o["show config"][1] == o["show config"][2]
    assert o["enable 0"][0] == "port 0: enabled already\n"
    assert o["disable 0"][0].startswith("port 0: disabled (a bare wire")
    assert o["disable 0"][1] == "port 0: disabled already\n"
    assert o["disable all"][0].splitlines() == [
        "port 0: disabled already",
        "port 1: disabled (a bare wire; the profile is kept: enable "
        "restores it)"]
    assert o["enable all"][0].splitlines() == ["port 0: enabled",
                                               "port 1: enabled"]
    assert len(o["disable"][0].splitlines()) == 1, o["disable"]
    assert len(r.errors()) == 2, r.errors()


def test_schedule_toggle_refused_offline_and_bad_lines(tmp_path):
    """A schedule's `disable` names a port that exists; the offline tool
    says it cannot run one."""
    bad = tmp_path / "bad.txt"
    bad.write_text("1s disable 7\n")
    r = run_piped(tmp_path, ["quit"], ["--schedule", str(bad)],
                  timeout=60)
    assert r.rc == 2 and "bad.txt:1: no port '7'" in r.out, r.out
    ok = tmp_path / "ok.txt"
    ok.write_text("1s disable 0\n")
    replay = os.path.join(os.path.dirname(CTL), "dpdk-shaper-replay")
    p = subprocess.run([replay,
                        os.path.join(REPO, "test", "data", "sample.pcap"),
                        str(tmp_path / "o.pcap"), "--schedule", str(ok)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    assert p.returncode == 2, p.stdout
    assert "disable and enable are the live program's only" in p.stdout


def test_rest_disable_enable(live, api):  # noqa: F811
    """POST /v1/ports/P/disable and /enable; /v1/config says disabled;
    what is not there is 404, another method 405; a link's carrier in
    its body."""
    lv = live(["--netem", PROFILE])
    a = api(lv.prefix)
    _, before = a.req("GET", "/v1/config")
    code, r = a.req("POST", "/v1/ports/0/disable")
    assert code == 200 and r["output"].startswith("port 0: disabled"), r
    code, c = a.req("GET", "/v1/config")
    assert code == 200 and c["0"]["disabled"] == 1, c
    assert c["1"]["disabled"] == 0, c
    code, r = a.req("GET", "/v1/stats")
    assert r["ports"]["0"]["disabled"] == 1, r["ports"]["0"]
    code, r = a.req("POST", "/v1/ports/0/enable")
    assert code == 200 and r["output"].strip() == "port 0: enabled", r
    _, after = a.req("GET", "/v1/config")
    assert after == before
    assert a.req("POST", "/v1/ports/9/disable")[0] == 404
    assert a.req("GET", "/v1/ports/0/disable")[0] == 405
    code, r = a.req("POST", "/v1/links/0", {"up": False, "carrier": 1})
    assert code == 400, r
    code, r = a.req("POST", "/v1/links/0", {"up": False, "carrier": True})
    assert code == 200 and "port 0: link down" in r["output"], r
    # net_null has no link to take down: one line says so
    assert "cannot set the link down" in r["output"], r
    code, r = a.req("POST", "/v1/links/0", {"up": True})
    assert code == 200, r
    # the Python client the same
    from shaper_client import Shaper
    with Shaper(lv.prefix) as c:
        assert c.disable(1).startswith("port 1: disabled (a bare wire")
        # (what was so already is said first)
        assert c.disable("all").split("\n")[:2] == [
            "port 1: disabled already",
            "port 0: disabled (a bare wire; the profile is kept: enable "
            "restores it)"]
        assert c.enable("all").split("\n")[:2] == ["port 0: enabled",
                                                   "port 1: enabled"]
        assert "port 1: link down" in c.link(1, False, carrier=True)
        assert c.link(1, True).strip() == "port 1: link up"
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


def operstate(iface):
    with open("/sys/class/net/%s/operstate" % iface) as f:
        return f.read().strip()


def lower_up(iface):
    out = subprocess.run(["ip", "link", "show", iface], capture_output=True,
                         text=True, timeout=10).stdout
    m = re.search(r"<([^>]*)>", out)
    return m is not None and "LOWER_UP" in m.group(1).split(","), out


def flags(iface):
    out = subprocess.run(["ip", "link", "show", iface], capture_output=True,
                         text=True, timeout=10).stdout
    m = re.search(r"<([^>]*)>", out)
    return set(m.group(1).split(",")) if m else set()


def test_carrier_on_net_tap(live):  # noqa: F811
    """`link down 0 carrier` on a net_tap port: within 1 s the kernel's
    side of the tap shows NO-CARRIER, as a pulled cable does: still UP
    (administratively), no LOWER_UP, operstate down; `link up 0` brings
    the carrier back."""
    iface = need_tap()
    lv = live([], vdevs=["net_tap0,iface=%s" % iface, "net_null1"])
    assert lower_up(iface)[0], lower_up(iface)[1]
    code, out = ctl(lv.prefix, "link", "down", "0", "carrier")
    assert code == 0 and "port 0: carrier down" in out, out
    t = time.monotonic()
    while lower_up(iface)[0] and time.monotonic() - t < 1.0:
        time.sleep(0.02)
    assert not lower_up(iface)[0], lower_up(iface)[1]
    assert {"NO-CARRIER", "UP"} <= flags(iface), lower_up(iface)[1]
    assert operstate(iface) == "down"
    code, out = ctl(lv.prefix, "link", "up", "0")
    assert code == 0 and "port 0: carrier up" in out, out
    t = time.monotonic()
    while not lower_up(iface)[0] and time.monotonic() - t < 1.0:
        time.sleep(0.02)
    assert lower_up(iface)[0], lower_up(iface)[1]
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


def need_tap():
    if os.geteuid() != 0 or not os.path.exists("/dev/net/tun"):
        print("skipped: net_tap needs root and /dev/net/tun")
        pytest.skip("net_tap needs root and /dev/net/tun")
    return "shptg%d" % (os.getpid() % 100000)


def test_schedule_carrier_on_net_tap(live, tmp_path):  # noqa: F811
    """A schedule's `link down 0 carrier` and the `link up 0` after it
    reach the device (at a control tick)."""
    iface = need_tap()
    s = tmp_path / "s.txt"
    s.write_text("0.5s link down 0 carrier\n1.5s link up 0\n")
    lv = live(["--schedule", str(s)],
              vdevs=["net_tap0,iface=%s" % iface, "net_null1"])
    t0 = time.monotonic()
    seen = set()
    while time.monotonic() - t0 < 2.5:
        seen.add((round(time.monotonic() - t0, 1), lower_up(iface)[0]))
        time.sleep(0.05)
    lv.stop()
    assert lv.proc.returncode == 0, lv.out
    down = sorted(t for t, up in seen if not up)
    assert down and down[0] < 1.5 and down[-1] < 2.0, sorted(seen)
    assert any(up for t, up in seen if t > 2.0), sorted(seen)
    assert "port 0: carrier down" in lv.out and \
        "port 0: carrier up" in lv.out, lv.out


def test_netem_outage_carrier_on_net_tap(live):  # noqa: F811
    """netem `outage 200ms 200ms carrier` on a net_tap port with traffic
    to it: the device's carrier goes down and back up with the outages,
    set by the main lcore; `show netem` keeps the word."""
    iface = need_tap()
    lv = live(["--netem-port", "0", "outage 200ms 200ms carrier"],
              vdevs=["net_tap0,iface=%s" % iface, "net_null1"])
    t0 = time.monotonic()
    states = []
    while time.monotonic() - t0 < 3.0:
        states.append(lower_up(iface)[0])
        time.sleep(0.03)
    code, out = ctl(lv.prefix, "show", "netem", "0")
    lv.stop()
    assert code == 0 and "outage 200ms 200ms carrier" in out, \
        (code, out)
    changes = sum(a != b for a, b in zip(states, states[1:]))
    assert changes >= 2, states
    assert lv.out.count("port 0: carrier down") >= 1, lv.out


@pytest.mark.parametrize("lcores,roles", [
    ("0@0,1@0,2@1", []),                                      # two owners
    ("0@0,1@0,2@1", ["--rx-lcores", "1", "--tx-lcores", "2"]),   # pipeline
])
def test_toggle_on_shards_under_flood(tmp_path, lcores, roles):
    """--queues 2 under a net_null flood, run to completion and as a
    pipeline: toggled four times at the prompt, each toggle made on both
    shards; conservation exact per port and per shard, nothing lost to
    the wire's ring, the pool full at exit (what a ring held when the
    run ended is flushed, not leaked), the profile after as before."""
    from test_shards_live import check_port
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(NULL_VDEVS, ["--queues", "2", "--netem", PROFILE,
                                  "--stats-file", str(stats), "-i"] + roles,
                     lcores=lcores)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    try:
        head = wait_started(p)
        for line in ["show config", "disable all", "enable all",
                     "disable 0", "enable 0", "disable all", "show config",
                     "enable all", "show config"]:
            time.sleep(0.3)
            p.stdin.write((line + "\n").encode())
            p.stdin.flush()
        time.sleep(0.3)
        # the end while port 1's stages still drain into its wire: what
        # the rings hold then is flushed
        out = head + clean(p.communicate(b"disable 1\nquit\n",
                                         timeout=60)[0].decode(
            errors="replace"))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out[-3000:]
    assert "mbuf leak" not in out
    o = outputs(out)
    assert "error" not in out.split("dpdk-shaper: 2 ports")[1].split(
        "shaper> quit")[0], out[-3000:]
    assert o["show config"][0] == o["show config"][2], o["show config"]
    assert o["show config"][1].count("disabled: a bare wire") == 2
    st = json.load(open(stats))
    for port in st["ports"].values():
        check_port(port)
        assert port["drops"]["inbox_full"] == 0, port["drops"]
        assert port["tx_packets"] > 0
    # the last word: port 1 disabled at exit, port 0 not
    assert st["ports"]["1"].get("disabled") is True
    assert "disabled" not in st["ports"]["0"]


def test_command_file_disables_before_forwarding(tmp_path):
    """`disable 1` in a --cmdline-file is made before the workers run
    (by the main lcore itself): forwarding starts with port 1 a bare
    wire; `enable 1` at the prompt gives the profile back; conservation
    exact."""
    f = tmp_path / "c.cmd"
    f.write_text("disable 1\n")
    r = run_piped(tmp_path, ["show config", "enable 1", "show config",
                             "quit"],
                  ["--netem", PROFILE, "--cmdline-file", str(f)],
                  timeout=60)
    assert r.rc == 0, r.out
    assert "port 1: disabled (a bare wire" in r.out
    o = outputs(r.out)
    assert "port 1 (peer 0) disabled" in o["show config"][0]
    assert "disabled" not in o["show config"][1]
    assert o["enable 1"][0] == "port 1: enabled\n"
    for port in r.stats["ports"].values():
        x, y = conservation(port)
        assert x == y, port
        assert port["drops"]["inbox_full"] == 0
