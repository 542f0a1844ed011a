"""Links that change over time, offline (docs/time-varying.md): trace-driven
rate, outages and bit errors on dpdk-shaper-replay's virtual clock, exact
to the nanosecond and byte-identical across reruns."""
import collections
import json
import os
import random
import subprocess

import pytest

import pcaplib
from conftest import LINK, REPLAY_BIN, replay_args

MS = 10**6
T0 = 1_700_000_000 * 10**9
OPP = 1504
TRACES = os.path.join(os.path.dirname(__file__), "..", "..", "config",
                      "traces")


@pytest.fixture(scope="module", autouse=True)
def replay_built():
    if not os.path.exists(REPLAY_BIN):
        pytest.fail("%s is missing: build first (ninja -C build)"
                    % REPLAY_BIN)


def run(inp, out, *args):
    return subprocess.run([REPLAY_BIN, str(inp), str(out)] +
                          replay_args(args),
                          capture_output=True, text=True, timeout=300)


def ok_run(inp, out, *args):
    proc = run(inp, out, *args)
    assert proc.returncode == 0, proc.stderr
    assert "conservation:" in proc.stdout and ": ok" in proc.stdout, \
        proc.stdout
    return proc


def mahimahi(arrivals, sched_ms, base):
    """Departure time of each packet (arrival ns, length), FIFO, by
    Mahimahi's LinkQueue::rationalize written from its description: each
    opportunity (base + ms, repeating with the last ms as period) is 1504
    bytes spent on the queue's head packets in order, a packet that does
    not fit carrying its remaining bytes to the next opportunities; a
    packet arriving at an opportunity's instant comes after it."""
    period = sched_ms[-1] * MS
    out = [None] * len(arrivals)
    queue = collections.deque()
    nxt, head, left, done, k = 0, None, 0, 0, 0
    while done < len(arrivals):
        t = base + (k // len(sched_ms)) * period + \
            sched_ms[k % len(sched_ms)] * MS
        k += 1
        while nxt < len(arrivals) and arrivals[nxt][0] < t:
            queue.append(nxt)
            nxt += 1
        budget = OPP
        while budget > 0:
            if left == 0:
                if not queue:
                    break
                head = queue.popleft()
                left = arrivals[head][1]
            sent = min(budget, left)
            left -= sent
            budget -= sent
            if left == 0:
                out[head] = t
                done += 1
    return out


def write_trace(path, ms):
    path.write_text("".join("%d\n" % x for x in ms))
    return str(path)


def test_departures_at_opportunities(tmp_path):
    """1504-byte packets, in bursts and alone, some arriving at an
    opportunity's instant: each leaves at the opportunity Mahimahi's model
    gives it, to the nanosecond (and so exactly at one)."""
    sched = [2, 2, 5, 9, 9, 9, 14, 20]
    trace = write_trace(tmp_path / "t.trace", sched)
    rng = random.Random(1)
    ts, t = [], T0
    for i in range(300):
        ts.append(t)
        t += rng.choice([0, 0, 0, 1 * MS, 3 * MS, 7 * MS + 123,
                         5 * MS])   # 5 ms apart: on opportunities
    arrivals = [(x, OPP) for x in ts]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, OPP, i)
                             for i in range(len(ts))], ts, nano=True)
    ok_run(inp, out, "--trace", trace)
    _, got = pcaplib.read(str(out))
    want = mahimahi(arrivals, sched, T0)
    assert [pcaplib.seq_of(f) for _, f in got] == list(range(len(ts)))
    assert [x for x, _ in got] == want
    opps = {T0 + p * sched[-1] * MS + s * MS
            for p in range(1000) for s in sched}
    assert all(x in opps for x, _ in got)


@LINK
def test_small_packets_share(tmp_path):
    """Packets of 64..1504 bytes share opportunities as Mahimahi's: the
    departures are the model's, to the nanosecond."""
    sched = [1, 1, 3, 4, 4, 4, 8]
    trace = write_trace(tmp_path / "t.trace", sched)
    rng = random.Random(2)
    arrivals, t = [], T0
    for i in range(2000):
        arrivals.append((t, rng.choice([64, 64, 100, 576, 1000, 1400,
                                        1504])))
        t += rng.choice([0, 0, 50_000, 200_000, 1 * MS, 2 * MS])
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, n, i)
                             for i, (_, n) in enumerate(arrivals)],
                  [x for x, _ in arrivals], nano=True)
    ok_run(inp, out, "--trace", trace, "--ring-size", "4096")
    _, got = pcaplib.read(str(out))
    want = mahimahi(arrivals, sched, T0)
    assert len(got) == len(arrivals)
    assert [x for x, _ in got] == want
    # several packets left at one opportunity
    assert max(collections.Counter(want).values()) > 5


def test_constant_12mbit(tmp_path):
    """config/traces/const-12mbit.trace under a saturating load: 12 Mbit/s
    within 0.5%, measured on the frames that left."""
    trace = os.path.join(TRACES, "const-12mbit.trace")
    n, size = 16000, 1500
    gap = size * 8 * 10**9 // 20_000_000   # offered at 20 Mbit/s
    ts = [T0 + i * gap for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, size, i) for i in range(n)],
                  ts, nano=True)
    ok_run(inp, out, "--trace", trace, "--ring-size", "16384")
    _, got = pcaplib.read(str(out))
    assert len(got) == n
    # the link is busy from the first departure to the last
    span = got[-1][0] - got[0][0]
    bits = sum(len(f) for _, f in got[1:]) * 8
    rate = bits / (span / 1e9)
    assert abs(rate - 12e6) / 12e6 < 0.005, rate


def test_cellular_trace_follows(tmp_path):
    """The shipped variable trace: with a backlog, each second carries
    exactly the opportunities the trace has that second."""
    path = os.path.join(TRACES, "cellular.trace")
    sched = [int(x) for x in open(path)]
    n, size = 10000, 1504
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, size, i) for i in range(n)],
                  [T0] * n, nano=True)
    ok_run(inp, out, "--trace", path, "--ring-size", "16384")
    _, got = pcaplib.read(str(out))
    assert len(got) == n
    per_s = collections.Counter((x - T0) // 10**9 for x, _ in got)
    offer = collections.Counter(s // 1000 for s in sched)
    # 10000 opportunities: the backlog lasts beyond 13 s (13200 in 20 s)
    assert sum(offer[s] for s in range(14)) > n - 1000
    last = max(per_s)
    for sec in range(last):
        assert per_s[sec] == offer[sec], (sec, per_s[sec], offer[sec])
    assert len(set(offer[s] for s in range(last))) > 5   # it varies


@pytest.mark.parametrize("text,line,what", [
    ("", 1, "empty"),
    ("1\n3\n2\n", 3, "never decrease"),
    ("1\nabc\n", 2, "not a time"),
    ("# nothing\n", 1, "no opportunity"),
    ("0\n", 1, "last time is 0"),
])
def test_bad_trace(tmp_path, text, line, what):
    """One line naming the file and line, exit 2, OUT not written."""
    trace = tmp_path / "bad.trace"
    trace.write_text(text)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, 100, 0)], [T0], nano=True)
    proc = run(inp, out, "--trace", str(trace))
    assert proc.returncode == 2
    err = proc.stderr.strip()
    assert "\n" not in err and "%s:%d:" % (trace, line) in err and \
        what in err, err
    assert not out.exists()


@pytest.mark.parametrize("netem,word", [
    ("ber 0", "'0'"), ("ber 1", "'1'"), ("ber 1.5", "'1.5'"),
    ("outage 0s 1s", "'0s'"), ("outage 1s", "mean down time"),
])
def test_bad_netem(tmp_path, netem, word):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, 100, 0)], [T0], nano=True)
    proc = run(inp, out, "--netem", netem)
    assert proc.returncode == 2
    assert word in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def stats(path):
    with open(path) as f:
        return json.load(f)["ports"]["0"]


def test_ber_bits_on_the_wire(tmp_path):
    """ber corrupt: the bits that differ between what went in and what
    came out are the ber_bits counted, in as many frames as corrupted."""
    n, size = 20000, 1250
    ts = [T0 + i * 100_000 for i in range(n)]
    frames = [pcaplib.eth_ipv4(0, size, i) for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    js = tmp_path / "s.json"
    ok_run(inp, out, "--netem", "ber 1e-5", "--stats-file", str(js))
    _, got = pcaplib.read(str(out))
    assert len(got) == n
    diff, hit = 0, 0
    for a, (_, b) in zip(frames, got):
        d = sum(bin(x ^ y).count("1") for x, y in zip(a, b))
        diff += d
        hit += d > 0
    p = stats(js)
    assert p["xstats"]["netem"]["ber_bits"] == diff
    assert p["xstats"]["netem"]["corrupted"] == hit
    # 1 - (1 - 1e-5)^10000 = 9.5%: 20000 frames within 99.9%
    q = 1 - (1 - 1e-5) ** (size * 8)
    assert abs(hit / n - q) < 3.29 * (q * (1 - q) / n) ** 0.5


def test_outage_drops_whole_periods(tmp_path):
    """outage: what is dropped is link_down, in runs (periods), the
    rest leaves untouched."""
    n = 30000
    ts = [T0 + i * MS for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, 200, i) for i in range(n)],
                  ts, nano=True)
    js = tmp_path / "s.json"
    ok_run(inp, out, "--netem", "outage 500ms 200ms", "--stats-file",
           str(js))
    _, got = pcaplib.read(str(out))
    kept = {pcaplib.seq_of(f) for _, f in got}
    assert stats(js)["drops"]["link_down"] == n - len(kept)
    runs, prev = 0, True
    for i in range(n):
        up = i in kept
        runs += (up != prev)
        prev = up
    # ~ 30 s / 0.7 s cycles: tens of down runs, each many packets long
    downs = runs // 2 + runs % 2
    assert 20 <= downs <= 80, downs
    assert (n - len(kept)) / downs > 50


def test_reruns_byte_identical(tmp_path):
    """trace + outage + ber + delay: the same input and seed give the same
    output, byte for byte, and the same summary; another seed does not."""
    path = os.path.join(TRACES, "cellular.trace")
    rng = random.Random(3)
    n = 8000
    ts, t = [], T0
    for i in range(n):
        ts.append(t)
        t += rng.randrange(0, 2 * MS)
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), [pcaplib.eth_ipv4(0, rng.choice([64, 700, 1500]),
                                              i) for i in range(n)],
                  ts, nano=True)
    outs = []
    for k, seed in enumerate(["7", "7", "8"]):
        out = tmp_path / ("out%d.pcap" % k)
        proc = ok_run(inp, out, "--trace", path, "--netem",
                      "delay 20ms 5ms outage 2s 300ms ber 1e-5",
                      "--seed", seed)
        # the summary's first line names OUT
        outs.append((out.read_bytes(), proc.stdout.split("\n", 1)[1]))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[2][0]
