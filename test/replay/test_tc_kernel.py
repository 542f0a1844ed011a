"""tbf against the running kernel's own tbf (issue 11.2).

The same frames go through Linux's tbf on a veth pair in a private network
namespace and through dpdk-shaper-replay's tbf; what passes, what is
dropped as oversize and when each frame leaves must agree. Configurations
are chosen so that the old reading (a bucket of raw burst bytes, oversize
by wire length) differs from the kernel by far more than the timing noise
of a loaded machine (several milliseconds)."""
import os
import re
import subprocess
import sys

import pytest

import pcaplib
import retries
from test_offline import MS, T0, ok_run

PROBE = r'''
import os, socket, struct, sys, time
lens = [int(x) for x in sys.argv[1].split(",")]
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
rx.bind(("vB", 0))
rx.setsockopt(socket.SOL_SOCKET, 35, 1)          # SO_TIMESTAMPNS
rx.settimeout(4)
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind(("vA", 0))
sys.path.insert(0, sys.argv[2])
import pcaplib
# the receiver picks each frame up as it comes, not after the whole train
# is sent: see the clocks below
child = os.fork()
if child == 0:
    got = []
    try:
        while len(got) < len(lens):
            data, anc, _, _ = rx.recvmsg(4096, 64)
            # SO_TIMESTAMPNS stamps on the wall clock, which may be stepped
            # under us (a VM's guest clock was seen stepped by 0.5 ms every
            # 100 ms, and once by 3.6 ms within a train). Carried to
            # CLOCK_MONOTONIC, the clock tbf itself reads, by the offset
            # read as the frame is picked up, microseconds after the stamp:
            # a step inside that window is the only error left
            off = time.time_ns() - time.monotonic_ns()
            if len(data) < 46 or data[6:12] != b"\x02\x00\x00\x00\x00\x01":
                continue
            for lvl, typ, val in anc:
                if lvl == socket.SOL_SOCKET and typ == 35:
                    s, ns = struct.unpack("qq", val[:16])
                    got.append((pcaplib.seq_of(data), s * 10**9 + ns - off))
    except socket.timeout:
        pass
    for seq, t in got:
        print("R", seq, t)
    sys.stdout.flush()
    os._exit(0)
sent = []
for i, n in enumerate(lens):
    frame = pcaplib.eth_ipv4(0, n, i)
    # when the frame reached the qdisc: a sender that loses its CPU
    # between two frames hands them in later, and the kernel's bucket sees
    # them then
    sent.append(time.monotonic_ns())
    try:
        tx.send(frame)
    except OSError:       # ENOBUFS: the qdisc dropped it
        pass
_, status = os.waitpid(child, 0)
assert status == 0, status
for seq, t in enumerate(sent):
    print("S", seq, t)
'''


def sh(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stderr)
    return p


@pytest.fixture(scope="module")
def netns():
    if os.geteuid() != 0:
        pytest.skip("needs root to create a network namespace "
                    "(ip netns add)")
    name = "shp-tc-%d" % os.getpid()
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "-n", name, "link", "add", "vA", "mtu", "2000", "type",
           "veth", "peer", "name", "vB", "mtu", "2000")
        # no IPv6 chatter through the bucket
        sh("ip", "netns", "exec", name, "sysctl", "-q", "-w",
           "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        for dev in ("vA", "vB"):
            sh("ip", "-n", name, "link", "set", dev, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name])


def kernel(ns, conf, lens):
    """(departure offsets in ns of the frames received, by seq; dropped)"""
    sh("tc", "-n", ns, "qdisc", "replace", "dev", "vA", "root", "tbf",
       *conf.split())
    try:
        out = sh("ip", "netns", "exec", ns, sys.executable, "-c", PROBE,
                 ",".join(map(str, lens)),
                 os.path.dirname(os.path.dirname(os.path.abspath(
                     __file__)))).stdout
        st = sh("tc", "-n", ns, "-s", "qdisc", "show", "dev", "vA").stdout
    finally:
        sh("tc", "-n", ns, "qdisc", "del", "dev", "vA", "root")
    rows = [line.split() for line in out.splitlines()]
    sent = {int(a): int(b) for w, a, b in rows if w == "S"}
    got = sorted((int(a), int(b)) for w, a, b in rows if w == "R")
    dropped = int(re.search(r"dropped (\d+)", st).group(1))
    t0 = sent[0]
    return {seq: t - t0 for seq, t in got}, dropped, \
        [sent[i] - t0 for i in range(len(lens))]


def ours(tmp_path, conf, lens, at=None):
    """The same frames offline, arriving at offsets `at` (ns; default all
    at once): departures as offsets from the first arrival."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    at = at or [0] * len(lens)
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, n, i)
                             for i, n in enumerate(lens)],
                  [T0 + a for a in at], nano=True)
    s = ok_run(inp, out, "--tbf", conf, "--bands", "1")
    pk = pcaplib.read(str(out))[1]
    return {pcaplib.seq_of(f): t - T0 for t, f in pk}, \
        s["by_cause"]["tbf_oversize"]


@pytest.mark.parametrize("conf,lens", [
    ("rate 1mbit burst 1514 limit 100kb overhead 24",
     [999, 1200, 1500, 1514, 1515]),
    ("rate 1mbit burst 1600 limit 100kb linklayer atm",
     [999, 1200, 1500, 1514, 1601]),
    ("rate 1mbit burst 1600 limit 100kb mpu 2000", [999, 1200, 1500, 1514]),
    ("rate 1mbit burst 1514 limit 100kb peakrate 2mbit mtu 1514 "
     "overhead 4", [999, 1200, 1500, 1514, 1515]),
])
def test_oversize_as_kernel(netns, tmp_path, conf, lens):
    """The same frames pass, the same are dropped."""
    k, kdrop, at = kernel(netns, conf, lens)
    o, odrop = ours(tmp_path, conf, lens, at)
    assert sorted(k) == sorted(o), (k, o)
    assert kdrop == odrop, (kdrop, odrop)


@pytest.mark.parametrize("conf,n,length", [
    # bucket 808 ms of 1100-byte costs (88 ms): 9 at once, the 10th
    # 72 ms later (a raw-burst bucket says 80 ms)
    ("rate 100kbit burst 10000 limit 1mb overhead 100", 12, 1000),
    # 427 cells of bucket, 21 per frame: 20 at once, the 21st 14 cells
    # (29.68 ms) later (18 at once with a raw-burst bucket)
    ("rate 200kbit burst 20kb limit 10mb linklayer atm", 23, 1000),
    # mpu raises every cost and the bucket alike
    ("rate 100kbit burst 5000 limit 1mb mpu 1250", 8, 600),
])
def test_departures_as_kernel(netns, tmp_path, conf, n, length):
    """Each frame of a train leaves when the kernel's tbf lets it go,
    within the timing noise of a loaded machine, offline fed the times
    the frames reached the kernel's qdisc."""
    lens = [length] * n
    tries = []
    # The kernel's departures carry its timer and softirq latency, and a
    # VM's stolen time: one frame in about a thousand left 3.7-4.5 ms late
    # here while the next left on time (its bucket kept the tokens). Ours
    # is offline and exact, so an error of our model shows in every try;
    # a late kernel, rarely twice in a row.
    for _ in range(3):
        k, _, at = kernel(netns, conf, lens)
        # offline the frames arrive when the kernel's did: the same bucket
        # then lets them go at the same times
        o, _ = ours(tmp_path, conf, lens, at)
        assert sorted(k) == sorted(o) == list(range(n)), (k, o)
        worst = max(abs(k[i] - o[i]) for i in range(n))
        said = "try %d: %s: kernel %s ms, ours %s ms, worst %.3f ms" % (
            len(tries) + 1, conf, [round(k[i] / MS, 3) for i in range(n)],
            [round(o[i] / MS, 3) for i in range(n)], worst / MS)
        print(said)
        tries.append(said)
        if worst < 3 * MS:
            break
    assert worst < 3 * MS, tries
    if len(tries) > 1:
        retries.passed_after_retry(len(tries), tries)
