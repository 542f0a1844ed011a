"""dualpi2 at the bottleneck (issue 59): a classic TCP flow (cubic with
ECN, ECT(0): the C queue) and a scalable one (dctcp, its ECT(0) rewritten
to ECT(1) on the sender's way out: the L queue) through a 50 Mbit/s tbf.

What dualpi2 must show: the scalable flow's round trip under load stays
within 5 ms of the path's base RTT (its queue is held at the 1 ms step),
while the classic flow keeps at least 30% of the link (the coupling
p_L = 2 * p' against p_C = p'^2 gives window fairness for equal RTTs),
and the L queue marks rather than drops.

Skipped, with the reason, where the kernel has no dctcp (Linux's L4S
sender, TCP Prague, is not upstream; dctcp is the scalable control it
has). The same run with cubic as the ECT(1) sender runs everywhere: a
classic control in the L queue reacts to the step marks as to losses,
so its queue stays at the step, and the coupling leaves the C flow its
share: the split, the marks and the L queue's delay through real TCP.
"""
import json
import os
import shutil
import subprocess
import time

import pytest

from shplib import TBF, run, stop_and_check
from skips import kernel_lacks

T = 10            # s of TCP load
OMIT = 2          # s of it iperf3 leaves out (slow start)
CCS = "/proc/sys/net/ipv4/tcp_available_congestion_control"


def dctcp_missing():
    """None when dctcp is available (loading its module if need be),
    else why not."""
    def have():
        try:
            with open(CCS) as f:
                return "dctcp" in f.read().split()
        except OSError:
            return False
    if have():
        return None
    if shutil.which("modprobe"):
        subprocess.run(["modprobe", "tcp_dctcp"], capture_output=True,
                       timeout=30)
        if have():
            return None
    return "the kernel has no dctcp (%s lacks it; modprobe tcp_dctcp " \
        "%s)" % (CCS, "failed" if shutil.which("modprobe") else
                 "not installed")


def interval_rtts_ms(d):
    """The sender's smoothed RTT at each interval of an iperf3 JSON run
    (TCP_INFO, us), after the omitted ones."""
    return sorted(iv["streams"][0]["rtt"] / 1000.0
                  for iv in d["intervals"]
                  if not iv["streams"][0].get("omitted") and
                  iv["streams"][0].get("rtt"))


def finish(h):
    try:
        out, err = h["cli"].communicate(timeout=T + OMIT + 20)
    finally:
        for p in (h["cli"], h["srv"]):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
    d = json.loads(out)
    if "error" in d:
        raise RuntimeError("iperf3: %s (%s)" % (d["error"], h["cmd"]))
    return d


@pytest.mark.parametrize("scalable", ["dctcp", "cubic"])
def test_dualpi2_dctcp_and_cubic(request, record, scalable):
    why = dctcp_missing() if scalable == "dctcp" else None
    if why:
        kernel_lacks(why.replace("the kernel has no ", ""))
    tb = request.getfixturevalue("testbed")
    shaper = request.getfixturevalue("shaper")
    # the classic flow negotiates ECN (ECT(0)); the scalable one's
    # ECT(0) becomes ECT(1) as it leaves its namespace
    run(tb.exec_args("a", ["sysctl", "-qw", "net.ipv4.tcp_ecn=1"]), 10)
    l_port = tb.next_port()
    rules = ("table ip l4s {\n chain out {\n  type filter hook output "
             "priority 0;\n  tcp dport %d ip ecn ect0 ip ecn set ect1\n }\n"
             "}\n" % l_port)
    path = os.path.join(str(request.getfixturevalue("tmp_path")), "l4s.nft")
    with open(path, "w") as f:
        f.write(rules)
    run(tb.exec_args("a", ["nft", "-f", path]), 10)

    s = shaper("--tbf", TBF, "--queue", "dualpi2", tag="dualpi2")
    base = sorted(tb.ping(count=20, interval=0.05))
    assert base, "no ping reply before the load"
    base_ms = base[len(base) // 2]
    c = tb.iperf3_start(t=T, omit=OMIT, extra=["-C", "cubic", "-i", "0.2"])
    l = tb.iperf3_start(t=T, omit=OMIT, port=l_port,
                        extra=["-C", scalable, "-i", "0.2"])
    time.sleep(0.1)
    dc, dl = finish(c), finish(l)
    st = stop_and_check(s)
    rtts = interval_rtts_ms(dl)
    p99 = rtts[min(len(rtts) - 1, len(rtts) * 99 // 100)]
    c_bps = dc["end"]["sum_received"]["bits_per_second"]
    l_bps = dl["end"]["sum_received"]["bits_per_second"]
    x = st["ports"]["1"].get("xstats", {}).get("dualpi2", {})
    line = ("base RTT %.2f ms, %s (ECT(1)) srtt p99 %.2f ms, cubic %.1f "
            "%s %.1f Mbit/s, marks L %d step %d C %d, drops %s"
            % (base_ms, scalable, p99, c_bps / 1e6, scalable, l_bps / 1e6,
               x.get("l4s_marked", 0), x.get("step_marked", 0),
               x.get("classic_marked", 0),
               {k: v for k, v in st["ports"]["1"]["drops"].items() if v}))
    print("\n" + line)
    record("dualpi2", "cubic+ECN and %s(ECT(1)) at 50 Mbit/s" % scalable,
           line,
           s.cmdline())
    assert p99 <= base_ms + 5.0, line
    assert c_bps >= 0.3 * 50e6, line
    assert x.get("l4s_marked", 0) + x.get("step_marked", 0) > 0, line
