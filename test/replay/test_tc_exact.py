"""tc, exactly (issue 11) and the arithmetic of issue 15, through
dpdk-shaper-replay on its virtual clock: bare rates, tbf's bucket with
overheads, duplicates charged to the rate, saturated serialisation times,
and random streams independent per impairment."""
import itertools
import os

import pytest

import pcaplib
from conftest import LINK
from test_offline import MS, T0, ok_run, run


def frames_at(tmp_path, lens, times, name="in.pcap"):
    path = tmp_path / name
    pcaplib.write(str(path), [pcaplib.eth_ipv4(0, n, i)
                              for i, n in enumerate(lens)], times, nano=True)
    return path


def departures(path):
    return [t for t, _ in pcaplib.read(str(path))[1]]


@pytest.mark.parametrize("args", [
    ["--netem", "rate 1000000"],
    ["--tbf", "rate 1000000 burst 1000 limit 100kb", "--bands", "1"],
])
def test_bare_rate_is_bits(tmp_path, args):
    """Issue 11.1: `rate 1000000` is 1 Mbit/s as in tc: 1000-byte frames
    leave 8.000 ms apart (we said 1.000 ms: bytes/s)."""
    inp = frames_at(tmp_path, [1000] * 6, [T0] * 6)
    out = tmp_path / "out.pcap"
    s = ok_run(inp, out, *args)
    assert s["out"] == 6
    t = departures(out)
    gaps = [b - a for a, b in zip(t[1:], t[2:])]
    assert gaps == [8 * MS] * 4, gaps


@LINK
def test_tbf_overhead_train(tmp_path):
    """Issue 11.2: 12 frames of 1000 B arriving together through `rate
    1mbit burst 10000 overhead 100`: the bucket holds 10100 B of time,
    a frame costs 1100 B; the 10th leaves 7.200 ms after the first, as
    the kernel's (we said 8.000 ms)."""
    inp = frames_at(tmp_path, [1000] * 12, [T0] * 12)
    out = tmp_path / "out.pcap"
    s = ok_run(inp, out, "--tbf", "rate 1mbit burst 10000 limit 1mb "
               "overhead 100", "--bands", "1")
    assert s["out"] == 12
    t = departures(out)
    assert t[9] - t[0] == 7200 * 1000, t[9] - t[0]
    assert t[10] - t[9] == 8800 * 1000


@pytest.mark.parametrize("conf", [
    "rate 1mbit burst 1514 limit 100kb overhead 24",
    "rate 1mbit burst 1600 limit 100kb linklayer atm",
    "rate 1mbit burst 1600 limit 100kb mpu 2000",
    "rate 1mbit burst 1514 limit 100kb peakrate 2mbit mtu 1514 overhead 4",
])
def test_tbf_oversize_raw_length(tmp_path, conf):
    """Issue 11.2: frames up to burst bytes pass whatever the overheads
    (the kernel compares the raw length with max_size)."""
    inp = frames_at(tmp_path, [999, 1200, 1500, 1514], [T0] * 4)
    s = ok_run(inp, tmp_path / "out.pcap", "--tbf", conf)
    assert s["out"] == 4 and s["drops"] == 0, s


@LINK
def test_duplicates_charged_to_rate(tmp_path):
    """Issue 11.4: `duplicate 100%` behind `tbf rate 10mbit`, saturated:
    the copies count against the rate, 10 Mbit/s leave (we sent 20)."""
    n = 4000
    # 1000-byte frames at 40 Mbit/s for 0.8 s
    inp = frames_at(tmp_path, [1000] * n, [T0 + i * 200_000
                                          for i in range(n)])
    out = tmp_path / "out.pcap"
    s = ok_run(inp, out, "--tbf", "rate 10mbit burst 10kb limit 20mb",
               "--netem", "duplicate 100%", "--bands", "1",
               "--ring-size", "8192", "--mbufs", "32768")
    assert s["duplicated"] == s["in"]
    _, pk = pcaplib.read(str(out))
    # after the first bucket, over the rest of the run
    t0, t1 = pk[40][0], pk[-1][0]
    bits = sum(len(f) for _, f in pk[41:]) * 8
    rate = bits * 1e9 / (t1 - t0)
    assert abs(rate / 10e6 - 1) < 0.005, rate


def test_serialisation_time_saturates(tmp_path):
    """Issue 15.9: `rate 8bit 2147483647 1 2147483647` means about 2^62 s
    per frame: it saturates (the frames never leave), it does not wrap to
    delays of 52 and 177 days."""
    inp = frames_at(tmp_path, [60, 1000], [T0, T0 + MS])
    out = tmp_path / "out.pcap"
    proc = run(inp, out, "--netem", "rate 8bit 2147483647 1 2147483647")
    assert proc.returncode == 0, proc.stderr
    assert departures(out) == [], departures(out)
    assert "2 packets could never leave" in proc.stdout, proc.stdout


# ---------------------------------------------------------------- streams

N = 3000
GAP = 200_000   # 0.2 ms between arrivals
BASE = {
    "loss": "loss 10%",
    "delay": "delay 10ms 5ms",
    "duplicate": "duplicate 10%",
    "corrupt": "corrupt 10%",
    "reorder": "delay 10ms reorder 25% gap 3",
}


def combine(a, b):
    """netem text with impairments a and b (one delay clause)."""
    parts = [BASE[a], BASE[b]]
    if "reorder" in (a, b) and "delay" in (a, b):
        return "delay 10ms 5ms reorder 25% gap 3"
    return " ".join(parts)


def expected(k):
    return pcaplib.eth_ipv4(0, 200, k)


def identify(frame):
    """(seq, flipped bit or None) of an output frame: the IP id and the
    payload both carry the sequence number, one bit flip cannot hit
    both."""
    cands = {pcaplib.seq_of(frame), int.from_bytes(frame[18:20], "big")}
    for k in cands:
        if k >= N:
            continue
        e = expected(k)
        if len(e) != len(frame):
            continue
        diff = [i for i in range(len(e)) if e[i] != frame[i]]
        if not diff:
            return k, None
        if len(diff) == 1:
            return k, (diff[0], e[diff[0]] ^ frame[diff[0]])
    raise AssertionError("unidentifiable frame")


def observe(tmp_path, conf, tag):
    """Per original: list of (delay ns, corruption) of its frames."""
    inp = tmp_path / "in.pcap"
    if not inp.exists():
        pcaplib.write(str(inp), [expected(k) for k in range(N)],
                      [T0 + k * GAP for k in range(N)], nano=True)
    out = tmp_path / ("out-%s.pcap" % tag)
    ok_run(inp, out, "--netem", conf + " seed 42", "--bands", "1")
    seen = {}
    for t, f in pcaplib.read(str(out))[1]:
        k, flip = identify(f)
        seen.setdefault(k, []).append((t - (T0 + k * GAP), flip))
    return seen


def check(a, alone, both):
    """Impairment a decided the same for every original in both runs,
    as far as the other impairment leaves it observable."""
    bad = 0
    for k in range(N):
        x, y = alone.get(k, []), both.get(k, [])
        if a == "loss":
            # kept alone -> kept (a copy may stand for a lost one)
            ok = (len(y) >= 1) if x else (len(y) <= 1)
        elif a == "duplicate":
            ok = (len(y) >= 1) if len(x) == 2 else (len(y) <= 1)
        elif a == "delay":
            ok = not y or x[0][0] in [d for d, _ in y] or \
                all(d == 0 for d, _ in y)
        elif a == "corrupt":
            ok = not y or x[0][1] in [c for _, c in y]
        else:   # reorder: sent at once, or delayed (a copy decides its own)
            ok = not y or (x[0][0] == 0) in [d == 0 for d, _ in y]
        bad += not ok
    return bad


@pytest.mark.parametrize("a,b", list(itertools.permutations(BASE, 2)))
def test_streams_independent(tmp_path, a, b):
    """Issue 11.5: switching impairment b on changes none of impairment
    a's decisions for any original packet (we changed thousands: a copy
    drew from the loss stream, a loss shifted every later delay)."""
    alone = observe(tmp_path, BASE[a], "a")
    both = observe(tmp_path, combine(a, b), "ab")
    assert len(alone) > N * 0.8
    bad = check(a, alone, both)
    assert bad == 0, "%d of %d originals changed their %s decision " \
        "when %s was switched on" % (bad, N, a, b)
