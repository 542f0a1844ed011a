"""netem `inorder` (issue 61 item 5): jitter that never reorders and keeps
the delay's mean and deviation, where `noreorder`'s max(drawn, last)
raises the mean. Offline, on the replay tool's virtual clock: every
figure is exact for the seed, and the tolerances are the issue's."""
import statistics

import pytest

import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run

FPS = 10_000
SECS = 30


def capture(path, n, gap_ns, poisson_seed=None):
    import random
    rnd = random.Random(poisson_seed)
    ts, t = [], T0
    for _ in range(n):
        ts.append(t)
        t += gap_ns if poisson_seed is None else \
            max(1, int(rnd.expovariate(1.0 / gap_ns)))
    frames = [pcaplib.eth_ipv4(0, 64, i) for i in range(n)]
    pcaplib.write(str(path), frames, ts)
    return ts


def delays(out, ts):
    """Each frame's delay by its sequence number, and whether the output
    kept the input's order."""
    got = pcaplib.read(str(out))[1]
    seqs = [pcaplib.seq_of(f) for _, f in got]
    d = [t - ts[s] for (t, _), s in zip(got, seqs)]
    return d, seqs


@pytest.mark.parametrize("seed,poisson", [(1, None), (7, None), (3, 11)])
def test_inorder_keeps_order_mean_and_deviation(tmp_path, seed, poisson):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = FPS * SECS
    ts = capture(inp, n, 10**9 // FPS, poisson)
    s = ok_run(inp, out, "--netem",
               "delay 10ms 2ms distribution normal inorder seed %d" % seed)
    assert s["out"] == n and s["drops"] == 0
    assert s["out_of_order"] == 0
    d, seqs = delays(out, ts)
    assert seqs == sorted(seqs)     # nothing left out of order
    mean, sd = statistics.fmean(d), statistics.pstdev(d)
    assert abs(mean - 10 * MS) <= 0.02 * 10 * MS, mean
    assert abs(sd - 2 * MS) <= 0.10 * 2 * MS, sd


def test_noreorder_raises_the_mean_inorder_does_not(tmp_path):
    """What inorder is for: at the same load and seed, tc-style jitter
    reorders most frames and noreorder's max(drawn, last) lifts the mean
    far beyond 2%."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = FPS * 5
    ts = capture(inp, n, 10**9 // FPS)
    s = ok_run(inp, out, "--netem",
               "delay 10ms 2ms distribution normal noreorder seed 1")
    assert s["out_of_order"] == 0
    d, _ = delays(out, ts)
    assert statistics.fmean(d) > 1.10 * 10 * MS
    s = ok_run(inp, out, "--netem",
               "delay 10ms 2ms distribution normal seed 1")
    assert s["out_of_order"] > n // 2


@LINK
def test_inorder_uniform_and_a_copy(tmp_path):
    """Without a table (uniform) and with copies: in order, the copy
    right after its original, mean within 2%."""
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    n = FPS * 10
    ts = capture(inp, n, 10**9 // FPS)
    s = ok_run(inp, out, "--netem",
               "delay 20ms 4ms inorder duplicate 5% seed 2")
    assert s["out_of_order"] == 0
    d, seqs = delays(out, ts)
    assert seqs == sorted(seqs)
    assert len(seqs) > n
    assert abs(statistics.fmean(d) - 20 * MS) <= 0.02 * 20 * MS


@pytest.mark.parametrize("profile", [
    "delay 10ms 2ms inorder reorder 5%",
    "delay 10ms 2ms reorder 5% inorder"])
def test_inorder_with_reorder_refused(tmp_path, profile):
    from test_offline import run
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    capture(inp, 10, MS)
    proc = run(inp, out, "--netem", profile)
    assert proc.returncode == 2, proc.stdout
    assert "'inorder' contradicts 'reorder'" in proc.stderr, proc.stderr
