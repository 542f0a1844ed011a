"""One link over two shards (issue 24): net_af_packet with qpairs=2 (the
kernel's fanout hashes each flow to one queue pair) and --queues 2, so
that each egress port is two shards sharing one tbf bucket. TCP goodput
of `iperf3 -P 4` through 'tbf rate 50mbit' is the kernel's tbf's and the
one-queue run's, within 5% (two buckets of their own would give up to
twice the rate); a ping's RTT through 'delay 20ms' each way is what one
queue gives. The shards' counters sum to their port's."""
from shplib import (TBF, attempts, delay_20ms_errors, goodput_errors,
                    rtt_summary, stop_and_check)

P4 = ("-P", "4")


def shard_errors(st, nb=2):
    """Each port has nb shards whose counters sum to the port's."""
    f = []
    for p in ("0", "1"):
        port = st["ports"][p]
        shards = port.get("shards", [])
        if len(shards) != nb:
            f.append("port %s: %d shards, not %d" % (p, len(shards), nb))
            continue
        for k in ("tx_packets", "tx_bytes"):
            if sum(s[k] for s in shards) != port[k]:
                f.append("port %s: shards' %s %s do not sum to %d" % (
                    p, k, [s[k] for s in shards], port[k]))
    return f


def test_two_shards_share_the_tbf_rate(testbed, kernel, shaper, record):
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF)
    k = testbed.iperf3(t=5, omit=1, extra=P4)
    kernel.kernel_reset()
    record("shards", "kernel tbf, iperf3 -P 4: goodput Mbit/s", k["bps"] / 1e6,
           "tc qdisc replace dev ROOT_{A,B} root handle 1: tbf " + TBF)
    assert k["bps"] > 40e6, "kernel reference implausible: %s" % k

    def run(queues):
        def measure():
            s = shaper("--queues", str(queues), "--tbf", TBF, qpairs=queues)
            o = testbed.iperf3(t=5, omit=1, extra=P4)
            return s, (o, stop_and_check(s))
        return measure

    def near(ref, what, ref_st=None):
        def check(res):
            o, st = res
            return ["%s; intervals %s" % (e, o["intervals"])
                    for e in goodput_errors(o["bps"], ref, what, st,
                                            ref_st=ref_st)]
        return check

    s1, (o1, st1), fails, notes = attempts(run(1), near(k["bps"], "kernel"))
    assert not fails, "one queue: %s\n%s" % (fails, notes)
    record("shards", "--queues 1: goodput Mbit/s", o1["bps"] / 1e6, s1.cmdline())

    def check2(res):
        return near(k["bps"], "kernel")(res) + near(o1["bps"], "one queue", st1)(res) + \
            shard_errors(res[1])

    s2, (o2, st2), fails, notes = attempts(run(2), check2)
    record("shards", "--queues 2 qpairs=2: goodput Mbit/s", o2["bps"] / 1e6,
           s2.cmdline())
    record("shards", "--queues 2: packets per shard, port 1",
           [s["tx_packets"] for s in st2["ports"]["1"].get("shards", [])])
    for n in notes:
        record("shards", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)


def test_two_shards_delay_20ms(testbed, shaper, record):
    def measure():
        s = shaper("--queues", "2", "--netem", "delay 20ms", qpairs=2)
        rtts = testbed.ping(count=30, interval=0.05)
        return s, (rtts, stop_and_check(s))

    def check(res):
        rtts, st = res
        return shard_errors(st) + delay_20ms_errors(rtts)

    s, (rtts, st), fails, notes = attempts(measure, check)
    r = rtt_summary(rtts)
    record("shards", "--queues 2, delay 20ms: RTT median ms", r.get("median"),
           s.cmdline())
    for n in notes:
        record("shards", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
