"""Jumbo frames end to end (issue 29.1): veths of MTU 9216 through
net_af_packet with a frame size for jumbo frames and the shaper with
--mtu 9000. A 9000-byte ping gets through and a 9100-byte one is dropped
as `oversize` (the veths would carry it: the shaper's MTU is what stops
it); TCP with a 8948-byte MSS through tbf 500mbit has the kernel tbf's
goodput on the same path within 5%."""
import pytest

import shplib
from shplib import attempts, goodput_errors, run, stop_and_check

VETH_MTU = "9216"
TBF_J = "rate 500mbit burst 64kb latency 50ms"
MSS = "8948"      # + 52 bytes of IPv4, TCP and timestamps: 9000


class JumboShaper(shplib.Shaper):
    def eal_args(self):
        # af_packet's ring frames hold frames of framesz - 52 bytes (its
        # default, 2048, holds 1996): 9216 holds 9164, four to a block
        args = super().eal_args()
        return [a + ",framesz=9216,blocksz=36864"
                if a.startswith("net_af_packet") else a for a in args]


def jumbo_args(*args):
    # a pool that fits -m 512 with mbufs of 9.3 KB (one ring frame each)
    return ["--mtu", "9000", "--mbufs", "16384"] + list(args)


def set_mtu(tb, mtu):
    for ns, ifn in ((tb.ns_a, tb.env["TB_IF_A"]), (tb.ns_b, tb.env["TB_IF_B"])):
        run(["ip", "-n", ns, "link", "set", ifn, "mtu", mtu], timeout=10)
    for ifn in (tb.root_a, tb.root_b):
        run(["ip", "link", "set", ifn, "mtu", mtu], timeout=10)


@pytest.fixture
def jumbo(testbed, tmp_path):
    set_mtu(testbed, VETH_MTU)
    started = []

    def start(*app_args):
        s = JumboShaper(testbed, tmp_path, list(app_args), tag="jumbo")
        started.append(s)
        return s.start()
    yield start
    for s in started:
        s.stop()
    set_mtu(testbed, "1500")


def test_jumbo_ping_and_oversize(testbed, jumbo):
    s = jumbo(*jumbo_args())
    # -s 8972: an IPv4 packet of 9000 bytes (8 of ICMP, 20 of IP)
    ok = testbed.ping(count=10, interval=0.05, size=8972)
    big = testbed.ping(count=10, interval=0.05, size=9072)
    st = stop_and_check(s)
    assert len(ok) >= 9, ok
    assert big == [], big
    # what the 9100-byte echo requests became
    assert st["ports"]["1"]["drops"]["oversize"] >= 10, st["ports"]["1"]
    assert "mtu 9000" in s.log.read_text()


def test_jumbo_tcp_tbf_vs_kernel(testbed, kernel, jumbo, record):
    set_mtu(testbed, VETH_MTU)
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF_J)
    k = testbed.iperf3(t=5, omit=1, extra=("-M", MSS))
    kernel.kernel_reset()
    record("jumbo", "kernel tbf TCP goodput Mbit/s (MSS %s)" % MSS,
           k["bps"] / 1e6, "tc qdisc replace dev ROOT_{A,B} root tbf " + TBF_J)
    assert k["bps"] > 200e6, "kernel reference implausible: %s" % k

    def measure():
        s = jumbo(*jumbo_args("--tbf", TBF_J))
        o = testbed.iperf3(t=5, omit=1, extra=("-M", MSS))
        st = stop_and_check(s)
        return s, (o, st, s.lost)

    def check(res):
        o, st, lost = res
        f = goodput_errors(o["bps"], k["bps"], "kernel", lost)
        d = st["ports"]["1"]["drops"]
        if d.get("oversize", 0) or d.get("tbf_oversize", 0):
            f.append("oversize drops: %s" % d)
        if st["ports"]["1"]["tx_bytes"] < 100 * 9000:
            f.append("no jumbo traffic: %s" % st["ports"]["1"])
        return f

    s, (o, st, _), fails, notes = attempts(measure, check)
    record("jumbo", "dpdk-shaper tbf TCP goodput Mbit/s (MSS %s)" % MSS,
           o["bps"] / 1e6, s.cmdline())
    for n in notes:
        record("jumbo", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
