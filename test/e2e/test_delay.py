"""netem delay: RTT of pings through dpdk-shaper with delay on both egress ports."""
import math
import statistics

from shplib import attempts, delay_20ms_errors, rtt_summary, stop_and_check


def test_delay_20ms(testbed, shaper, record):
    def measure():
        s = shaper("--netem", "delay 20ms")
        rtts = testbed.ping(count=30, interval=0.05)
        st = stop_and_check(s)
        return s, (rtts, st)

    def check(res):
        rtts, st = res
        f = delay_20ms_errors(rtts)
        for p in ("0", "1"):
            if st["ports"][p]["tx_packets"] < 30:
                f.append("port %s tx_packets %d < 30" % (p, st["ports"][p]["tx_packets"]))
        return f

    s, (rtts, st), fails, notes = attempts(measure, check)
    r = rtt_summary(rtts)
    record("delay", "delay 20ms: RTT median ms", r.get("median"), s.cmdline())
    record("delay", "delay 20ms: RTT min/max ms", "%.2f / %.2f" % (r["min"], r["max"]))
    for n in notes:
        record("delay", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)


SIGMA = 5.0 * math.sqrt(2)   # RTT = sum of two N(20, 5) delays: N(40, 7.07)


def spread(rtts):
    q1, _, q3 = statistics.quantiles(rtts, n=4)
    return (q3 - q1) / 1.349


def test_delay_jitter_normal(testbed, shaper, record):
    def measure():
        s = shaper("--netem", "delay 20ms 5ms distribution normal")
        rtts = testbed.ping(count=150, interval=0.02)
        st = stop_and_check(s)
        return s, (rtts, st)

    def check(res):
        # 99.9% bounds (z = 3.29): median +- 1.2533 sigma/sqrt(n) (+0.5 ms
        # for the path); sigma from the IQR (robust to outliers) +- 1.166
        # sigma/sqrt(n); the plain sd can only grow from outliers: lower
        # bound sigma - sigma/sqrt(2(n-1)).
        rtts, st = res
        r = rtt_summary(rtts)
        n = r["n"]
        f = []
        if n < 145:
            return ["lost pings: %s" % r]
        if abs(r["median"] - 40.0) > 3.29 * 1.2533 * SIGMA / math.sqrt(n) + 0.5:
            f.append("median %.2f ms not 40 +- %.2f" % (
                r["median"], 3.29 * 1.2533 * SIGMA / math.sqrt(n) + 0.5))
        tol = 3.29 * 1.166 * SIGMA / math.sqrt(n)
        if abs(spread(rtts) - SIGMA) > tol:
            f.append("RTT spread (IQR/1.349) %.2f ms, expected %.2f +- %.2f" % (
                spread(rtts), SIGMA, tol))
        if r["sd"] < SIGMA - 3.29 * SIGMA / math.sqrt(2 * (n - 1)):
            f.append("RTT sd %.2f ms too small for %.2f" % (r["sd"], SIGMA))
        # normal, not uniform: a pair of uniform(15, 25) delays never leaves
        # [30, 50] ms; a normal sum does for ~16% of the RTTs
        outside = sum(1 for x in rtts if abs(x - 40.0) > 10.0)
        if outside < 5:
            f.append("only %d of %d RTTs outside 40 +- 10 ms: not normal" % (outside, n))
        for p in ("0", "1"):
            if st["ports"][p]["tx_packets"] < n:
                f.append("port %s tx_packets %d < %d" % (p, st["ports"][p]["tx_packets"], n))
        return f

    s, (rtts, st), fails, notes = attempts(measure, check)
    r = rtt_summary(rtts)
    record("delay", "delay 20ms 5ms normal: RTT median ms", r.get("median"), s.cmdline())
    record("delay", "delay 20ms 5ms normal: RTT sd / IQR-sigma ms (expect 7.07)",
           "%.2f / %.2f" % (r["sd"], spread(rtts)))
    for n in notes:
        record("delay", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
