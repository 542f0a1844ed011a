"""scripts/testbed as a person uses it (docs/testbed.md): `up` with two
queue pairs and a netem profile, ping and a 2 s iperf3 between the sides
through the shaper with `run`, the API on the loopback, then `down`, and
nothing of it left: namespaces, veths, processes, run directories."""
import glob
import json
import os
import re
import socket
import subprocess
import time
import urllib.request

import shplib

NET = os.environ.get("SHP_TESTBED_NET", "192.168.213")
LEFT, RIGHT = NET + ".1", NET + ".2"


def tb(*args, timeout=60, check=True):
    env = dict(os.environ, SHAPER_BIN=str(shplib.SHAPER))
    return shplib.run([str(shplib.TESTBED)] + list(args), timeout=timeout,
                      check=check, env=env)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_get(port, prefix, path):
    with open("/var/run/dpdk/%s/api-token" % prefix) as f:
        token = f.read().strip()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def ours(prefix):
    """Processes whose command line names the lab's --file-prefix."""
    found = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if prefix.encode() in args:
            found.append((int(d[6:]), b" ".join(args).decode(errors="replace")))
    return found


def leftovers(name, pids):
    prefix = "shp-" + name
    left = []
    netns = shplib.run(["ip", "netns", "list"], timeout=10).stdout
    left += [n for n in (prefix + "-a", prefix + "-b")
             if re.search(r"^%s\b" % re.escape(n), netns, re.M)]
    links = shplib.run(["ip", "-o", "link", "show"], timeout=10).stdout
    left += [v for v in ("sp%sa" % name, "sp%sb" % name, "sp%sbr" % name)
             if re.search(r"^\d+: %s[@:]" % v, links, re.M)]
    left += ["pid %d %s" % p for p in ours(prefix)]
    left += ["pid %d" % p for p in pids if os.path.exists("/proc/%d" % p)]
    left += glob.glob("/var/run/dpdk/%s" % prefix)
    left += glob.glob("/var/run/dpdk/%s-*" % prefix)
    left += glob.glob("/run/shp-testbed/%s" % name)
    return left


def test_lab_up_run_down(privileged):
    # a name of this run's own, as conftest's testbed fixture makes them
    name = ("e%dlab" % (os.getpid() % 100000))[:10]
    prefix = "shp-" + name
    api = free_port()
    pids, srv = [], None
    help_ = tb("--help")
    for word in ("up", "run", "status", "down", "--qpairs", "left|right"):
        assert word in help_.stdout, word
    try:
        up = tb("up", "--name", name, "--qpairs", "2", "--api-port",
                str(api), "--", "--netem", "delay 5ms", timeout=120)
        assert "dpdk-shaper pid" in up.stdout, up.stdout + up.stderr
        st = tb("status", "--name", name)
        assert "qpairs 2" in st.stdout and "127.0.0.1:%d" % api in st.stdout
        pids += [int(p) for p in re.findall(r"pid (\d+)", st.stdout)]
        assert len(pids) == 2, st.stdout
        # what the check after `down` looks for is there now
        seen = leftovers(name, pids)
        for what in (prefix + "-a", prefix + "-b", "sp%sa" % name,
                     "sp%sb" % name, "/var/run/dpdk/" + prefix,
                     "/run/shp-testbed/" + name):
            assert what in seen, (what, seen)
        assert len([w for w in seen if w.startswith("pid ")]) == 4, seen
        # up again while up: refused, the lab untouched
        again = tb("up", "--name", name, "--api-port", str(api), check=False)
        assert again.returncode == 1 and "up already" in again.stderr
        assert tb("status", "--name", name).stdout == st.stdout
        log = open("/run/shp-testbed/%s/shaper.log" % name).read()
        for p in (0, 1):
            assert re.search(r"port %d \(net_af_packet\): 2 RX queues" % p,
                             log), log

        # ping from the left: 5 ms of netem each way
        ping = tb("run", "--name", name, "left", "--", "ping", "-n", "-c",
                  "5", "-i", "0.2", "-W", "2", RIGHT, timeout=30)
        rtts = [float(x) for x in re.findall(r"time=([0-9.]+) ms",
                                             ping.stdout)]
        assert len(rtts) == 5 and min(rtts) >= 9.9, ping.stdout

        before = api_get(api, prefix, "/v1/stats")["ports"]["1"]["tx_bytes"]
        port = free_port()
        srv = subprocess.Popen(
            [str(shplib.TESTBED), "run", "--name", name, "right", "--",
             "iperf3", "-s", "-1", "-p", str(port), "-B", RIGHT,
             "--idle-timeout", "30"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        pids.append(srv.pid)
        end = time.monotonic() + 10
        while not tb("run", "--name", name, "right", "--", "ss", "-Hltn",
                     "sport = :%d" % port).stdout.strip():
            assert time.monotonic() < end and srv.poll() is None, \
                "iperf3 -s did not listen"
            time.sleep(0.1)
        cli = tb("run", "--name", name, "left", "--", "iperf3", "-c", RIGHT,
                 "-p", str(port), "-t", "2", "-J", "--connect-timeout",
                 "3000", timeout=40)
        res = json.loads(cli.stdout)["end"]["sum_received"]
        assert res["bits_per_second"] > 1e6, res
        srv.wait(timeout=15)
        # what iperf3 received crossed the shaper's port 1
        after = api_get(api, prefix, "/v1/stats")["ports"]["1"]["tx_bytes"]
        assert after - before >= res["bytes"], (before, after, res)
    finally:
        if srv is not None and srv.poll() is None:
            srv.kill()
            srv.wait(timeout=10)
        down = tb("down", "--name", name, timeout=120, check=False)
    assert down.returncode == 0, down.stderr
    assert leftovers(name, pids) == []
    # idempotent
    assert tb("down", "--name", name, timeout=60).returncode == 0
    st = tb("status", "--name", name, check=False)
    assert st.returncode == 1 and "down" in st.stdout


def test_lab_up_refused_leaves_nothing(privileged):
    """A shaper option it refuses: `up` says the shaper's own error, exits
    1 and removes what it made."""
    name = ("e%dlbf" % (os.getpid() % 100000))[:10]
    try:
        up = tb("up", "--name", name, "--api-port", str(free_port()), "--",
                "--netem", "bogus 5", timeout=120, check=False)
        assert up.returncode == 1, up.stdout + up.stderr
        assert "dpdk-shaper exited at start" in up.stderr, up.stderr
        assert "unknown keyword 'bogus'" in up.stderr, up.stderr
        assert leftovers(name, []) == []
    finally:
        tb("down", "--name", name, timeout=120, check=False)
