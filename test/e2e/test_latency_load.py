"""Latency under load: ping RTT in band 0 and band 1 while iperf3 saturates
the tbf rate, dpdk-shaper next to the kernel's pfifo_fast under tbf."""
import time

from shplib import TBF, Testbed, attempts, rtt_summary, stop_and_check

LOAD = "60M"   # UDP, TOS 0x00 (band 1), 120% of the 50 mbit rate


def pings_under_load(tb):
    h = tb.iperf3_start(t=5, udp=True, rate=LOAD, length=1400)
    time.sleep(1.5)
    p0 = tb.ping_start(count=25, interval=0.1, tos="0x10")
    p1 = tb.ping_start(count=25, interval=0.1, tos="0x00")
    r0 = rtt_summary(Testbed.ping_finish(p0))
    r1 = rtt_summary(Testbed.ping_finish(p1))
    load = Testbed.iperf3_finish(h)
    return r0, r1, load


def fmt(r):
    if not r["n"]:
        return "no replies"
    return "median %.2f  p90 %.2f  max %.2f ms (%d/25 replies)" % (
        r["median"], r["p90"], r["max"], r["n"])


def test_latency_under_load(testbed, kernel, shaper, record):
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF, "pfifo_fast")
    k0, k1, kl = pings_under_load(testbed)
    kernel.kernel_reset()
    record("latency", "kernel tbf+pfifo_fast: ping band 0", fmt(k0),
           "tbf %s, child pfifo_fast, txqueuelen 1000" % TBF)
    record("latency", "kernel tbf+pfifo_fast: ping band 1", fmt(k1))
    record("latency", "kernel: load delivered Mbit/s", kl["recv_bps"] / 1e6)

    def measure():
        s = shaper("--tbf", TBF)
        res = pings_under_load(testbed)
        st = stop_and_check(s)
        return s, res + (st,)

    def check(res):
        o0, o1, ol, st = res
        f = []
        if o0["n"] < 23:
            f.append("band-0 pings lost under load: %s" % o0)
        if o1["n"] < 1:
            return f + ["no band-1 ping answered under load"]
        # band 0 waits for at most the packet in service: a few ms at most
        if o0["n"] and o0["median"] > 5.0:
            f.append("band-0 RTT under load %s" % fmt(o0))
        # band 1 sits behind the standing queue, which tbf latency 50ms bounds
        if o0["n"] and o1["median"] < o0["median"] + 10.0:
            f.append("band 1 %s not behind a queue (band 0 %s)" % (fmt(o1), fmt(o0)))
        if o1["median"] > 50.0 + 15.0:
            f.append("band-1 RTT beyond tbf latency 50ms: %s" % fmt(o1))
        if not 45e6 <= ol["recv_bps"] <= 52e6:
            f.append("load through the shaper %.2f Mbit/s, not ~48.5" % (ol["recv_bps"] / 1e6))
        d = st["ports"]["1"]["drops"]
        if d.get("tbf_limit", 0) + d.get("band_full", 0) == 0:
            f.append("no queue drops at 120%% load: %s" % d)
        return f

    s, (o0, o1, ol, st), fails, notes = attempts(measure, check)
    record("latency", "dpdk-shaper: ping band 0", fmt(o0), s.cmdline())
    record("latency", "dpdk-shaper: ping band 1", fmt(o1))
    record("latency", "dpdk-shaper: load delivered Mbit/s", ol["recv_bps"] / 1e6)
    record("latency", "load command", ol["cmd"])
    for n in notes:
        record("latency", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
