"""One link over two shards (issue 24): net_af_packet with qpairs=2 (the
kernel's fanout hashes each flow to one queue pair) and --queues 2, so
that each egress port is two shards sharing one tbf bucket. TCP goodput
of `iperf3 -P 12` through 'tbf rate 50mbit' is the kernel's tbf's and the
one-queue run's, within 5%, and both shards of the data's port carried
flows (else a bucket per shard would pass: a build with
-Dbench_private_link=true gives twice the rate, and fails here); a ping's
RTT through 'delay 20ms' each way is what one queue gives. The shards'
counters sum to their port's."""
import time

from shplib import (TBF, Testbed, attempts, delay_20ms_errors,
                    goodput_errors, rtt_summary, stop_and_check)

# 12 flows: the fanout's hash puts them all on one queue pair once in
# 2048 runs (2 / 2^12), where the shards' sharing is not tested
P = ("-P", "12")
# a shard that carried flows sends at least this share of its port's
# frames (twelve flows over two shards: 1 flow of 12 is 8%)
SHARD_SHARE = 0.02


def shard_errors(st, nb=2, carried=()):
    """Each port has nb shards whose counters sum to the port's; on the
    ports `carried`, every shard sent a share of the port's frames."""
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
        if p in carried and min(s["tx_packets"] for s in shards) < \
                SHARD_SHARE * port["tx_packets"]:
            f.append("port %s: a shard carried no flow (tx_packets %s of "
                     "%d): the shared bucket was not shared" % (
                         p, [s["tx_packets"] for s in shards],
                         port["tx_packets"]))
    return f


def test_two_shards_share_the_tbf_rate(testbed, kernel, shaper, record):
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF)
    k = testbed.iperf3(t=5, omit=1, extra=P)
    kernel.kernel_reset()
    record("shards", "kernel tbf, iperf3 -P 12: goodput Mbit/s", k["bps"] / 1e6,
           "tc qdisc replace dev ROOT_{A,B} root handle 1: tbf " + TBF)
    assert k["bps"] > 40e6, "kernel reference implausible: %s" % k

    def run(queues):
        def measure():
            s = shaper("--queues", str(queues), "--tbf", TBF, qpairs=queues)
            o = testbed.iperf3(t=5, omit=1, extra=P)
            return s, (o, stop_and_check(s), s.lost)
        return measure

    def near(ref, what, ref_lost=None):
        def check(res):
            o, st, lost = res
            return ["%s; intervals %s" % (e, o["intervals"])
                    for e in goodput_errors(o["bps"], ref, what, lost,
                                            ref_lost=ref_lost)]
        return check

    s1, (o1, st1, lost1), fails, notes = attempts(run(1), near(k["bps"], "kernel"))
    assert not fails, "one queue: %s\n%s" % (fails, notes)
    record("shards", "--queues 1: goodput Mbit/s", o1["bps"] / 1e6, s1.cmdline())

    def check2(res):
        return near(k["bps"], "kernel")(res) + \
            near(o1["bps"], "one queue", lost1)(res) + \
            shard_errors(res[1], carried=("1",))

    s2, (o2, st2, _), fails, notes = attempts(run(2), check2)
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


# issue 56: the queue a link's shards keep is the link's one queue
TBF20 = "rate 50mbit burst 32kb latency 20ms"


def rtt_under_tcp_load(tb):
    """ping's RTTs while `iperf3 -P 4` (TCP) fills the tbf queue."""
    h = tb.iperf3_start(t=6, extra=("-P", "4"))
    time.sleep(2.0)   # the flows past slow start, the queue standing
    rtts = Testbed.ping_finish(tb.ping_start(count=30, interval=0.1))
    load = Testbed.iperf3_finish(h)
    return rtt_summary(rtts), load


def test_two_shards_rtt_under_load(testbed, kernel, shaper, record):
    """`iperf3 -P 4` through tbf 'rate 50mbit burst 32kb latency 20ms':
    a ping's median RTT on two shards (qpairs=2, the flows over both) is
    within 10% of the one-queue run's: the link's backlog is bounded by
    the link's latency, not each shard's (a limit per shard let it
    double). Against the kernel's tbf, within 20%: one queue itself sits
    2-3 ms above it (22.9-23.3 ms against 20.3-21.2 in four runs), which
    is not the shards' doing (not found yet: docs/usage.md, Shards)."""
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF20)
    kr, kl = rtt_under_tcp_load(testbed)
    kernel.kernel_reset()
    record("shards", "kernel tbf latency 20ms, iperf3 -P 4: ping RTT "
           "median ms", kr.get("median"),
           "tc qdisc replace dev ROOT_{A,B} root handle 1: tbf " + TBF20)
    assert kr["n"] >= 25 and kr["median"] > 10, \
        "kernel reference implausible: %s" % kr

    def run(queues):
        def measure():
            # four flows all hash to one queue pair in 1 run of 8: run
            # again then (new ports, a new hash), up to 4 times, so that
            # the two shards share the link (1 in 4096 never does)
            for _ in range(4):
                s = shaper("--queues", str(queues), "--tbf", TBF20,
                           qpairs=queues)
                r, load = rtt_under_tcp_load(testbed)
                st = stop_and_check(s)
                if queues == 1 or not shard_errors(st, carried=("1",)):
                    break
            return s, (r, load, st)
        return measure

    def near(ref, what, tol):
        def check(res):
            r, load, st = res
            if r["n"] < 25:
                return ["pings lost under load: %s" % r]
            if abs(r["median"] - ref) > tol * ref:
                return ["RTT median %.2f ms not within %d%% of %s's %.2f" %
                        (r["median"], tol * 100, what, ref)]
            return []
        return check

    s1, (r1, l1, st1), fails, notes = attempts(
        run(1), near(kr["median"], "kernel", 0.20))
    assert not fails, "one queue: %s\n%s" % (fails, notes)
    record("shards", "--queues 1, tbf latency 20ms: ping RTT median ms",
           r1["median"], s1.cmdline())

    def check2(res):
        return near(kr["median"], "kernel", 0.20)(res) + \
            near(r1["median"], "one queue", 0.10)(res) + \
            shard_errors(res[2], carried=("1",))

    s2, (r2, l2, st2), fails, notes = attempts(run(2), check2)
    record("shards", "--queues 2 qpairs=2, tbf latency 20ms: ping RTT "
           "median ms", r2["median"], s2.cmdline())
    for n in notes:
        record("shards", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
