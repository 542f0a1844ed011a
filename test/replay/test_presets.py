"""Every link preset offline (issue 61, docs/presets.md): each file of
config/presets runs in dpdk-shaper-replay with --preset NAME on short
generated captures, and what the output capture shows is what the file
says: the delay (exact where constant), the loss (within a binomial
bound) and, where the preset limits the rate, the rate of a saturated
link (within 0.5%)."""
import configparser
import math
import os
import re
import struct
import subprocess

import pytest

import pcaplib
from conftest import REPLAY_BIN, REPO

MS = 10**6
T0 = 1_700_000_000 * 10**9
PRESETS = os.path.join(REPO, "config", "presets")
NAMES = sorted(f[:-4] for f in os.listdir(PRESETS) if f.endswith(".ini"))
SEQ = 42   # where eth_ipv4 puts the sequence number


@pytest.fixture(scope="module", autouse=True)
def replay_built():
    if not os.path.exists(REPLAY_BIN):
        pytest.fail("%s is missing: build first (ninja -C build)"
                    % REPLAY_BIN)


def preset(name):
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                   interpolation=None)
    cp.read(os.path.join(PRESETS, name + ".ini"))
    assert cp.sections() == ["global"], name
    return dict(cp["global"])


def rate_of(text):
    """tbf's rate in bit/s, and its ATM overhead (None: Ethernet)."""
    m = re.search(r"rate ([\d.]+)(k|m|g)bit", text)
    r = float(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    atm = re.search(r"linklayer atm", text)
    ov = re.search(r"overhead (\d+)", text)
    return r, (int(ov.group(1)) if ov else 0) if atm else None


def netem_of(text):
    """(delay ns, jitter ns, loss probability) of a netem text."""
    def ns(w):
        v, u = re.match(r"([\d.]+)(us|ms|s)$", w).groups()
        return int(float(v) * {"us": 1e3, "ms": 1e6, "s": 1e9}[u])
    m = re.search(r"delay (\S+)(?: (\d\S*s))?", text)
    loss = re.search(r"loss ([\d.]+)%", text)
    return (ns(m.group(1)), ns(m.group(2)) if m.group(2) else 0,
            float(loss.group(1)) / 100 if loss else 0.0)


def trace_of(p):
    with open(os.path.join(PRESETS, p["trace"])) as f:
        return [int(x) for x in f if x.strip() and x[0].isdigit()]


def frames(n, length, gap_ns):
    base = bytearray(pcaplib.eth_ipv4(0, length, 0))
    out = []
    for i in range(n):
        base[SEQ:SEQ + 4] = struct.pack("!I", i)
        out.append(bytes(base))
    return out, [T0 + i * gap_ns for i in range(n)]


def replay(tmp_path, tag, fr, ts, name, *extra):
    inp, out = tmp_path / (tag + "-in.pcap"), tmp_path / (tag + "-out.pcap")
    pcaplib.write(str(inp), fr, ts, nano=True)
    p = subprocess.run([REPLAY_BIN, str(inp), str(out), "--preset", name] +
                       list(extra), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    _, got = pcaplib.read(str(out))
    return [(t, struct.unpack_from("!I", f, SEQ)[0], len(f))
            for t, f in got]


def light_rate(p):
    """bit/s a light load offers: a tenth of the link's."""
    if "tbf" in p:
        return rate_of(p["tbf"])[0] / 10
    if "trace" in p:
        tr = trace_of(p)
        return len(tr) * 1504 * 8 / (tr[-1] / 1000) / 10
    return 1e6


@pytest.mark.parametrize("name", NAMES)
def test_delay_and_loss(tmp_path, name):
    """A light load (a tenth of the rate, 100-byte frames): each frame's
    delay is the netem delay exactly (a trace: at least it, plus the wait
    for an opportunity), the mean and deviation where it has jitter; the
    frames lost are within 4.5 standard deviations of the loss asked."""
    p = preset(name)
    delay, jitter, loss = netem_of(p["netem"])
    n = 20000 if loss else 3000
    gap = int(100 * 8 / light_rate(p) * 1e9)
    fr, ts = frames(n, 100, gap)
    got = replay(tmp_path, "light", fr, ts, name, "--ring-size", "65536")
    seqs = [s for _, s, _ in got]
    assert len(set(seqs)) == len(seqs) <= n, name
    d = [t - ts[s] for t, s, _ in got]
    if "trace" in p:
        assert min(d) >= delay, (name, min(d))
        d.sort()
        assert d[len(d) // 2] <= delay + 5 * MS, (name, d[len(d) // 2])
    elif jitter:
        mean = sum(d) / len(d)
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / len(d))
        assert abs(mean - delay) <= 0.02 * delay, (name, mean)
        assert abs(sd - jitter) <= 0.10 * jitter, (name, sd)
        assert seqs == sorted(seqs), "reordered"   # inorder
    else:
        assert set(d) == {delay}, (name, min(d), max(d))
    lost = n - len(got)
    bound = 4.5 * math.sqrt(n * loss * (1 - loss)) + 1 if loss else 0
    assert abs(lost - n * loss) <= bound, (name, lost, n * loss)


RATED = [n for n in NAMES if "tbf" in preset(n) or "trace" in preset(n)]


@pytest.mark.parametrize("name", RATED)
def test_saturated_rate(tmp_path, name):
    """A saturating load, netem off (the command line wins over the
    preset) so that the rate stage alone is seen: a tbf's rate (of ATM
    cells where it says so) within 0.5% at steady state; a trace's
    opportunities, one 1504-byte frame each, within 0.5% of the count
    the file has in the window."""
    p = preset(name)
    if "tbf" in p:
        rate, atm = rate_of(p["tbf"])
        length = 1514
        wire = length if atm is None else \
            math.ceil((length + atm) / 48) * 53
        eth_rate = rate * length / wire
        n_out = 1500
        span = n_out * length * 8 / eth_rate
        n_in = int(n_out * 1.25)
        fr, ts = frames(n_in, length, int(span / n_out / 1.25 * 1e9))
        got = replay(tmp_path, "sat", fr, ts, name, "--netem", "off")
        t = sorted(x[0] for x in got)
        # steady state: past the bucket's first burst, before the end
        k0, k1 = len(t) // 5, len(t) * 4 // 5
        measured = (k1 - k0) * length * 8 / ((t[k1] - t[k0]) / 1e9)
        assert abs(measured / eth_rate - 1) <= 0.005, \
            (name, measured, eth_rate)
    else:
        tr = trace_of(p)
        mean = len(tr) * 1504 * 8 / (tr[-1] / 1000)
        # about 2000 opportunities, 0.5 to 2 s
        window_ms = int(min(2000, max(500, 2000 * 1504 * 8 / mean * 1000)))
        opps = sum(1 for x in tr if x <= window_ms)
        # above the window's busiest 100 ms, so the queue never empties
        peak = max(sum(1 for x in tr if s < x <= s + 100)
                   for s in range(0, window_ms, 50)) * 10 * 1504 * 8
        gap = int(1504 * 8 / (1.5 * peak) * 1e9)
        n_in = window_ms * MS // gap + 1
        fr, ts = frames(n_in, 1504, gap)
        got = replay(tmp_path, "sat", fr, ts, name, "--netem", "off")
        out = sum(1 for t, _, _ in got if t <= T0 + window_ms * MS)
        assert opps >= 1000, (name, opps)
        assert abs(out / opps - 1) <= 0.005, (name, out, opps)
