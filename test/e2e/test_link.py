"""link down/up in the testbed: a schedule takes port 1's link down for
one second; exactly the pings sent in that window are lost, and each is
counted as link_down."""
import re
import subprocess

from shplib import stop_and_check

INTERVAL = 0.05      # s between pings
DOWN, UP = 6.0, 7.0  # s from the shaper's start: after it is reachable


def test_link_down_window(testbed, shaper, tmp_path, record):
    sch = tmp_path / "link.sched"
    sch.write_text("%gs link down 1\n%gs link up 1\n" % (DOWN, UP))
    s = shaper("--schedule", str(sch))
    dst = testbed.addr("b")
    count = int(9.0 / INTERVAL)
    p = subprocess.run(testbed.exec_args(
        "a", ["ping", "-D", "-n", "-c", count, "-i", INTERVAL, "-W", 2,
              dst]),
        capture_output=True, text=True, timeout=count * INTERVAL + 30)
    st = stop_and_check(s)
    # [epoch] ... icmp_seq=N ttl=... time=RTT ms: when each was sent
    sent = {int(q): float(t) - float(r) / 1000 for t, q, r in re.findall(
        r"^\[([\d.]+)\].*icmp_seq=(\d+) ttl=\d+ time=([\d.]+) ms",
        p.stdout, re.M)}
    got = set(sent)
    lost = sorted(set(range(1, count + 1)) - got)
    down = st["ports"]["1"]["drops"]["link_down"]
    record("link", "link down 1 for 1 s: pings lost / link_down drops",
           "%d / %d (of %d, every %g s)" % (len(lost), down, count, INTERVAL),
           s.cmdline())
    assert lost, "no ping lost: the window fell outside the ping run\n" + \
        p.stdout[-2000:]
    # one window, in one piece
    assert lost == list(range(lost[0], lost[-1] + 1)), lost
    assert lost[0] > 1 and lost[-1] < count, lost
    # the pings on either side were sent before DOWN and after UP: about
    # a second apart (ping's own interval stretches on a busy machine,
    # so the count of lost pings is not 1 s / INTERVAL)
    gap = sent[lost[-1] + 1] - sent[lost[0] - 1]
    record("link", "pings around the window sent apart (s)", gap)
    assert UP - DOWN - 0.02 <= gap <= UP - DOWN + 2 * INTERVAL + 0.2, gap
    # each lost request was dropped as link_down on its way to b (the
    # kernel may send an ARP or ND packet of its own in the window too)
    assert len(lost) <= down <= len(lost) + 3, (len(lost), down, st)
    # nothing went the other way meanwhile: no reply was dropped
    assert st["ports"]["0"]["drops"]["link_down"] == 0
