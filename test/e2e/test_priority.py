"""Priority: two UDP flows, TOS 0x10 (band 0) and 0x00 (band 1), each offering
the full bottleneck rate, through pfifo_fast bands -> tbf."""
import time

from shplib import TBF, RATE_BPS, Testbed, attempts, stop_and_check

LEN = 1400
# UDP payload rate whose Ethernet frames (+42 bytes) fill 50 Mbit/s
PAYLOAD_BPS = int(RATE_BPS * LEN / (LEN + 42))


def two_flows(tb):
    h1 = tb.iperf3_start(t=5, udp=True, rate=PAYLOAD_BPS, length=LEN, tos="0x00")
    time.sleep(0.5)
    h0 = tb.iperf3_start(t=4, udp=True, rate=PAYLOAD_BPS, length=LEN, tos="0x10")
    r0 = Testbed.iperf3_finish(h0)
    r1 = Testbed.iperf3_finish(h1)
    return r0, r1


def test_priority_band0_gets_its_load(testbed, kernel, shaper, record):
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF, "pfifo_fast")
    k0, k1 = two_flows(testbed)
    kernel.kernel_reset()
    record("priority", "kernel: TOS 0x10 delivered/offered", k0["delivered"],
           "tbf %s + child pfifo_fast (nft tos->priority on the bridge)" % TBF)
    record("priority", "kernel: TOS 0x00 delivered/offered", k1["delivered"])

    def measure():
        s = shaper("--tbf", TBF)
        o0, o1 = two_flows(testbed)
        st = stop_and_check(s)
        return s, (o0, o1, st)

    def check(res):
        o0, o1, st = res
        f = []
        if o0["sent_bps"] < 0.95 * PAYLOAD_BPS:
            f.append("band-0 flow did not offer the full rate: %s" % o0)
        if o1["sent_bps"] < 0.95 * PAYLOAD_BPS:
            f.append("band-1 flow did not offer the full rate: %s" % o1)
        if o0["delivered"] < 0.90:
            f.append("band-0 flow got %.1f%% of its offered load (need >= 90%%): %s" % (
                100 * o0["delivered"], o0))
        bands = st["ports"]["1"]["bands"]
        if bands[0]["enqueued"] < 0.9 * o0["packets"]:
            f.append("band 0 enqueued %d < 90%% of %d packets" % (bands[0]["enqueued"],
                                                                 o0["packets"]))
        if bands[1]["enqueued"] + bands[1]["full"] < 0.9 * o1["packets"]:
            f.append("band 1 saw fewer than 90%% of %d packets: %s" % (o1["packets"], bands))
        return f

    s, (o0, o1, st), fails, notes = attempts(measure, check)
    record("priority", "dpdk-shaper: TOS 0x10 delivered/offered", o0["delivered"],
           s.cmdline())
    record("priority", "dpdk-shaper: TOS 0x00 delivered/offered", o1["delivered"])
    record("priority", "iperf3 commands", o0["cmd"] + " ; " + o1["cmd"])
    for n in notes:
        record("priority", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
