"""Changes that expire (issue 28 item 4) in a --schedule, offline: `set
... for TIME` applies the change at t and goes back to the profile it
replaced at exactly t + TIME on the virtual clock, to the nanosecond; a
later line without `for` for the same stage cancels the change back;
overlapping `for`s stack and end on the profile from before the first
(issue 58 item 7)."""
from conftest import LINK
from test_offline import MS, ok_run, run
from test_schedule import S, capture, departures, sched


@LINK
def test_loss_for_one_second_exact(tmp_path):
    """`0 set netem 0 loss 100% for 1s`: exactly the packets arriving in
    [0, 1 s) are lost, the ones at 999,999,999 ns too, the one at
    1,000,000,000 ns and after not; what they meet after is the delay
    they had before, and reruns are byte-identical."""
    times = sorted(set([i * 10 * MS for i in range(300)] +
                       [S - 1, S, S + 1, 0]))
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "0 set netem 0 loss 100% for 1s\n")
    s = ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
               "--netem", "delay 5ms", "--schedule", sch)
    dep = departures(tmp_path / "out.pcap")
    lost = [seq for seq, t in enumerate(times) if t < S]
    for seq, t in enumerate(times):
        if t < S:
            assert seq not in dep, (seq, t)
        else:
            assert dep[seq] - t == 5 * MS, (seq, t, dep.get(seq))
    assert s["in"] == len(times) and s["out"] == len(times) - len(lost)
    assert times.index(S - 1) in lost and times.index(S) not in lost
    proc = run(tmp_path / "in.pcap", tmp_path / "out2.pcap",
               "--netem", "delay 5ms", "--schedule", sch)
    assert proc.returncode == 0, proc.stderr
    assert "1 line, 2 changes applied" in proc.stdout, proc.stdout
    with open(tmp_path / "out.pcap", "rb") as a, \
            open(tmp_path / "out2.pcap", "rb") as b:
        assert a.read() == b.read()


def test_later_line_cancels_and_repeat(tmp_path):
    """A later line for the stage before t + TIME holds (no change back);
    under repeat the change back happens in every cycle."""
    times = [i * 100 * MS for i in range(40)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, "0 set netem 0 delay 7ms\n"
                "1s set netem 0 delay 50ms for 2s\n"
                "2s set netem 0 delay 20ms\n")
    ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap", "--schedule", sch)
    dep = departures(tmp_path / "out.pcap")
    for seq, t in enumerate(times):
        want = 7 if t < S else 50 if t < 2 * S else 20
        assert dep[seq] - t == want * MS, (seq, t, dep[seq])
    sch = sched(tmp_path, "0 set netem 0 delay 7ms\n"
                "500ms set netem 0 delay 30ms for 250ms\n"
                "repeat 1s\n", name="r.txt")
    ok_run(tmp_path / "in.pcap", tmp_path / "out3.pcap", "--schedule", sch)
    dep = departures(tmp_path / "out3.pcap")
    for seq, t in enumerate(times):
        ph = t % S
        want = 30 if 500 * MS <= ph < 750 * MS else 7
        assert dep[seq] - t == want * MS, (seq, t, dep[seq])


def test_for_refused(tmp_path):
    """one line naming the file and line, exit 2"""
    capture(tmp_path / "in.pcap", [0, MS])
    cases = [
        ("0 set netem 0 loss 5% for 500us\n", ":1:", "at least 1ms"),
        ("0 set netem 0 loss 5% for 86401s\n", ":1:", "at most 24 hours"),
        ("0 set netem 0 loss 5% for soon\n", ":1:", "for: 'soon'"),
        ("0 set netem 0 loss 5% for\n", ":1:", "needs a TIME"),
        ("0 set netem 0 for 1s\n", ":1:", "the profile comes before it"),
        ("0 set netem 0 delay 1ms\n900ms set netem 0 delay 2ms for 200ms\n"
         "repeat 1s\n", ":2:", "next cycle"),
        ("0 set netem 0 delay 1ms for 10ms\n500ms set netem 0 delay 3ms\n"
         "repeat 1s\n", ":1:", "under repeat"),
        ("".join("%dms set netem 0 delay %dms for 10s\n" % (i, i + 1)
                 for i in range(9)), ":9:", "at most 8 at once"),
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


def delays_by_window(tmp_path, text, windows, base="delay 5ms"):
    """Runs the schedule over a packet every 10 ms for 5 s: each packet
    meets the delay of the window it arrives in ((start, end, ms); ms
    None: lost)."""
    times = [i * 10 * MS for i in range(500)]
    capture(tmp_path / "in.pcap", times)
    sch = sched(tmp_path, text)
    ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap",
           "--netem", base, "--schedule", sch)
    dep = departures(tmp_path / "out.pcap")
    for seq, t in enumerate(times):
        want = [ms for a, b, ms in windows if a <= t < b]
        assert len(want) == 1, (t, windows)
        if want[0] is None:
            assert seq not in dep, (seq, t)
        else:
            assert dep.get(seq, -1) - t == want[0] * MS, \
                (seq, t, dep.get(seq))


def test_stacked_for_end_on_the_base(tmp_path):
    """Issue 58 item 7: a second `for` on the stage before the first
    ended went back to the first's profile, which then held for ever.
    Now the stage runs the latest `for` still running, and the profile
    from before the first once they have all ended."""
    delays_by_window(
        tmp_path, "0 set netem 0 loss 100% for 2s\n"
        "500ms set netem 0 delay 50ms for 3s\n",
        [(0, S // 2, None), (S // 2, 3500 * MS, 50), (3500 * MS, 5 * S, 5)])
    # the later one ends first: the earlier one's profile again
    delays_by_window(
        tmp_path, "0 set netem 0 delay 30ms for 3s\n"
        "1s set netem 0 delay 50ms for 1s\n",
        [(0, S, 30), (S, 2 * S, 50), (2 * S, 3 * S, 30), (3 * S, 5 * S, 5)])


@LINK
def test_stacked_for_tbf(tmp_path):
    """The same on tbf, from off: from the last `for`'s end nothing is
    held back or dropped (before, the first's tbf came back for ever)."""
    times = [i * MS for i in range(5000)]
    capture(tmp_path / "in.pcap", times, length=1500)
    sch = sched(tmp_path, "0 set tbf 0 rate 1mbit burst 3kb limit 3kb "
                "for 2s\n500ms set tbf 0 rate 2mbit burst 3kb limit 3kb "
                "for 3s\n")
    ok_run(tmp_path / "in.pcap", tmp_path / "out.pcap", "--schedule", sch)
    dep = departures(tmp_path / "out.pcap")
    inside = [seq for seq, t in enumerate(times) if t < 3500 * MS]
    assert sum(seq in dep for seq in inside) < len(inside) // 4
    for seq, t in enumerate(times):
        if t >= 3500 * MS:
            assert dep.get(seq) == t, (seq, t, dep.get(seq))


def test_line_without_for_holds(tmp_path):
    """A line without `for` while `for`s run on the stage holds: none of
    them changes it back, and a `for` after it goes back to it."""
    delays_by_window(
        tmp_path, "0 set netem 0 delay 30ms for 3s\n"
        "500ms set netem 0 delay 50ms for 2s\n"
        "1s set netem 0 delay 20ms\n"
        "4s set netem 0 delay 40ms for 500ms\n",
        [(0, S // 2, 30), (S // 2, S, 50), (S, 4 * S, 20),
         (4 * S, 4500 * MS, 40), (4500 * MS, 5 * S, 20)])
