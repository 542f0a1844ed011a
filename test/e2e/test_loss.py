"""netem loss: iperf3 UDP loss through dpdk-shaper with loss 5%."""
import math

from shplib import stop_and_check

P = 0.05


def test_loss_5_percent(testbed, shaper, record):
    s = shaper("--netem", "loss 5%")
    r = testbed.iperf3(t=4, udp=True, rate="10M", length=1000)
    st = stop_and_check(s)
    n, lost = r["packets"], r["lost"]
    # 99.9% two-sided binomial bound (normal approximation, n*p >> 10)
    bound = 3.29 * math.sqrt(n * P * (1 - P))
    record("loss", "loss 5%: iperf3 UDP lost/packets", "%d/%d = %.2f%% (bound +-%.2f%%)" % (
        lost, n, 100.0 * lost / n, 100.0 * bound / n), s.cmdline())
    record("loss", "iperf3 command", r["cmd"])
    assert n >= 4000, "too few packets for the bound: %s" % r
    assert abs(lost - n * P) <= bound, "lost %d of %d, expected %.0f +- %.0f" % (
        lost, n, n * P, bound)
    # the shaper's own count of netem losses toward B covers the UDP losses
    lost_b = st["ports"]["1"]["drops"]["lost"]
    assert lost_b >= lost, (lost_b, lost, st)
    assert lost_b <= lost + 0.05 * n, (lost_b, lost, st)
