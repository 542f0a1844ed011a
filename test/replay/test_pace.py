"""dpdk-shaper --pace: a live replay at the capture's own timing gives the
counts the offline tool gives (issue 10 item 2)."""
import math
import os
import signal
import subprocess
import time

import pcaplib
import retries
from conftest import (BIN, REPLAY_BIN, Run, assert_conserved, eal_args,
                      forget_prefix, pcap_port, run_shaper, run_watched)

MS = 10**6
T0 = 1_700_000_000 * 10**9

# 8 Mbit/s into a 10 Mbit/s bucket (the case): at the capture's
# pace nothing overflows; read at line rate, all but a bucket and a limit's
# worth would. Then netem loses 2% of what passes: its draws follow the
# packets' order, so the same packets reaching it give the same count.
PROFILE = ["--tbf", "rate 10mbit burst 300kb limit 1mb", "--netem",
           "delay 5ms loss 2%", "--seed", "7"]
N, SIZE = 4000, 1000       # 1000-byte frames every ms: 8 Mbit/s, 4 s
SPAN_S = N / 1000

# How far a live count may be from the offline tool's, per cause: 1% of
# the packets in, plus 5. The live stages run on the real clock: a worker
# that loses its CPU receives the packets of that gap at once, and the
# bucket cannot send what it could have during the gap beyond its burst.
# Here burst and limit absorb a stall of up to 1.3 s at 8 Mbit/s; a
# saturated bucket would not absorb any (docs/usage.md).
def tolerance(n):
    return n // 100 + 5


# The emulator's own drops follow their own rule, the program's
# (lib/core/shp_egress.h, --max-late in docs/usage.md): with --pace max-late
# stays 50 us, so a worker that loses its CPU for S sheds as `late` what
# fell due meanwhile, and drops as `overload` what arrived meanwhile if it
# finds its chain still behind once it runs again: at one packet a ms,
# each at most S / 1 ms packets and one more at the stall's edge. Any
# polling thread's stall counts (the RX lcore of a pipeline stamps what it
# reads late with its due time); a burst more covers the round that
# caught up. How long and how often the host took the CPU is the
# kernel's figure (cpu_lost.py: run-queue wait and preemptions, steal),
# never the program's own; a stall the test makes (SIGSTOP) is the
# test's measure. What the host took may excuse at most HOST_CAP
# packets: a run it took more from fails.
BURST = 32
OWN = ("late", "overload")
HOST_CAP = N // 20          # 5% of the run's packets (200 ms of it)


def host_explains(lost):
    """late + overload the host's taking of the CPU explains: each
    episode (a preemption, or a ms of steal) S long sheds at most
    S / 1 ms + 1 of each."""
    n = 0
    for v in lost.busy().values():
        n += math.ceil(v["lost_s"] * 1000) + v["preempted"] + \
            math.ceil(v["steal_s"] * 1000)
    return 2 * n


def assert_matches(live, off, run, stopped_s=0.0):
    """Every count the offline tool's within the tolerance, but what the
    stalls explain: the emulator's own drops, which the offline tool
    never has, and the packets they took from what was sent. stopped_s:
    how long the test itself stopped the program."""
    tol = tolerance(N)
    assert all(off["drops"][c] == 0 for c in OWN), off
    for cause, n in off["drops"].items():
        if cause not in OWN:
            assert abs(live["drops"][cause] - n) <= tol, \
                "%s: live %d, offline %d" % (cause, live["drops"][cause], n)
    own = sum(live["drops"][c] for c in OWN)
    made = 2 * (math.ceil(stopped_s * 1000) + 1) if stopped_s else 0
    host = host_explains(run.lost)
    assert own <= made + min(host, HOST_CAP) + BURST, \
        "late+overload %d: more than the test's stall (%d), a burst and " \
        "what the host took explain (%d, of which at most %d excused): " \
        "%r; the program's own account: %s" % (
            own, made, host, HOST_CAP, run.lost, run.stats.get("lcores"))
    assert abs(live["tx_packets"] + own - off["tx_packets"]) <= tol
    return own


# Longer than that, the machine did not give the run the time it needs
# (seen here: a 1.5 s stall on 2 CPUs shared by many jobs): the bucket's
# burst no longer absorbs it and the profile's own counts move; the run is
# repeated once, saying why. The stall is read from the output capture
# (net_pcap stamps each packet as it writes it). The same when the host
# took more than HOST_CAP excuses and the run shed more: the retry must
# pass within the cap, and a pass on it is counted (test/retries.py).
STALL_S = 1.0


def capture(path):
    frames = [pcaplib.eth_ipv4(0, SIZE, i) for i in range(N)]
    # microseconds: what net_pcap reads, so both see the same times
    pcaplib.write(str(path), frames, [T0 + i * MS for i in range(N)])


def offline_counts(tmp_path, inp):
    out = tmp_path / "offline.pcap"
    js = tmp_path / "offline.json"
    proc = subprocess.run([REPLAY_BIN, str(inp), str(out)] + PROFILE +
                          ["--stats-file", str(js)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json
    return json.loads(js.read_text())["ports"]["0"]


def paced_run(tmp_path, inp, tx, mode):
    t0 = time.monotonic()
    run = run_shaper(tmp_path, [pcap_port(inp, tx)],
                     ["--replay", "--pace"] + PROFILE, mode, watch=True)
    wall = time.monotonic() - t0
    assert run.rc == 0, run.err
    _, got = pcaplib.read(str(tx))
    stall = max(b - a for (a, _), (b, _) in zip(got, got[1:])) / 1e9
    return run, wall, got, stall


def signalled_run(cmd, prefix, tx, size, during, stats):
    """Run cmd until its output capture tx holds size bytes, then
    during(proc), then wait for its exit: the Run (watched)."""
    def when_written(proc):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if tx.exists() and os.path.getsize(tx) >= size:
                break
            time.sleep(0.02)
        during(proc)
    try:
        proc, lost = run_watched(cmd, 60, when_written)
    finally:
        forget_prefix(prefix)
    return Run(proc, str(stats), lost)


def test_pace_matches_offline(tmp_path, mode):
    inp, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp)
    off = offline_counts(tmp_path, inp)
    assert off["drops"]["lost"] > 40
    assert sum(off["drops"].values()) == off["drops"]["lost"]

    run, wall, got, stall = paced_run(tmp_path, inp, tx, mode)
    tries = ["try 1: longest gap %.3f s, %s, %r" % (
        stall, run.port(0)["drops"], run.lost)]
    print(tries[-1])
    own = sum(run.port(0)["drops"][c] for c in OWN)
    if stall > STALL_S or (own > HOST_CAP + BURST and
                           host_explains(run.lost) > HOST_CAP):
        print("the run stalled %.2f s (%.1f s it may), shed %d as late or "
              "overload, the host took more than the %d it may excuse: "
              "once more" % (stall, STALL_S, own, HOST_CAP))
        run, wall, got, stall = paced_run(tmp_path, inp, tx, mode)
        tries.append("try 2: longest gap %.3f s, %s, %r" % (
            stall, run.port(0)["drops"], run.lost))
        print(tries[-1])
    assert "as fast as" not in run.out
    live = run.port(0)
    assert_conserved(run)
    assert live["rx_packets"] == N
    assert_matches(live, off, run)
    # it took the capture's time, and netem's 5 ms is in every delay
    assert wall >= SPAN_S - 0.1, wall
    assert live["sojourn_ns"]["min"] >= 5 * MS
    # the output spans the capture's time, not a line-rate burst
    assert len(got) == live["tx_packets"]
    assert got[-1][0] - got[0][0] >= (SPAN_S - 0.1) * 1e9
    if len(tries) > 1:
        retries.passed_after_retry(len(tries), tries)


def test_unpaced_replay_says_so(tmp_path):
    """Without --pace the same replay reads the capture at line rate, and
    says so in one line: the queue in front of the bucket overflows, where
    the offline tool drops nothing there."""
    inp, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp)
    run = run_shaper(tmp_path, [pcap_port(inp, tx)], ["--replay"] + PROFILE)
    assert run.rc == 0, run.err
    lines = [x for x in run.out.splitlines() if "as fast as" in x]
    assert len(lines) == 1 and "--pace" in lines[0], run.out
    off = offline_counts(tmp_path, inp)
    assert off["drops"]["tbf_limit"] == off["drops"]["band_full"] == 0
    # the whole capture at once: the band rings (1024 packets) and the
    # bucket's limit overflow
    d = run.port(0)["drops"]
    assert d["band_full"] + d["tbf_limit"] > N // 4, d


def test_pace_refuses_ports_without_capture_times(tmp_path):
    run = run_shaper(tmp_path, ["net_null0"], ["--pace"], stats=False)
    assert run.rc == 2, (run.out, run.err)
    err = [x for x in run.err.splitlines() if x.strip()]
    assert len(err) == 1 and "--pace" in err[0] and "net_null" in err[0]


def test_pace_shutdown_flushes_held(tmp_path):
    """SIGINT while a burst waits for its time: what the pacer held is
    received, then flushed and counted; the pool is whole (exit 0, not 3)."""
    inp, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    stats = tmp_path / "stats.json"
    frames = [pcaplib.eth_ipv4(0, 200, i) for i in range(100)]
    # one packet now, the other 99 a minute later
    ts = [T0] + [T0 + 60 * 10**9 + i * MS for i in range(1, 100)]
    pcaplib.write(str(inp), frames, ts)
    prefix = "rp%d_pace%d" % (os.getpid(), time.monotonic_ns() % 10**6)
    cmd = [BIN] + eal_args("rtc", prefix) + [
        "--vdev", pcap_port(inp, tx), "--", "--replay", "--pace",
        "--burst", "32", "--stats-file", str(stats)]
    def interrupt(proc):
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    # the first packet written (net_pcap flushes every burst) means
    # forwarding runs and the signal handlers are in place
    run = signalled_run(cmd, prefix, tx, 24 + 16 + 200, interrupt, stats)
    out, err = run.out, run.err
    assert run.rc == 0, (out, err)
    p = run.port(0)
    # one burst of 32 read: the first sent, 31 held until the end
    assert p["tx_packets"] == 1, p
    assert p["rx_packets"] == 32, p
    assert p["drops"]["flushed"] == 31, p
    assert_conserved(run)
    assert len(pcaplib.read(str(tx))[1]) == 1


def test_pace_stall_sheds_what_it_explains(tmp_path, mode):
    """A stall the host imposes (SIGSTOP, 300 ms, mid-capture): the paced
    run sheds as `late` what fell due meanwhile, no more than that stall
    and what the kernel says the host took explain, and every other count still matches the
    offline tool's. The old rule (`late` within 45 of offline's 0) fails
    on such a run; this one fails if the program sheds more than its rule
    says, or neither shed nor recorded the stall as lateness."""
    inp, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    stats = tmp_path / "stats.json"
    capture(inp)
    off = offline_counts(tmp_path, inp)
    prefix = "rp%d_pst%d" % (os.getpid(), time.monotonic_ns() % 10**6)
    cmd = [BIN] + eal_args(mode, prefix) + [
        "--vdev", pcap_port(inp, tx), "--", "--replay", "--pace"] + \
        PROFILE + ["--stats-file", str(stats)]
    stopped = []

    def stall(proc):
        t = time.monotonic()
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.3)
        proc.send_signal(signal.SIGCONT)
        stopped.append(time.monotonic() - t)
    # half a second into the capture's 4 s (the output is being written)
    run = signalled_run(cmd, prefix, tx, 24 + 500 * (16 + SIZE) + 1, stall,
                        stats)
    assert run.rc == 0, (run.out, run.err)
    live = run.port(0)
    assert_conserved(run)
    assert live["rx_packets"] == N
    own = assert_matches(live, off, run, stopped_s=stopped[0])
    # 300 packets fell due in the stall: shed as `late`, well over the
    # old tolerance; or, where the pacer handed them on one burst at a
    # time with nothing due behind them, sent late with their lateness
    # recorded (shp_egress.h: a lone late burst is sent; seen 1 run in
    # 12: `late` 0, the longest loop 300 ms)
    late_max = live["latency"]["lateness_ns"]["max"]
    assert own > tolerance(N) or late_max >= 100 * MS, \
        (own, late_max, run.stats.get("lcores"))


def test_host_excuse_is_capped():
    """However much the kernel says the host took, a run may shed at most
    HOST_CAP packets more than its own stall explains: an excuse past
    the cap fails the run rather than widening the tolerance."""
    import cpu_lost
    off = {"drops": {"lost": 80, "late": 0, "overload": 0},
           "tx_packets": N - 80}
    huge = cpu_lost.Lost(4.0, {"w": {"run_s": 1.0, "wait_s": 3.0,
                                     "steal_s": 0.0, "preempted": 5000,
                                     "lost_s": 3.0}})
    assert host_explains(huge) > 10 * HOST_CAP
    run = Run(subprocess.CompletedProcess([], 0, "", ""), None, huge)
    run.stats = {}
    for own, ok in ((HOST_CAP + BURST, True), (HOST_CAP + BURST + 1, False)):
        live = {"drops": {"lost": 80, "late": own, "overload": 0},
                "tx_packets": N - 80 - own}
        try:
            assert_matches(live, off, run)
            passed = True
        except AssertionError:
            passed = False
        assert passed == ok, (own, ok)
