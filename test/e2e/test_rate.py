"""tbf rate: TCP goodput through dpdk-shaper against the kernel's tbf with the
same settings on the same veths, in the same test."""
from shplib import TBF, attempts, goodput_errors, stop_and_check


def test_tbf_rate_vs_kernel(testbed, kernel, shaper, record):
    kernel.kernel_bridge(True)
    kernel.qdisc("tbf " + TBF)
    k = testbed.iperf3(t=5, omit=1)
    kq = testbed.qdisc_stats(testbed.root_b)
    kernel.kernel_reset()
    record("rate", "kernel tbf TCP goodput Mbit/s", k["bps"] / 1e6,
           "tc qdisc replace dev ROOT_{A,B} root handle 1: tbf " + TBF)
    assert k["bps"] > 40e6, "kernel reference implausible: %s\n%s" % (k, kq)

    def measure():
        s = shaper("--tbf", TBF)
        o = testbed.iperf3(t=5, omit=1)
        st = stop_and_check(s)
        return s, (o, st, s.lost)

    def check(res):
        o, st, lost = res
        f = ["%s; intervals %s vs %s" % (e, o["intervals"], k["intervals"])
             for e in goodput_errors(o["bps"], k["bps"], "kernel", lost)]
        if st["ports"]["1"]["drops"].get("tbf_oversize", 0):
            f.append("tbf_oversize drops: %s" % st["ports"]["1"]["drops"])
        return f

    s, (o, st, _), fails, notes = attempts(measure, check)
    record("rate", "dpdk-shaper tbf TCP goodput Mbit/s", o["bps"] / 1e6, s.cmdline())
    record("rate", "iperf3 command", o["cmd"])
    for n in notes:
        record("rate", "note", n)
    assert not fails, "%s\n%s" % (fails, notes)
