"""--schedule in dpdk-shaper-replay: changes on the virtual clock, exact.

A change at T applies to every packet that arrives at or after T, and to
none before; a packet already delayed keeps its send time; `link down`
drops exactly what is offered while it lasts."""
import filecmp
import time
import os

import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run, run, summary

S = 1000 * MS


def capture(path, times_ns, length=200):
    frames = [pcaplib.eth_ipv4(0, length, i) for i in range(len(times_ns))]
    pcaplib.write(str(path), frames, [T0 + t for t in times_ns], nano=True)
    return frames


def departures(out):
    """{seq: departure ns from T0}"""
    _, got = pcaplib.read(str(out))
    return {pcaplib.seq_of(f): t - T0 for t, f in got}


def sched(tmp_path, text, name="sched.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_delay_change_exact(tmp_path):
    """Delay 10 ms, then 200 ms from 2 s: each packet gets the delay in
    force when it arrived, to the nanosecond; one arriving exactly at
    2 s gets the new one; those delayed before 2 s keep their time (they
    leave before later packets with the longer delay)."""
    times = [i * 100 * MS for i in range(40)] + [2 * S - 1, 2 * S]
    times.sort()
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "2s set netem 0 delay 200ms\n")
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--netem", "delay 10ms", "--schedule", sch)
    assert s["in"] == s["out"] == len(times)
    dep = departures(tmp_path / "out.pcap")
    for seq, t in enumerate(times):
        want = 200 * MS if t >= 2 * S else 10 * MS
        assert dep[seq] - t == want, (seq, t, dep[seq])
    proc = run(tmp_path / "in.pcap", tmp_path / "out2.pcap",
               "--netem", "delay 10ms", "--schedule", sch)
    assert "schedule:     %s: 1 line, 1 change applied" % sch in \
        proc.stdout, proc.stdout


@LINK
def test_link_down_window(tmp_path):
    """`link down 0` from 1 s to 2 s: exactly the packets offered in
    [1 s, 2 s) are dropped, as link_down, and counted as offered."""
    times = sorted([i * 37 * MS for i in range(100)] +
                   [S - 1, S, 2 * S - 1, 2 * S])
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "1s link down 0\n2s link up 0\n")
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--schedule", sch)
    inside = [t for t in times if S <= t < 2 * S]
    assert s["by_cause"]["link_down"] == len(inside)
    assert s["out"] == len(times) - len(inside)
    dep = departures(tmp_path / "out.pcap")
    for seq, t in enumerate(times):
        assert (seq in dep) == (not S <= t < 2 * S), (seq, t)
    assert s["conservation"][4:] == ("0", "ok")


@LINK
def test_repeat(tmp_path):
    """repeat 1s: down for [0.5 s, 0.7 s) of every second; the delay
    alternates 5 ms / 50 ms every half second."""
    times = [i * 10 * MS for i in range(500)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "0 set netem 0 delay 5ms\n"
                          "500ms set netem 0 delay 50ms\n"
                          "500ms link down 0\n"
                          "700ms link up 0\n"
                          "repeat 1s\n")
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--schedule", sch)
    dep = departures(tmp_path / "out.pcap")
    down = 0
    for seq, t in enumerate(times):
        ph = t % S
        if 500 * MS <= ph < 700 * MS:
            assert seq not in dep
            down += 1
        else:
            assert dep[seq] - t == (50 * MS if ph >= 500 * MS else 5 * MS)
    assert s["by_cause"]["link_down"] == down == 100


def test_rerun_identical(tmp_path):
    times = [i * 3 * MS for i in range(2000)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "0 set netem 0 delay 10ms 5ms loss 10%\n"
                          "1s set tbf 0 rate 1mbit burst 5kb limit 20kb\n"
                          "2s link down 0\n2500ms link up 0\n"
                          "3s clear tbf 0\nrepeat 4s\n")
    a = ok_run(tmp_path / "in.pcap", tmp_path / "a.pcap",
               "--schedule", sch, "--seed", "3", "--tbf", "off")
    b = ok_run(tmp_path / "in.pcap", tmp_path / "b.pcap",
               "--schedule", sch, "--seed", "3", "--tbf", "off")
    assert a == b
    assert filecmp.cmp(tmp_path / "a.pcap", tmp_path / "b.pcap",
                       shallow=False)
    assert a["by_cause"]["lost"] > 0 and a["by_cause"]["link_down"] > 0


def test_bad_schedules(tmp_path):
    """one line naming the file and the line, exit 2, nothing written"""
    capture(tmp_path / "in.pcap", [0, MS])
    cases = [
        ("1s set netem 0 delay 1ms\n500ms clear netem 0\n", ":2:",
         "backwards"),
        ("1s link down 1\n", ":1:", "no port '1'"),
        ("1s reboot 0\n", ":1:", "unknown command 'reboot'"),
        ("1s set netem 0 delay soon\n", ":1:", "soon"),
        ("1s set queue 0 fq_codel\n", ":1:", "runs pfifo_fast"),
    ]
    for text, line, what in cases:
        sch = sched(tmp_path, text)
        out = tmp_path / "out.pcap"
        proc = run(tmp_path / "in.pcap", out, "--schedule", sch)
        assert proc.returncode == 2, (text, proc.stderr)
        err = proc.stderr.strip()
        assert "\n" not in err, err
        assert sch + line in err and what in err, (text, err)
        assert not out.exists()
    proc = run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--schedule", str(tmp_path / "missing.txt"))
    assert proc.returncode == 2 and "missing.txt" in proc.stderr


def test_ini_schedule(tmp_path):
    """[global] schedule = FILE, as --schedule"""
    times = [i * 100 * MS for i in range(30)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "1s link down 0\n")
    ini = tmp_path / "p.ini"
    ini.write_text("[global]\nschedule = %s\n[port 0]\nnetem = delay 1ms\n"
                   % sch)
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--config", str(ini))
    assert s["by_cause"]["link_down"] == 20


def test_fq_codel_flows_kept_offline(tmp_path):
    """Offline as live (issue 30 item 5): with `--queue 'fq_codel flows
    65536'` a schedule's `clear queue` and `set queue` without flows keep
    the table's size and apply; one naming another size is refused at
    start (exit 2, its line named, nothing written), not at its time."""
    capture(tmp_path / "in.pcap", [i * 100 * MS for i in range(30)])
    sch = sched(tmp_path, "1s clear queue 0\n2s set queue 0 fq_codel "
                "limit 7\n")
    proc = run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--queue", "fq_codel flows 65536", "--schedule", sch)
    assert proc.returncode == 0, proc.stderr
    assert "schedule:     %s: 2 lines, 2 changes applied" % sch in \
        proc.stdout, proc.stdout
    assert summary(proc.stdout)["out"] == 30, proc.stdout
    sch = sched(tmp_path, "1s set queue 0 fq_codel limit 7\n"
                "2s set queue 0 fq_codel flows 1\n")
    out = tmp_path / "out2.pcap"
    proc = run(tmp_path / "in.pcap", out, "--queue", "fq_codel flows 65536",
               "--schedule", sch)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in err, (proc.returncode, err)
    assert sch + ":2: fq_codel: flows cannot change" in err and \
        "65536 now" in err, err
    assert not out.exists()


def test_repeat_below_floor_refused(tmp_path):
    """`repeat 1ns` ran a 1 s capture at 1.3 M changes/s (13 minutes):
    offline refuses it as live does, naming the floor, before anything
    is written; the floor itself runs, every cycle's change exact."""
    times = [i * 100 * MS for i in range(10)]
    capture(tmp_path / "in.pcap", times)
    out = tmp_path / "out.pcap"
    sch = sched(tmp_path, "0 set netem 0 delay 1ms\nrepeat 1ns\n")
    proc = run(tmp_path / "in.pcap", out, "--schedule", sch, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert sch + ":2: repeat 1ns: the period must be at least 1ms" in \
        proc.stderr, proc.stderr
    assert not out.exists()
    sch = sched(tmp_path, "0 set netem 0 delay 1ms\n"
                          "500us set netem 0 delay 2ms\nrepeat 1ms\n")
    ok_run(tmp_path / "in.pcap", out, "--schedule", sch)
    dep = departures(out)
    # each packet arrives at a whole millisecond: the 1 ms delay
    assert all(dep[s] - t == MS for s, t in enumerate(times)), dep


def test_many_changes_at_one_instant(tmp_path):
    """20,000 lines at 1 s, the last one 77 ms: every one counts as
    applied, and every packet from 1 s gets 77 ms, as the live program
    does (test/cli/test_schedule_cli.py)."""
    times = [i * 100 * MS for i in range(20)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "1s set netem 0 delay 1ms\n" * 20000 +
                "1s set netem 0 delay 77ms\n")
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--netem", "delay 5ms", "--schedule", sch)
    assert s["out"] == len(times)
    dep = departures(tmp_path / "out.pcap")
    for seq, t in enumerate(times):
        assert dep[seq] - t == (77 * MS if t >= S else 5 * MS), (seq, t)
    proc = run(tmp_path / "in.pcap", tmp_path / "out2.pcap",
               "--netem", "delay 5ms", "--schedule", sch)
    assert "20001 lines, 20001 changes applied" in proc.stdout, proc.stdout


def test_idle_gap_skips_cycles(tmp_path):
    """Two packets 80,000 s apart under a 1 ms repeat: 160 million
    changes fall in the gap, with nothing queued (about two minutes at
    1.3 M changes/s before). The cycles of the gap are counted as
    applied without being walked; each packet still meets the change in
    force when it arrives, and the count is exact: every occurrence up
    to the second packet's departure."""
    gap = 80000 * S
    capture(tmp_path / "in.pcap", [0, gap])
    sch = sched(tmp_path, "0 set netem 0 delay 1ms\n"
                          "500us set netem 0 delay 2ms\nrepeat 1ms\n")
    t = time.monotonic()
    proc = run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--schedule", sch, timeout=60)
    took = time.monotonic() - t
    assert proc.returncode == 0, proc.stderr
    dep = departures(tmp_path / "out.pcap")
    assert dep == {0: MS, 1: gap + MS}, dep
    # at 0, 0.5 ms, ... up to the arrival at `gap`, then 0.5 ms and 1 ms
    # after it (the drain, until the packet left)
    want = 2 * (gap // MS) + 1 + 2
    assert "%d changes applied" % want in proc.stdout, proc.stdout
    assert took < 30, took


def test_schedule_not_a_file_refused(tmp_path):
    """A FIFO without a writer made the open wait for ever, /dev/zero was
    read as one endless line, and what followed a NUL byte was ignored
    unseen: each is refused at once, one line, exit 2."""
    capture(tmp_path / "in.pcap", [0, MS])
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"1s set netem 0 delay 1ms\x00 and then\n")
    for path, what in [(str(fifo), "not a regular file"),
                       ("/dev/zero", "not a regular file"),
                       (str(nul), "nul.txt:1: not text (a NUL byte)")]:
        proc = run(tmp_path / "in.pcap", tmp_path / "out.pcap",
                   "--schedule", path, timeout=20)
        assert proc.returncode == 2, (path, proc.stderr)
        assert what in proc.stderr and \
            proc.stderr.strip().count("\n") == 0, proc.stderr
