"""dpdk-shaper-replay: the stages applied to a capture on a virtual clock.

Every departure is checked against what the configuration says it must
be, to the nanosecond where the virtual clock makes that possible."""
import glob
import json
import os
import random
import re
import struct
import subprocess

import pytest

import pcaplib
from conftest import LINK, REPLAY_BIN, replay_args

MS = 10**6
T0 = 1_700_000_000 * 10**9   # a realistic epoch start, in ns


@pytest.fixture(scope="module", autouse=True)
def replay_built():
    if not os.path.exists(REPLAY_BIN):
        pytest.fail("%s is missing: build first (ninja -C build)"
                    % REPLAY_BIN)


def run(inp, out, *args, timeout=120):
    proc = subprocess.run([REPLAY_BIN, str(inp), str(out)] +
                          replay_args(args),
                          capture_output=True, text=True, timeout=timeout)
    return proc


def ok_run(inp, out, *args):
    proc = run(inp, out, *args)
    assert proc.returncode == 0, proc.stderr
    # the clock never had to guess (see docs/replay.md)
    assert "clock anomalies" not in proc.stdout, proc.stdout
    return summary(proc.stdout)


def summary(text):
    """The printed summary as a dict of numbers."""
    s = {}
    for key in ("in", "out"):
        m = re.search(r"^%s:\s+(\d+) packets, (\d+) bytes, "
                      r"(?:([\d.]+) Mbit/s|rate n/a .*)$" % key, text, re.M)
        assert m, text
        s[key], s[key + "_bytes"] = int(m.group(1)), int(m.group(2))
        s[key + "_mbit"] = float(m.group(3)) if m.group(3) else None
    m = re.search(r"^drops:\s+(\d+) \((.*)\)$", text, re.M)
    assert m, text
    s["drops"] = int(m.group(1))
    s["by_cause"] = {k: int(v) for k, v in
                     (c.split() for c in m.group(2).split(", "))}
    for key in ("duplicated", "corrupted", "reordered", "ecn_marked",
                "out_of_order"):
        m = re.search(r"^%s:\s+(\d+)$" % key, text, re.M)
        assert m, (key, text)
        s[key] = int(m.group(1))
    for key in ("delay", "queueing", "netem"):
        m = re.search(r"^%s:\s+min (\d+)\.(\d{6}) ms, mean (\d+)\.(\d{6}) ms, "
                      r"p50 (\d+)\.(\d{6}) ms, p99 (\d+)\.(\d{6}) ms, "
                      r"max (\d+)\.(\d{6}) ms" % key, text, re.M)
        if not m:
            continue
        g = [int(x) for x in m.groups()]
        v = [g[i] * MS + g[i + 1] for i in range(0, 10, 2)]
        pre = "" if key == "delay" else key + "_"
        for name, x in zip(("min", "mean", "p50", "p99", "max"), v):
            s[pre + name] = x
    m = re.search(r"^loss:\s+([\d.]+)%(?: \((.*)\))?$", text, re.M)
    assert m, text
    s["loss"] = float(m.group(1))
    s["loss_by_cause"] = {k: float(v.rstrip("%")) for k, v in
                          (c.split() for c in (m.group(2) or "").split(", ")
                           if c)}
    s["notes"] = re.findall(r"^note: (.*)$", text, re.M)
    m = re.search(r"^conservation: in (\d+) \+ duplicated (\d+) = out (\d+) "
                  r"\+ drops (\d+) \+ queued (\d+): (\w+)$", text, re.M)
    assert m, text
    s["conservation"] = m.groups()
    return s


def spaced(n, seed=1, lo=1, hi=50_000):
    """n increasing timestamps (ns) with irregular gaps, not on any grid."""
    rnd = random.Random(seed)
    t, out = T0, []
    for _ in range(n):
        t += rnd.randint(lo, hi)
        out.append(t)
    return out


def frames_mixed(n, seed=2):
    rnd = random.Random(seed)
    return [pcaplib.eth_ipv4(rnd.choice((0, 0x10, 0x08)),
                             rnd.randint(60, 1500), i) for i in range(n)]


def bit_diff(a, b):
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b))


def nearest_rank(sorted_v, pct):
    k = (len(sorted_v) * pct + 99) // 100
    return sorted_v[max(k, 1) - 1]


# ------------------------------------------------------------- delay

@pytest.mark.parametrize("nano", [True, False], ids=["ns-pcap", "us-pcap"])
def test_constant_delay_exact(tmp_path, nano):
    n = 3000
    frames = frames_mixed(n)
    ts = spaced(n)
    if not nano:
        ts = [t - t % 1000 + 1000 * i for i, t in enumerate(ts)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=nano)
    s = ok_run(inp, out, "--netem", "delay 10ms")
    linktype, got = pcaplib.read(str(out))
    assert linktype == pcaplib.LINKTYPE_ETHERNET
    with open(out, "rb") as f:   # nanosecond pcap magic
        assert struct.unpack("<I", f.read(4))[0] == pcaplib.MAGIC_NS
    # same packets, same order, each exactly 10 ms after its arrival
    assert [f for _, f in got] == frames
    assert [t for t, _ in got] == [t + 10 * MS for t in ts]
    assert s["in"] == s["out"] == n and s["drops"] == 0
    assert s["p50"] == s["p99"] == s["max"] == 10 * MS


def test_no_profile_passes_through(tmp_path):
    frames = frames_mixed(500)
    ts = spaced(500)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out)
    _, got = pcaplib.read(str(out))
    assert got == list(zip(ts, frames))
    assert s["max"] == 0


# ----------------------------------------------------- reproducibility

IMPAIR = "delay 10ms 3ms loss 5% duplicate 5% corrupt 5% reorder 10% gap 4"


def test_same_seed_byte_identical(tmp_path):
    n = 4000
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), frames_mixed(n), spaced(n), nano=True)
    tbf = "rate 20mbit burst 20kb limit 200kb"
    outs = []
    for i, args in enumerate([
            ["--netem", IMPAIR, "--tbf", tbf, "--seed", "42"],
            ["--netem", IMPAIR, "--tbf", tbf, "--seed", "42"],
            ["--netem", IMPAIR + " seed 42", "--tbf", tbf],
            ["--netem", IMPAIR, "--tbf", tbf, "--seed", "42",
             "--burst", "1"],
            ["--netem", IMPAIR, "--tbf", tbf, "--seed", "43"]]):
        out = tmp_path / ("out%d.pcap" % i)
        s = ok_run(inp, out, *args)
        assert s["by_cause"]["lost"] > 0 and s["duplicated"] > 0
        assert s["corrupted"] > 0 and s["reordered"] > 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]            # same input, same seed
    assert outs[0] == outs[2]            # --seed = netem's own seed
    assert outs[0] == outs[3]            # the burst size does not matter
    assert outs[0] != outs[4]            # another seed, another run


def test_corrupt_flips_exactly_one_bit(tmp_path):
    """With a constant delay each output maps to its input by time: every
    frame is unchanged or (when corrupted) differs in exactly one bit."""
    n = 3000
    frames = frames_mixed(n)
    frames[7] = pcaplib.eth_ipv4(0, 9000, 7)       # multi-segment mbufs
    frames[8] = pcaplib.eth_ipv4(0, 16000, 8)
    ts = spaced(n)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--netem",
               "delay 10ms corrupt 10% duplicate 10%", "--seed", "5")
    by_time = dict(zip(ts, frames))
    _, got = pcaplib.read(str(out))
    flipped, copies = 0, {}
    for t, f in got:
        orig = by_time[t - 10 * MS]
        assert len(f) == len(orig)
        d = bit_diff(f, orig)
        assert d in (0, 1)
        flipped += d
        copies[t] = copies.get(t, 0) + 1
    assert flipped == s["corrupted"] > 0
    assert max(copies.values()) <= 2
    assert sum(copies.values()) - len(copies) == s["duplicated"] > 0
    assert len(copies) == n


def test_corrupt_reaches_later_segments(tmp_path):
    frames = [pcaplib.eth_ipv4(0, 9000, i) for i in range(400)]
    ts = spaced(400)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--netem", "corrupt 100%")
    _, got = pcaplib.read(str(out))
    assert s["corrupted"] == 400
    where = []
    for (t, f), orig, t0 in zip(got, frames, ts):
        assert t == t0
        assert bit_diff(f, orig) == 1
        where.append(next(i for i in range(len(f)) if f[i] != orig[i]))
    assert max(where) > 4096      # beyond the first two 2 KB segments


# ---------------------------------------------------------------- tbf

@pytest.mark.parametrize("netem", [None, "delay 5ms"])
@LINK
def test_tbf_rate_exact(tmp_path, netem):
    """Frames far faster than the bucket: once the burst is spent, each
    departure follows the previous one by exactly its transmit time."""
    n = 1500
    rnd = random.Random(3)
    frames = [pcaplib.eth_ipv4(0x10, rnd.randint(64, 1514), i)
              for i in range(n)]
    ts = [T0 + 1000 * i for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    rate = 10 * 10**6 / 8            # bytes per second
    args = ["--tbf", "rate 10mbit burst 10kb limit 10mb",
            "--ring-size", "4096"]
    if netem:
        args += ["--netem", netem]
    s = ok_run(inp, out, *args)
    _, got = pcaplib.read(str(out))
    assert [f for _, f in got] == frames and s["drops"] == 0
    # the burst: 10 KB go at their arrival time
    burst, acc = 0, 0
    while acc + len(frames[burst]) <= 10240:
        acc += len(frames[burst])
        burst += 1
    shift = 5 * MS if netem else 0
    assert [t for t, _ in got[:burst]] == [t + shift for t in ts[:burst]]
    for i in range(burst + 1, n):
        want = len(frames[i]) * 1e9 / rate
        gap = got[i][0] - got[i - 1][0]
        assert abs(gap - want) <= max(1.0, want * 1e-3), (i, gap, want)
    # and over the whole run, the rate to 0.01%
    sent = sum(len(f) for f in frames[burst + 1:])
    span = got[-1][0] - got[burst][0]
    assert abs(sent * 1e9 / span - rate) / rate < 1e-4


# ---------------------------------------------------------------- slots

def slot_departures(due, interval, packets):
    """Departure of each packet (due times in queue order) under netem's
    slot rules (docs/netem.md), for a fixed slot interval: a slot is an
    instant at which up to `packets` due packets leave; when its budget is
    used up the next slot is `interval` after it; a packet that becomes due
    after the slot instant went by unused opens a slot `interval` after its
    due time."""
    out, nxt, left = [], None, 0
    for t in due:
        if nxt is None or nxt < t:
            nxt, left = t + interval, packets
        out.append(nxt)
        left -= 1
        if left == 0:
            nxt, left = nxt + interval, packets
    return out


@pytest.mark.parametrize("delay", [0, 3 * MS], ids=["slot", "delay+slot"])
def test_slot_departures_exact(tmp_path, delay):
    """Departures fall exactly on the slot instants the rules give (they
    used to be polled for on a 1 us grid), in bursts of at most N."""
    rnd = random.Random(11)
    ts, t = [], T0
    while len(ts) < 900:
        # bursts faster than the slots drain them, then idle gaps long
        # enough for slots to go by unused; nothing on a us grid
        for _ in range(rnd.randint(1, 12)):
            t += rnd.randint(1, 900_000)
            ts.append(t)
        t += rnd.choice((rnd.randint(1, 5 * MS), rnd.randint(20 * MS,
                                                               60 * MS)))
    frames = [pcaplib.eth_ipv4(0, rnd.randint(60, 1500), i)
              for i in range(len(ts))]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    netem = "slot 10ms 10ms packets 3"
    if delay:
        netem = "delay 3ms " + netem
    proc = run(inp, out, "--netem", netem)
    assert proc.returncode == 0, proc.stderr
    assert "note:" not in proc.stdout, proc.stdout   # no grid, no anomaly
    s = summary(proc.stdout)
    assert s["drops"] == 0 and s["out"] == len(ts)
    _, got = pcaplib.read(str(out))
    assert [f for _, f in got] == frames       # FIFO: constant delay
    want = slot_departures([a + delay for a in ts], 10 * MS, 3)
    assert [d for d, _ in got] == want
    # the rules were exercised: full slots, and slots opened by a packet
    assert max(want.count(w) for w in set(want)) == 3
    assert sum(1 for a, w in zip(ts, want) if w == a + delay + 10 * MS) > 10


@LINK
def test_priority_with_tbf(tmp_path):
    """Bands interleaved far above the rate: band 0 leaves before queued
    band 1, band 1 before band 2; the byte limit costs band 2."""
    n = 600
    frames, band = [], []
    for i in range(n):
        for tos, b in ((0x08, 2), (0x00, 1), (0x10, 0)):
            frames.append(pcaplib.eth_ipv4(tos, 1000, len(frames)))
            band.append(b)
    ts = [T0 + 1000 * i for i in range(len(frames))]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--tbf", "rate 10mbit burst 10kb limit 1500kb")
    _, got = pcaplib.read(str(out))
    band_of = {pcaplib.seq_of(f): b for f, b in zip(frames, band)}
    got_bands = [band_of[pcaplib.seq_of(f)] for _, f in got]
    # 10 frames fit the bucket and ~2 more go while the input lasts
    # (1.8 ms at 800 us per frame); after that strictly by band
    tail = got_bands[13:]
    assert tail == sorted(tail)
    assert got_bands.count(0) == n and got_bands.count(1) == n
    assert s["by_cause"]["tbf_limit"] > 0
    assert got_bands.count(2) == n - s["by_cause"]["tbf_limit"]
    assert s["drops"] == s["by_cause"]["tbf_limit"]


def test_bands_and_priomap_options(tmp_path):
    """--bands 1 puts everything in one FIFO: arrival order is kept even
    through the bucket."""
    frames = frames_mixed(300)
    ts = [T0 + 1000 * i for i in range(300)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    ok_run(inp, out, "--bands", "1", "--tbf",
           "rate 50mbit burst 10kb limit 10mb")
    assert [f for _, f in pcaplib.read(str(out))[1]] == frames
    # two bands, everything mapped to band 1 except priority 0 -> band 0
    ok_run(inp, out, "--bands", "2", "--priomap",
           "0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", "--tbf",
           "rate 50mbit burst 10kb limit 10mb")
    assert sorted(f for _, f in pcaplib.read(str(out))[1]) == sorted(frames)


def test_queue_own_bands_and_priomap(tmp_path):
    """pfifo_fast's own bands and priomap (issue 27 point 4) win over the
    --bands/--priomap aliases, whatever the order."""
    frames = frames_mixed(300)
    ts = [T0 + 1000 * i for i in range(300)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    tbf = ["--tbf", "rate 50mbit burst 10kb limit 10mb"]
    # one band of its own: one FIFO, arrival order kept
    ok_run(inp, out, "--bands", "3", "--queue", "pfifo_fast bands 1", *tbf)
    assert [f for _, f in pcaplib.read(str(out))[1]] == frames
    # one map of its own sending every priority to band 0: the same
    ok_run(inp, out, "--queue", "pfifo_fast priomap " + ",".join(["0"] * 16),
           *tbf)
    assert [f for _, f in pcaplib.read(str(out))[1]] == frames
    # three bands of its own over --bands 1: priority reorders
    stats = tmp_path / "s.json"
    ok_run(inp, out, "--queue", "pfifo_fast bands 3", "--bands", "1",
           "--stats-file", str(stats), *tbf)
    got = [f for _, f in pcaplib.read(str(out))[1]]
    assert got != frames and sorted(got) == sorted(frames)
    bands = json.loads(stats.read_text())["ports"]["0"]["bands"]
    assert len(bands) == 3 and all(b["enqueued"] > 0 for b in bands), bands
    # refused, one line, exit 2: the alias map past its own bands
    proc = run(inp, out, "--priomap", "0,1,2,0,1,2,0,1,2,0,1,2,0,1,2,0",
               "--queue", "pfifo_fast bands 2")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and \
        "own priomap" in proc.stderr, proc.stderr


def test_config_file_port0(tmp_path):
    frames = frames_mixed(200)
    ts = spaced(200)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    ini = tmp_path / "p.ini"
    ini.write_text("[global]\nbands = 3\n[port 0]\nnetem = delay 7ms\n"
                   "[port 1]\nnetem = delay 99ms\n")
    ok_run(inp, out, "--config", str(ini))
    assert [t for t, _ in pcaplib.read(str(out))[1]] == \
        [t + 7 * MS for t in ts]
    # the command line wins over the file
    ok_run(inp, out, "--config", str(ini), "--netem", "delay 2ms")
    assert [t for t, _ in pcaplib.read(str(out))[1]] == \
        [t + 2 * MS for t in ts]


# ------------------------------------------------------------ summary

def test_summary_and_conservation(tmp_path):
    n = 5000
    frames = frames_mixed(n)
    ts = spaced(n, hi=20_000)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    stats = tmp_path / "stats.json"
    proc = run(inp, out, "--netem",
               "delay 20ms 5ms loss 3% duplicate 4% reorder 20% gap 3",
               "--tbf", "rate 100mbit burst 30kb limit 100kb",
               "--seed", "9", "--stats-file", str(stats))
    assert proc.returncode == 0, proc.stderr
    s = summary(proc.stdout)
    _, got = pcaplib.read(str(out))
    assert s["in"] == n and s["in_bytes"] == sum(len(f) for f in frames)
    assert s["out"] == len(got)
    assert s["out_bytes"] == sum(len(f) for _, f in got)
    assert s["drops"] == sum(s["by_cause"].values())
    # every registered cause, the same as the stats file's (a new kind
    # adds its own: no list of them here)
    with open(stats) as f:
        drops = json.load(f)["ports"]["0"]["drops"]
    assert s["by_cause"] == drops
    assert set(s["by_cause"]) >= {"band_full", "no_mbuf", "tbf_oversize",
                                  "tbf_limit", "netem_limit", "lost",
                                  "flushed", "overload", "inbox_full",
                                  "link_down", "codel", "fq_overlimit"}
    assert s["by_cause"]["lost"] > 0 and s["duplicated"] > 0
    assert s["reordered"] > 0 and s["out_of_order"] > 0
    assert s["in"] + s["duplicated"] == s["out"] + s["drops"]
    assert s["conservation"][4:] == ("0", "ok")
    # delay statistics from the files themselves (no corruption: the
    # sequence number identifies a frame)
    arr = {pcaplib.seq_of(f): t for f, t in zip(frames, ts)}
    d = sorted(t - arr[pcaplib.seq_of(f)] for t, f in got)
    assert s["p50"] == nearest_rank(d, 50)
    assert s["p99"] == nearest_rank(d, 99)
    assert s["max"] == d[-1]
    assert d[0] >= 15 * MS - 1 or s["reordered"] > 0


def test_departures_never_before_arrival(tmp_path):
    n = 2000
    frames = frames_mixed(n)
    ts = spaced(n)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    ok_run(inp, out, "--netem", "delay 1ms 5ms distribution normal",
           "--tbf", "rate 50mbit burst 5kb peakrate 100mbit mtu 1600 "
           "limit 50kb")
    arr = {pcaplib.seq_of(f): t for f, t in zip(frames, ts)}
    _, got = pcaplib.read(str(out))
    times = [t for t, _ in got]
    assert times == sorted(times)
    assert all(t >= arr[pcaplib.seq_of(f)] for t, f in got)


# -------------------------------------------------------------- pcapng

def write_pcapng(path, frames, ts_ns, nano=True):
    def block(btype, body):
        body += b"\0" * (-len(body) % 4)
        ln = 12 + len(body)
        return struct.pack("<II", btype, ln) + body + struct.pack("<I", ln)
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    opts = b""
    if nano:   # if_tsresol = 10^-9
        opts = struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0)
    out += block(1, struct.pack("<HHI", 1, 0, 65535) + opts)
    for f, t in zip(frames, ts_ns):
        v = t if nano else t // 1000
        out += block(6, struct.pack("<IIIII", 0, v >> 32, v & 0xffffffff,
                                    len(f), len(f)) + f)
    with open(path, "wb") as fh:
        fh.write(out)


@pytest.mark.parametrize("nano", [True, False], ids=["ns", "us"])
def test_pcapng_input(tmp_path, nano):
    n = 500
    frames = frames_mixed(n)
    ts = spaced(n)
    if not nano:
        ts = [t - t % 1000 + 1000 * i for i, t in enumerate(ts)]
    ng, pc = tmp_path / "in.pcapng", tmp_path / "in.pcap"
    write_pcapng(str(ng), frames, ts, nano)
    pcaplib.write(str(pc), frames, ts, nano=True)
    args = ["--netem", "delay 3ms 1ms loss 2%", "--seed", "1"]
    ok_run(ng, tmp_path / "a.pcap", *args)
    ok_run(pc, tmp_path / "b.pcap", *args)
    a = (tmp_path / "a.pcap").read_bytes()
    assert a == (tmp_path / "b.pcap").read_bytes()
    assert len(pcaplib.read(str(tmp_path / "a.pcap"))[1]) > n * 0.9


# -------------------------------------------------------------- errors

def _bad_inputs(tmp_path):
    good = tmp_path / "good.pcap"
    frames = frames_mixed(50)
    pcaplib.write(str(good), frames, spaced(50), nano=True)
    data = good.read_bytes()
    cases = {}
    cases["missing"] = (tmp_path / "nope.pcap", [], "nope.pcap")
    (tmp_path / "empty.pcap").write_bytes(b"")
    cases["zero-byte"] = (tmp_path / "empty.pcap", [], "empty")
    (tmp_path / "cut.pcap").write_bytes(data[:len(data) - 7])
    cases["truncated-record"] = (tmp_path / "cut.pcap", [], "broken after")
    (tmp_path / "hdr.pcap").write_bytes(data[:10])
    cases["truncated-header"] = (tmp_path / "hdr.pcap", [], "truncated")
    (tmp_path / "junk.pcap").write_bytes(b"hello, this is not a capture\n"
                                         * 10)
    cases["not-a-capture"] = (tmp_path / "junk.pcap", [], "not a readable")
    pcaplib.write(str(tmp_path / "raw.pcap"), [b"\x45" + bytes(40)] * 3,
                  linktype=101)
    cases["non-ethernet"] = (tmp_path / "raw.pcap", [], "not Ethernet")
    write_pcapng(str(tmp_path / "cut.pcapng"), frames, spaced(50))
    ng = (tmp_path / "cut.pcapng").read_bytes()
    (tmp_path / "cut.pcapng").write_bytes(ng[:len(ng) - 30])
    cases["truncated-pcapng"] = (tmp_path / "cut.pcapng", [], "broken")
    # (a bare delay is nanoseconds, as tc's)
    cases["delay-bad-unit"] = (good, ["--netem", "delay 10m"], "unit")
    cases["tbf-no-burst"] = (good, ["--tbf", "rate 1mbit"], "burst")
    cases["bands-0"] = (good, ["--bands", "0"], "--bands")
    cases["unknown-option"] = (good, ["--bogus"], "unknown option")
    cases["priomap"] = (good, ["--priomap", "0,1,5"], "priomap")
    cases["missing-value"] = (good, ["--netem"], "needs a value")
    cases["missing-config"] = (good, ["--config", str(tmp_path / "x.ini")],
                               "--config")
    return cases


CASES = ["missing", "zero-byte", "truncated-record", "truncated-header",
         "not-a-capture", "non-ethernet", "truncated-pcapng",
         "delay-bad-unit", "tbf-no-burst", "bands-0", "unknown-option",
         "priomap", "missing-value", "missing-config"]


@pytest.mark.parametrize("case", CASES)
def test_errors(tmp_path, case):
    inp, args, word = _bad_inputs(tmp_path)[case]
    out = tmp_path / "out.pcap"
    proc = run(inp, out, *args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("dpdk-shaper-replay: ")
    assert word in lines[0], lines[0]
    assert proc.stdout == ""
    assert not out.exists()
    assert glob.glob(str(tmp_path / "out.pcap*")) == []


def test_error_keeps_existing_output(tmp_path):
    (tmp_path / "cut.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(30))
    out = tmp_path / "out.pcap"
    out.write_bytes(b"previous")
    proc = run(tmp_path / "cut.pcap", out)
    assert proc.returncode == 2
    assert out.read_bytes() == b"previous"


def test_usage_errors(tmp_path):
    proc = subprocess.run([REPLAY_BIN], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([REPLAY_BIN, "--help"], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 0 and "--netem" in proc.stdout


# ------------------------------------------------------------ pool size

@LINK
def test_pool_holds_what_the_queue_holds(tmp_path):
    """The pool is sized from what each stage kind says it can hold: a
    30000-packet fq_codel (above the 3 x 1024 bands and the delay reserve
    the pool was sized from before) fills without running the input out
    of mbufs; a smaller --mbufs says so in one warning line."""
    n = 30000
    frames = [pcaplib.eth_ipv4(0, 64, i) for i in range(n)]
    ts = [T0 + i * 100 for i in range(n)]          # all within 3 ms
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    prof = ["--queue", "fq_codel limit 30000 memory_limit 1gb",
            "--tbf", "rate 10mbit burst 10kb limit 1mb"]
    proc = run(inp, out, *prof)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr
    s = summary(proc.stdout)
    # 10 Mbit/s drains a 64-byte frame in 51.2 us: the queue held all but
    # the few that left while the 3 ms burst came in
    assert s["by_cause"]["no_mbuf"] == 0, s["by_cause"]
    assert s["by_cause"]["fq_overlimit"] == 0, s["by_cause"]
    assert s["in"] == n and s["in"] == s["out"] + s["drops"]
    # --mbufs below what the chain holds: one warning, not an error
    proc = run(inp, out, *prof, "--mbufs", "8192")
    assert proc.returncode == 0, proc.stderr
    warn = [l for l in proc.stderr.splitlines() if "warning" in l]
    assert len(warn) == 1 and "--mbufs 8192 is below" in warn[0], \
        proc.stderr
    assert summary(proc.stdout)["by_cause"]["no_mbuf"] > 0


# ------------------------------------------------- deterministic loss

def det_lost(netem, n):
    """The originals 0..n-1 that a deterministic loss word loses, from
    issue 28's formulas (computed here with divisions, independently of
    the stage's running remainder)."""
    w = netem.split()
    if w[1] == "pattern":
        N, M = int(w[2]), int(w[3])
        return {k for k in range(n) if (k + 1) * N // M > k * N // M}
    if w[1] == "burst":
        L, P = int(w[2]), int(w[3])
        return {k for k in range(n) if k % P >= P - L}
    bits = w[2]
    return {k for k in range(n) if bits[k % len(bits)] == "1"}


DET_LOSS = ["loss pattern 1 4", "loss pattern 2 5", "loss burst 3 10",
            "loss sequence 0010110"]


@pytest.mark.parametrize("loss", DET_LOSS)
def test_deterministic_loss_exact(tmp_path, loss):
    """Issue 28 item 1: over 10,000 originals exactly the originals the
    formula names are lost; with duplicate 50% (a lost original's copy
    goes with it) and with delay 10ms 5ms the same ones; the output is
    the same byte for byte run after run and whatever the seed (nothing
    in it is random)."""
    n = 10_000
    frames = [pcaplib.eth_ipv4(0, 64 + i % 200, i) for i in range(n)]
    ts = spaced(n, seed=5, hi=20_000)
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    lost = det_lost(loss, n)
    kept = [k for k in range(n) if k not in lost]
    assert 0 < len(lost) < n
    if loss == "loss pattern 1 4":    # the example
        assert sorted(lost)[:3] == [3, 7, 11]

    out = tmp_path / "plain.pcap"
    s = ok_run(inp, out, "--netem", loss)
    _, got = pcaplib.read(str(out))
    assert [pcaplib.seq_of(f) for _, f in got] == kept
    assert [f for _, f in got] == [frames[k] for k in kept]
    assert [t for t, _ in got] == [ts[k] for k in kept]
    assert s["by_cause"]["lost"] == len(lost) and s["drops"] == len(lost)
    assert s["conservation"][-1] == "ok"
    plain = out.read_bytes()
    for i, seed in enumerate(("1", "2")):
        o = tmp_path / ("seed%d.pcap" % i)
        ok_run(inp, o, "--netem", loss, "--seed", seed)
        assert o.read_bytes() == plain

    out = tmp_path / "dup.pcap"
    s = ok_run(inp, out, "--netem", loss + " duplicate 50%")
    _, got = pcaplib.read(str(out))
    seqs = [pcaplib.seq_of(f) for _, f in got]
    assert sorted(set(seqs)) == kept
    assert s["duplicated"] > 0.4 * n
    counts = {}
    for k in seqs:
        counts[k] = counts.get(k, 0) + 1
    assert max(counts.values()) == 2
    # every copy made left; the copies of lost originals are lost too
    copies_out = len(seqs) - len(kept)
    assert s["by_cause"]["lost"] == len(lost) + (s["duplicated"] -
                                                 copies_out)
    assert s["conservation"][-1] == "ok"
    again = tmp_path / "dup2.pcap"
    ok_run(inp, again, "--netem", loss + " duplicate 50%")
    assert again.read_bytes() == out.read_bytes()

    out = tmp_path / "jitter.pcap"
    s = ok_run(inp, out, "--netem", "delay 10ms 5ms " + loss)
    _, got = pcaplib.read(str(out))
    seqs = [pcaplib.seq_of(f) for _, f in got]
    assert sorted(seqs) == kept
    assert seqs != kept                  # the jitter did reorder them
    assert s["by_cause"]["lost"] == len(lost)
    again = tmp_path / "jitter2.pcap"
    ok_run(inp, again, "--netem", "delay 10ms 5ms " + loss)
    assert again.read_bytes() == out.read_bytes()


@LINK
def test_deterministic_loss_with_ecn(tmp_path):
    """`ecn` with a deterministic loss: the originals the pattern names
    are marked CE instead when ECN-capable, lost when not."""
    n = 1000
    frames = [pcaplib.eth_ipv4(0x02 if i % 2 else 0, 100, i)
              for i in range(n)]
    ts = spaced(n, seed=6)
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--netem", "loss pattern 1 4 ecn")
    _, got = pcaplib.read(str(out))
    named = det_lost("loss pattern 1 4", n)   # 3, 7, 11: all odd: ECT(0)
    assert all(k % 2 for k in named)
    assert s["ecn_marked"] == len(named) and s["drops"] == 0
    ce = {pcaplib.seq_of(f) for _, f in got if pcaplib.tos_of(f) & 3 == 3}
    assert ce == named


# ---------------------------------------------------------- accumulate

def accumulated(t, t0, w):
    """Issue 28 item 2: t0 + ceil((t - t0) / w) * w."""
    return t0 + -(-(t - t0) // w) * w


def bursty(n, seed):
    """Arrivals in bursts faster than 10 Mbit/s of small frames, then
    idle gaps of up to 30 ms; nothing on a us grid."""
    rnd = random.Random(seed)
    ts, t = [], T0
    while len(ts) < n:
        for _ in range(rnd.randint(1, 40)):
            t += rnd.randint(1, 300_000)
            ts.append(t)
        t += rnd.randint(1, 30 * MS)
    return ts[:n]


def test_accumulate_departures_exact(tmp_path):
    """`delay 10ms accumulate 5ms`: each packet leaves at the end of the
    5 ms window (counted from the first arrival) its 10 ms delay ends in,
    in arrival order."""
    n = 5000
    ts = bursty(n, 21)
    frames = [pcaplib.eth_ipv4(0, 64 + i % 1400, i) for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--netem", "delay 10ms accumulate 5ms")
    _, got = pcaplib.read(str(out))
    assert [f for _, f in got] == frames and s["drops"] == 0
    want = [accumulated(a + 10 * MS, ts[0], 5 * MS) for a in ts]
    assert [d for d, _ in got] == want
    # the windows did gather packets, and the first packet's is t0 + 10ms
    assert want[0] == ts[0] + 10 * MS
    assert len(set(want)) < n / 4
    assert all((d - ts[0]) % (5 * MS) == 0 for d in want)


def test_accumulate_with_rate_exact(tmp_path):
    """With `rate 10mbit` the serialisation is computed on the times
    before rounding (each packet after the previous one's unrounded
    departure), then each departure is rounded to its window's end."""
    n = 5000
    rnd = random.Random(22)
    ts = bursty(n, 23)
    frames = [pcaplib.eth_ipv4(0, rnd.randint(64, 1500), i)
              for i in range(n)]
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = ok_run(inp, out, "--netem", "delay 10ms rate 10mbit accumulate 5ms")
    _, got = pcaplib.read(str(out))
    assert [f for _, f in got] == frames and s["drops"] == 0
    # 10 Mbit/s = 1.25e6 B/s: 800 ns a byte
    want, last, queued = [], None, 0
    for a, f in zip(ts, frames):
        u = a + 10 * MS
        if last is not None and last > u:
            u = last
            queued += 1
        u += len(f) * 800
        last = u
        want.append(accumulated(u, ts[0], 5 * MS))
    assert queued > n / 10          # the rate did hold packets back
    assert [d for d, _ in got] == want
    # not the same as rounding the rate's departures computed from
    # rounded times
    assert len(set(want)) < n / 2
