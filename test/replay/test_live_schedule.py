"""--schedule and `link down|up` in the live program (net_pcap, --pace):
the data path applies each change when its clock passes the time."""
import re
import statistics

import pcaplib
from conftest import assert_conserved, pcap_port, run_shaper

MS = 10**6
T0 = 1_700_000_000 * 10**9


def paced_capture(path, n, gap_ns):
    frames = [pcaplib.eth_ipv4(0, 200, i) for i in range(n)]
    pcaplib.write(str(path), frames, [T0 + i * gap_ns for i in range(n)],
                  nano=True)


def test_delay_change_and_link_window(tmp_path, mode):
    """delay 5 ms, 100 ms from 1 s; link down from 1.5 s to 1.8 s. Packets
    paced every 10 ms for 3 s: the later ones are delayed ~95 ms more
    than the early ones, and about 30 are dropped as link_down, counted
    as offered to the port."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    paced_capture(rx, 300, 10 * MS)
    sch = tmp_path / "s.txt"
    sch.write_text("0 set netem 0 delay 5ms\n"
                   "1s set netem 0 delay 100ms\n"
                   "1500ms link down 0\n"
                   "1800ms link up 0\n")
    # (--max-late 0: a busy machine must not drop anything as overload
    # here, the windows are what is counted)
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--pace", "--max-late", "0",
                      "--schedule", str(sch)], mode)
    assert run.rc == 0, run.err
    p = run.port(0)
    down = p["drops"]["link_down"]
    # 300 ms of 10 ms gaps; the capture starts when the workers do
    assert 25 <= down <= 35, down
    assert p["tx_packets"] == 300 - down
    assert p["sojourn_ns"]["min"] >= 5 * MS
    assert p["sojourn_ns"]["max"] >= 100 * MS
    assert_conserved(run)
    _, out = pcaplib.read(str(tx))
    # departure minus the packet's offset in the capture: its delay,
    # up to a constant
    d = {pcaplib.seq_of(f): t - T0 - pcaplib.seq_of(f) * 10 * MS
         for t, f in out}
    early = [d[s] for s in range(0, 80)]
    late = [d[s] for s in range(120, 300) if s in d]
    step = statistics.median(late) - statistics.median(early)
    assert 80 * MS <= step <= 110 * MS, step / MS
    # the window is one piece: no packet sent inside it
    lost = sorted(set(range(300)) - set(d))
    assert lost == list(range(lost[0], lost[0] + down)), lost


def test_link_command(tmp_path):
    """`link down 0` before forwarding: every packet is dropped as
    link_down; `show schedule` says the link is down."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    paced_capture(rx, 50, 1 * MS)
    cmds = tmp_path / "cmds"
    cmds.write_text("link down 0\nshow schedule\n")
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--cmdline-file", str(cmds)])
    assert run.rc == 0, run.err
    assert "port 0: link down" in run.out, run.out
    p = run.port(0)
    assert p["drops"]["link_down"] == 50 and p["tx_packets"] == 0
    assert_conserved(run)
    cmds.write_text("link down 3\n")
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--cmdline-file", str(cmds)])
    assert run.rc == 1 and "no port '3'" in run.out, run.out


def test_bad_schedule_refused(tmp_path):
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    paced_capture(rx, 5, MS)
    sch = tmp_path / "s.txt"
    for text, what in [("1s link down 4\n", "s.txt:1: no port '4'"),
                       ("2s clear netem 0\n1s clear netem 0\n",
                        "s.txt:2: time 1s goes backwards"),
                       ("1s set queue 0 fq_codel\n",
                        "s.txt:1: port 0 runs pfifo_fast")]:
        sch.write_text(text)
        run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                         ["--replay", "--schedule", str(sch)], stats=False)
        assert run.rc == 2, (text, run.err)
        assert what in run.err, run.err
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--schedule", str(tmp_path / "none")],
                     stats=False)
    assert run.rc == 2 and "--schedule %s: No such file" % (
        tmp_path / "none") in run.err, run.err


def test_repeat(tmp_path):
    """repeat 200ms for 3 s: every cycle's changes are made (the main
    lcore arms the next cycles' confs ahead), none is missed; the link is
    down a quarter of the time, the delay is 30 ms a third of the rest."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    paced_capture(rx, 300, 10 * MS)
    sch = tmp_path / "s.txt"
    sch.write_text("0 set netem 0 delay 1ms\n"
                   "0 link up 0\n"
                   "100ms set netem 0 delay 30ms\n"
                   "150ms link down 0\n"
                   "repeat 200ms\n")
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--pace", "--max-late", "0",
                      "--schedule", str(sch)], watch=True)
    assert run.rc == 0, run.err
    m = re.search(r"^schedule .*: (\d+) changes applied, (\d+) missed$",
                  run.out, re.M)
    assert m, run.out
    applied, missed = int(m.group(1)), int(m.group(2))
    assert missed == 0
    # 2 changes a cycle, 3 s of 200 ms cycles (and the drain after)
    assert applied >= 30, applied
    p = run.port(0)
    down = p["drops"]["link_down"]
    assert 60 <= down <= 90, down
    assert_conserved(run)
    _, out = pcaplib.read(str(tx))
    d = [t - T0 - pcaplib.seq_of(f) * 10 * MS for t, f in out]
    base = min(d)
    slow = sum(1 for x in d if x - base > 15 * MS)
    assert 0.2 * len(d) <= slow <= slow_allowed(len(d), run.lost), \
        (slow, len(d), host_explains(run.lost), SLOW_CAP, run.lost)


# With --max-late 0 nothing is shed: a packet the host kept the worker
# from stamping or sending for 14 ms looks slow too. Packets come 10 ms
# apart, so a stall of L >= 14 ms makes at most L / 10 ms + 1 of them so
# late, and there are at most W / 14 ms such stalls in W of lost time:
# that many more may count as slow. W is the kernel's figure of what the
# host took from each polling thread (cpu_lost.py), never the program's;
# it excuses at most SLOW_CAP packets (5% of the 300): a run the host took
# more from fails.
SLOW_CAP = 15


def host_explains(lost):
    w = sum(v["lost_s"] for v in lost.busy().values())
    return int(w / 0.010 + w / 0.014)


def slow_allowed(n, lost):
    """How many of n packets may be slow: the schedule's 45%, and what
    the host explains up to the cap."""
    return 0.45 * n + min(host_explains(lost), SLOW_CAP)


def test_slow_excuse_is_capped():
    """However much the kernel says the host took, it excuses at most
    SLOW_CAP slow packets; 70 ms of it, 12."""
    import cpu_lost

    def lost(w):
        return cpu_lost.Lost(3.0, {"w": {"run_s": 3.0 - w, "wait_s": w,
                                         "steal_s": 0.0, "preempted": 9,
                                         "lost_s": w}})
    assert host_explains(lost(2.0)) == 342
    assert slow_allowed(300, lost(2.0)) == 135 + SLOW_CAP
    assert slow_allowed(300, lost(0.07)) == 135 + 12
    assert slow_allowed(300, lost(0.0)) == 135



def test_change_meets_every_packet_after_it(tmp_path, mode):
    """A change at T meets every packet stamped at or after T, in either
    mode: in a pipeline the RX lcore does not hand on a burst stamped
    after a change its port's TX lcore has not made yet. The link's
    window, decided by each packet's own stamp (exact), lets through
    only the packets stamped from T (link up, with the change to 20 ms)
    to the link down 20 ms later, so every packet sent must have waited
    20 ms: one that met the old 1 ms delay was handed on before the
    change. (The delay goes back to 1 ms 10 ms after netem let the last
    of them go: a packet netem holds is not what this is about.)"""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n, gap = 100000, 20_000                       # 50 kpps for 2 s
    pcaplib.write(str(rx), [pcaplib.eth_ipv4(0, 64, i) for i in range(n)],
                  [T0 + i * gap for i in range(n)], nano=True)
    sch = tmp_path / "s.txt"
    sch.write_text("0 link down 0\n"
                   "0 set netem 0 delay 1ms\n"
                   "50ms link up 0\n"
                   "50ms set netem 0 delay 20ms\n"
                   "70ms link down 0\n"
                   "repeat 100ms\n")
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--pace", "--max-late", "0",
                      "--schedule", str(sch)], mode)
    assert run.rc == 0, run.err
    p = run.port(0)
    assert_conserved(run)
    # a fifth of the packets passed, in 20 windows
    assert 0.15 * n <= p["tx_packets"] <= 0.25 * n, p
    assert p["sojourn_ns"]["min"] >= 20 * MS, p["sojourn_ns"]
