"""netem `misorder P [CORR] depth K` (issue 61 item 4): reordering by
position, as hardware emulators do: a chosen frame is overtaken by
exactly K frames that arrived after it and by no other, with or without
a delay; it waits at most misorder_timeout for them. Offline, on the
replay tool's virtual clock, every figure is exact for the seed."""
import pytest

import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run, run

US = 1000


def capture(path, n, gap_ns):
    ts = [T0 + i * gap_ns for i in range(n)]
    pcaplib.write(str(path), [pcaplib.eth_ipv4(0, 64, i) for i in range(n)],
                  ts)
    return ts


def overtaken(order):
    """For each frame (by arrival number), how many frames that arrived
    after it left before it."""
    pos = {s: i for i, s in enumerate(order)}
    n = len(order)
    # frames arriving after s with a smaller output position: count with a
    # Fenwick tree over positions, walking arrivals from the last
    tree = [0] * (n + 1)
    res = {}
    for s in sorted(order, reverse=True):
        i, c = pos[s], 0
        while i > 0:
            c += tree[i]
            i -= i & -i
        res[s] = c
        i = pos[s] + 1
        while i <= n:
            tree[i] += 1
            i += i & -i
    return res


def out_order(out):
    return [pcaplib.seq_of(f) for _, f in pcaplib.read(str(out))[1]]


@pytest.mark.parametrize("delay", ["", "delay 10ms "])
@pytest.mark.parametrize("depth", [1, 3, 17])
def test_misorder_exact_depth(tmp_path, delay, depth):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = 20_000
    capture(inp, n, 100 * US)
    s = ok_run(inp, out, "--netem",
               "%smisorder 10%% depth %d seed 5" % (delay, depth))
    assert s["out"] == n and s["drops"] == 0        # none lost
    order = out_order(out)
    assert sorted(order) == list(range(n))
    ov = overtaken(order)
    chosen = [k for k, v in ov.items() if v]
    # every frame overtaken by 0 or exactly depth later arrivals, except
    # the last few, whose followers never came (they waited the timeout)
    late = [k for k in chosen if ov[k] != depth]
    assert all(k >= n - depth - 1 for k in late), late[:10]
    assert s["reordered"] == len(chosen)
    # about 10% chosen: within 4 binomial sigmas
    sigma = (n * 0.1 * 0.9) ** 0.5
    assert abs(len(chosen) - 0.1 * n) <= 4 * sigma, len(chosen)


def test_overlapping_chosen_frames_each_overtaken_by_depth(tmp_path):
    """At 60% with depth 5 chosen frames overlap all the time: each is
    still overtaken by exactly 5 later arrivals."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = 5_000
    capture(inp, n, 10 * US)
    s = ok_run(inp, out, "--netem", "misorder 60% depth 5 seed 9")
    assert s["out"] == n
    ov = overtaken(out_order(out))
    body = [v for k, v in ov.items() if k < n - 200]
    assert set(body) == {0, 5}
    assert sum(1 for v in body if v == 5) > 0.5 * len(body)


@LINK
def test_misorder_timeout(tmp_path):
    """Frames 20 ms apart with misorder_timeout 5ms: a chosen frame's
    followers come too late, so it leaves 5 ms after its arrival, in
    order, not reordered."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = 200
    ts = capture(inp, n, 20 * MS)
    s = ok_run(inp, out, "--netem",
               "misorder 50% depth 2 misorder_timeout 5ms seed 1")
    got = pcaplib.read(str(out))[1]
    assert [pcaplib.seq_of(f) for _, f in got] == list(range(n))
    held = [t - ts[pcaplib.seq_of(f)] for t, f in got]
    assert set(held) == {0, 5 * MS}
    assert s["reordered"] == 0


@LINK
def test_misorder_correlation(tmp_path):
    """A correlation makes chosen frames come in runs; the mean holds."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = 40_000
    capture(inp, n, 100 * US)
    ok_run(inp, out, "--netem", "misorder 10% 80% depth 1 seed 3")
    ov = overtaken(out_order(out))
    hits = [1 if ov[k] else 0 for k in range(n - 10)]
    p = sum(hits) / len(hits)
    assert abs(p - 0.1) < 0.02, p
    runs = sum(1 for i in range(1, len(hits)) if hits[i] and not hits[i - 1])
    assert sum(hits) / runs > 2.5     # geometric runs of mean 1/(0.9*0.2)


@pytest.mark.parametrize("profile,why", [
    ("misorder 10%", "needs 'depth K'"),
    ("misorder 10% depth 0", "1..511"),
    ("misorder 10% depth 512", "1..511"),
    ("delay 10ms reorder 5% misorder 10% depth 2", "contradicts 'reorder'"),
    ("delay 10ms 1ms inorder misorder 10% depth 2", "contradicts 'inorder'"),
    ("misorder_timeout 5ms", "needs a 'misorder'"),
    ("misorder 10% depth 2 misorder_timeout 0ms", "above 0")])
def test_bad_misorder_refused(tmp_path, profile, why):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, 10, MS)
    proc = run(inp, out, "--netem", profile)
    assert proc.returncode == 2, proc.stdout
    assert why in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
