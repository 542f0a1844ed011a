"""netem `trace FILE [once|loop]` (issue 61 item 1): a TheaterQ trace file
replayed row by row on the data path's clock. Offline, on the replay
tool's virtual clock, every frame's send time is exact: each is checked
against netem's rule for the row in force when it arrived (its delay, then
the row's rate behind the frame before), the rate and the loss per row."""
import json
import math

import pytest

import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run, run

ROW_NS = 100 * MS
LEN = 200
U32 = 2**32 - 1
# (latency ns, rate bit/s, loss scaled): the three rows
ROWS = [(10 * MS, 10_000_000, 0), (50 * MS, 1_000_000, 0),
        (20 * MS, 5_000_000, 2**32 // 10)]
LIMIT = 1000


def trace_file(path, extended=True, rows=ROWS):
    lines = ["# TheaterQ trace: the issue's three rows",
             "KEEP,LATENCY,JITTER,RATE,LOSS,LIMIT,DUP_PROB,DUP_DELAY,ROUTE"]
    for lat, rate, loss in rows:
        if extended:
            lines.append("%d,%d,0,%d,%d,%d,0,0,0" %
                         (ROW_NS // 1000, lat, rate, loss, LIMIT))
        else:
            lines.append("%d,%d,%d,%d,%d" %
                         (ROW_NS // 1000, lat, rate, loss, LIMIT))
    path.write_text("\n".join(lines) + "\n")
    return path


def capture(path, rows=ROWS, passes=1, over=1.3):
    """Frames of LEN bytes offered at `over` times each row's rate."""
    ts = []
    for p in range(passes):
        for k, (_, rate, _) in enumerate(rows):
            start = T0 + (p * len(rows) + k) * ROW_NS
            gap = int(LEN * 8 * 10**9 / (rate * over))
            t = start
            while t < start + ROW_NS:
                ts.append(t)
                t += gap
    frames = [pcaplib.eth_ipv4(0, LEN, i) for i in range(len(ts))]
    pcaplib.write(str(path), frames, ts, nano=True)
    return ts


def row_of(t, nrows, loop=True):
    k = (t - T0) // ROW_NS
    return k % nrows if loop else min(k, nrows - 1)


def departures(out):
    return {pcaplib.seq_of(f): t for t, f in pcaplib.read(str(out))[1]}


def check_exact(ts, dep, rows=ROWS, loop=True):
    """netem's rule, row by row: due at arrival + latency, then behind the
    last frame queued, plus the row's serialisation time (bytes/s)."""
    last = None
    for i, t in enumerate(ts):
        if i not in dep:
            continue            # lost: it took no place on the link
        lat, rate, _ = rows[row_of(t, len(rows), loop)]
        due = t + lat
        if last is not None and last > due:
            due = last
        due += LEN * 10**9 // (rate // 8)
        assert dep[i] == due, (i, t - T0, dep[i] - t, due - t)
        last = due


@pytest.mark.parametrize("extended", [True, False])
@LINK
def test_three_rows_exact(tmp_path, extended):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    tr = trace_file(tmp_path / "t.csv", extended)
    ts = capture(inp)
    st = tmp_path / "stats.json"
    s = ok_run(inp, out, "--netem", "trace %s seed 5" % tr,
               "--stats-file", str(st))
    dep = departures(out)
    assert s["in"] == len(ts) and s["out"] == len(dep)
    # only the third row loses, and only by its LOSS
    assert {k for k, v in s["by_cause"].items() if v} <= {"lost"}, \
        s["by_cause"]
    check_exact(ts, dep)
    for k, (lat, rate, loss) in enumerate(ROWS):
        seqs = [i for i, t in enumerate(ts) if row_of(t, 3) == k]
        got = sorted(dep[i] for i in seqs if i in dep)
        # the link is busy through the row's frames: the rate is theirs
        measured = (len(got) - 1) * LEN * 8 * 10**9 / (got[-1] - got[0])
        assert abs(measured - rate) <= 0.005 * rate, (k, measured)
        n, lost = len(seqs), len(seqs) - len(got)
        p = loss / U32
        bound = 4 * math.sqrt(n * p * (1 - p))
        assert abs(lost - n * p) <= bound, (k, n, lost)
        if loss:
            assert lost > 0
        # the first frame of each row: the row's latency to the ns, plus
        # its own serialisation (nothing of another row ahead of it)
        if k == 0:
            assert dep[seqs[0]] - ts[seqs[0]] == \
                lat + LEN * 10**9 // (rate // 8)
    # the per-row figures of --stats-file say the same
    with open(st) as f:
        rows = json.load(f)["ports"]["0"]["trace_rows"]
    assert [r["row"] for r in rows] == [0, 1, 2]
    assert [r["route"] for r in rows] == [0, 0, 0]
    for k, r in enumerate(rows):
        seqs = [i for i, t in enumerate(ts) if row_of(t, 3) == k]
        got = [dep[i] - ts[i] for i in seqs if i in dep]
        assert r["frames"] == len(seqs)
        assert r["drops"] == len(seqs) - len(got)
        assert abs(r["delay_mean_ns"] - sum(got) / len(got)) <= 1


def test_loop_and_once(tmp_path):
    """loop starts the rows again; once holds the last (TheaterQ's cont
    LOOP and HOLD)."""
    inp = tmp_path / "in.pcap"
    tr = trace_file(tmp_path / "t.csv", rows=ROWS[:2])
    # two passes of traffic shaped for the two rows
    ts = capture(inp, rows=ROWS[:2], passes=2)
    out = tmp_path / "loop.pcap"
    ok_run(inp, out, "--netem", "trace %s loop" % tr)
    check_exact(ts, departures(out), rows=ROWS[:2], loop=True)
    out = tmp_path / "once.pcap"
    ok_run(inp, out, "--netem", "trace %s once" % tr)
    with pytest.raises(AssertionError):
        check_exact(ts, departures(out), rows=ROWS[:2], loop=True)
    check_exact(ts, departures(out), rows=ROWS[:2], loop=False)


def test_duplicate_and_its_delay(tmp_path):
    """DUP_PROB 2^32-1 copies every frame; the copy leaves DUP_DELAY after
    its original (TheaterQ: the copy's delay is the row's plus DUP_DELAY).
    ROUTE_ID is read and reported per row."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    tr = tmp_path / "t.csv"
    tr.write_text("100000,10000000,0,0,0,1000,%d,5000000,7\n"
                  "100000,30000000,0,0,0,1000,0,0,9\n" % U32)
    ts = [T0 + i * 2 * MS for i in range(100)]
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, LEN, i)
                             for i in range(len(ts))], ts, nano=True)
    st = tmp_path / "stats.json"
    s = ok_run(inp, out, "--netem", "trace %s" % tr, "--stats-file", str(st))
    assert s["duplicated"] == 50 and s["out"] == 150
    got = {}
    for t, f in pcaplib.read(str(out))[1]:
        got.setdefault(pcaplib.seq_of(f), []).append(t)
    for i, t in enumerate(ts):
        if i < 50:
            assert got[i] == [t + 10 * MS, t + 15 * MS], i
        else:
            assert got[i] == [t + 30 * MS], i
    with open(st) as f:
        rows = json.load(f)["ports"]["0"]["trace_rows"]
    assert [(r["route"], r["frames"], r["drops"]) for r in rows] == \
        [(7, 50, 0), (9, 50, 0)]


BAD = [
    ("100000,10000000,0,10000000,0,1000,0,0,0\n"
     "0,10000000,0,10000000,0,1000,0,0,0\n", 2, "KEEP 0"),
    ("# header\n100000,10000000,0,10000000,0,1000,0,0,0\n"
     "100000,-5,0,10000000,0,1000,0,0,0\n", 3, "LATENCY"),
    ("100000,10000000,10000000,0,1000\n100000,10000000,0,1000\n", 2,
     "4 columns"),
    ("100000,10000000,0,10000000,0,1000,0,0,0,7\n", 1, "10 columns"),
    ("100000,10000000,0,10000000,0,1000,0,0,0\n"
     "100000,10000000,10000000,0,1000\n", 2, "5 columns where"),
    ("100000,10000000,0,10000000,4294967296,1000,0,0,0\n", 1, "LOSS"),
    ("# nothing but comments\n", None, "no rows"),
]


@pytest.mark.parametrize("text,line,what", BAD)
def test_bad_rows_refused_with_the_line(tmp_path, text, line, what):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, rows=ROWS[:1])
    tr = tmp_path / "bad.csv"
    tr.write_text(text)
    proc = run(inp, out, "--netem", "trace %s" % tr)
    assert proc.returncode != 0
    where = "%s:%d:" % (tr, line) if line else str(tr)
    assert where in proc.stderr and what in proc.stderr, proc.stderr
    # refused whole: no frame went through a part of it
    assert not out.exists() or out.stat().st_size <= 24


def test_profile_printed_parses_back(tmp_path):
    """The stage prints its profile without the default limit netem adds
    to others (a trace's rows set the limit): the text is a profile
    again (`save`, `update` read it)."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, rows=ROWS[:1])
    tr = trace_file(tmp_path / "t.csv")
    proc = run(inp, out, "--netem", "trace %s once" % tr)
    assert proc.returncode == 0, proc.stderr
    line = [l for l in proc.stdout.splitlines() if l.startswith("profile:")]
    assert line and ("netem distribution normal trace %s once;" % tr) \
        in line[0], proc.stdout
    printed = line[0].split("netem ", 1)[1].split(";")[0]
    assert ok_run(inp, tmp_path / "again.pcap", "--netem", printed)


def test_trace_refuses_the_figures_it_sets(tmp_path):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, rows=ROWS[:1])
    tr = trace_file(tmp_path / "t.csv")
    proc = run(inp, out, "--netem", "trace %s delay 5ms" % tr)
    assert proc.returncode != 0
    assert "'delay' cannot be given with it" in proc.stderr, proc.stderr
