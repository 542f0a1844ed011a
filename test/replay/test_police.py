"""The policer (issue 28 item 3) in dpdk-shaper-replay: tc police's token
bucket in front of the queue. On the virtual clock the bucket's promise is
exact: what leaves in any interval [t1, t2] is at most rate x (t2 - t1) +
burst, the long run is the rate, and nothing the bucket passes waits for
it (it leaves when it arrived, or netem's delay later). The same packets
pass with netem after it, and a class's policer polices the class only."""
import os
import random
import subprocess
import sys

import pytest

import pcaplib
from test_classes import OTHER, frame
from conftest import LINK, REPLAY_BIN
from skips import kernel_lacks
from test_offline import T0, ok_run
from test_tc_kernel import netns  # noqa: F401  (the fixture)

MS = 10**6
RATE = 10_000_000 // 8          # police rate 10mbit, bytes per second
BURST = 10 * 1024               # burst 10kb
POLICE = "rate 10mbit burst 10kb"


def offered(n=20000, mbit=30, seed=7):
    """n frames of random sizes (60..1500 bytes) at `mbit` Mbit/s: frame
    i arrives when the frames before it would have taken at that rate."""
    rng = random.Random(seed)
    frames, at, t = [], [], 0
    for i in range(n):
        size = rng.randint(60, 1500)
        frames.append(pcaplib.eth_ipv4(0, size, i))
        at.append(t)
        t += size * 8 * 1000 // mbit
    return frames, at


def police_run(tmp_path, frames, at, *args):
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, [T0 + a for a in at], nano=True)
    s = ok_run(inp, out, *args)
    got = [(t - T0, f) for t, f in pcaplib.read(str(out))[1]]
    return s, got


def worst_excess(got, rate, burst):
    """max over i <= j of bytes(i..j) - rate x (t_j - t_i) - burst, in
    bytes, for departures got[] (times in ns): linear, from prefix sums
    (bytes(i..j) = S_j - S_(i-1))."""
    best = None           # max over i <= j of rate t_i - S_(i-1)
    s = 0
    worst = float("-inf")
    for t, f in got:
        cand = rate * t / 1e9 - s
        best = cand if best is None or cand > best else best
        s += len(f)
        worst = max(worst, s - rate * t / 1e9 + best - burst)
    return worst


@LINK
def test_police_bounds_every_interval(tmp_path):
    """30 Mbit/s offered to `police rate 10mbit burst 10kb`: no interval
    carries more than the bucket allows (exactly, in bytes), the long run
    is 10 Mbit/s within 0.5%, every passed frame leaves the instant it
    arrived, in order, and what did not pass is counted as `policed`."""
    frames, at = offered()
    s, got = police_run(tmp_path, frames, at, "--police", POLICE)
    assert s["conservation"][-1] == "ok", s
    assert s["in"] == len(frames)
    assert s["by_cause"]["policed"] == s["in"] - s["out"] > 0, s
    assert s["drops"] == s["by_cause"]["policed"], s
    assert worst_excess(got, RATE, BURST) <= 0
    seqs = [pcaplib.seq_of(f) for _, f in got]
    assert seqs == sorted(seqs)
    for t, f in got:
        assert t == at[pcaplib.seq_of(f)]
    span = at[-1] - at[0]
    out_bytes = sum(len(f) for _, f in got)
    assert abs((out_bytes - BURST) / (span / 1e9) / RATE - 1) < 0.005, \
        (out_bytes, span)
    # a slower bucket would have passed fewer: the bound is tight
    assert worst_excess(got, RATE * 0.99, BURST) > 0


def test_police_before_netem_passes_the_same(tmp_path):
    """With netem after it (delay 10ms), the policer passes exactly the
    frames it passes alone, each exactly 10 ms after it arrived; a lower
    load (5 Mbit/s, under the rate, bursts under the bucket) passes all."""
    frames, at = offered(n=8000)
    _, alone = police_run(tmp_path, frames, at, "--police", POLICE)
    s, got = police_run(tmp_path, frames, at, "--police", POLICE,
                        "--netem", "delay 10ms")
    assert [f for _, f in got] == [f for _, f in alone]
    for t, f in got:
        assert t == at[pcaplib.seq_of(f)] + 10 * MS
    assert s["by_cause"]["policed"] == len(frames) - len(got)
    frames, at = offered(n=4000, mbit=5)
    s, got = police_run(tmp_path, frames, at, "--police", POLICE)
    assert s["out"] == len(frames) and s["by_cause"]["policed"] == 0, s


def test_police_drop_keeps_the_bucket(tmp_path):
    """A frame the bucket does not cover leaves it as it was: after a
    1500-byte frame is refused, a 100-byte one at the same instant still
    passes (the kernel's act_police; a bucket charged on drop would
    refuse it). mtu: a frame over it never passes, whatever the tokens."""
    sizes = [1500] * 6 + [1500, 100]
    frames = [pcaplib.eth_ipv4(0, n, i) for i, n in enumerate(sizes)]
    s, got = police_run(tmp_path, frames, [0] * len(frames), "--police",
                        "rate 1mbit burst 8000b")
    # 5 x 1500 fit 8000 bytes, the 6th and 7th do not, the 100-byte does
    assert [pcaplib.seq_of(f) for _, f in got] == [0, 1, 2, 3, 4, 7], s
    assert s["by_cause"]["policed"] == 2
    frames = [pcaplib.eth_ipv4(0, n, i) for i, n in enumerate([1000, 200])]
    s, got = police_run(tmp_path, frames, [0, 10 * MS], "--police",
                        "rate 1mbit burst 8000b mtu 500")
    assert [pcaplib.seq_of(f) for _, f in got] == [1], s


@LINK
def test_class_police_polices_the_class_only(tmp_path):
    """--class-police: the class's traffic (10.1/16, 30 Mbit/s) is held to
    10 Mbit/s, in every interval, and counted as the class's `policed`;
    what matches no class passes untouched."""
    rng = random.Random(3)
    frames, at, t = [], [], 0
    for i in range(12000):
        size = rng.randint(60, 1500)
        cls = i % 2 == 0
        frames.append(frame((10, 1, 0, 7) if cls else OTHER, i, size))
        at.append(t)
        # the class alone offers about 30 Mbit/s
        t += size * 8 * 1000 // 60
    s, got = police_run(tmp_path, frames, at, "--class", "c",
                        "dst_ip 10.1.0.0/16", "--class-police", "c",
                        POLICE)
    assert s["conservation"][-1] == "ok", s
    mine = [(t, f) for t, f in got if tuple(f[30:34]) == (10, 1, 0, 7)]
    other = [(t, f) for t, f in got if tuple(f[30:34]) == OTHER]
    assert len(other) == len(frames) // 2
    span = at[-1] - at[0]
    mine_bytes = sum(len(f) for _, f in mine)
    assert abs((mine_bytes - BURST) / (span / 1e9) / RATE - 1) < 0.005, \
        (mine_bytes, span)
    assert s["by_cause"]["policed"] == len(frames) // 2 - len(mine)
    assert worst_excess(mine, RATE, BURST) <= 0
    for t, f in got:
        assert t == at[pcaplib.seq_of(f)]


# Frames sent in groups, each after a pause that fills the bucket
# (4000 bytes at 1 Mbit/s: 32 ms): within a group the kernel's bucket and
# ours decide alike as long as the sender's own pace adds less than every
# margin (>= 390 bytes here: 3 ms at 1 Mbit/s, a loaded sender's
# hiccup). Each group passes some, drops some, and passes a smaller frame
# after a drop (a drop leaves the bucket as it was).
KPOLICE = "rate 1mbit burst 4000b"
KGROUPS = [[1000, 1000, 1400, 1100, 150, 1000, 60, 900],
           [1500, 1500, 1500, 400, 1200, 100, 64, 1000]] * 5
KPAUSE_S = 0.06

KPROBE = r'''
import socket, sys, time
groups = [[int(x) for x in g.split(",")] for g in sys.argv[1].split(";")]
pause = float(sys.argv[3])
sys.path.insert(0, sys.argv[2])
import pcaplib
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
rx.bind(("vB", 0))
rx.settimeout(2)
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind(("vA", 0))
seq = 0
for g in groups:
    time.sleep(pause)
    for n in g:
        print("S", seq, time.monotonic_ns())   # the wall clock may step
        tx.send(pcaplib.eth_ipv4(0, n, seq))
        seq += 1
try:
    while True:
        data = rx.recv(4096)
        if len(data) >= 46 and data[6:12] == b"\x02\x00\x00\x00\x00\x01":
            print("R", pcaplib.seq_of(data))
except socket.timeout:
    pass
'''


def kgroups_expected():
    """What the margins make of each group, kernel or ours."""
    expect = []
    for gi, g in enumerate(KGROUPS):
        base = sum(len(x) for x in KGROUPS[:gi])
        expect += [base + i for i in ((0, 1, 2, 4, 6) if gi % 2 == 0 else
                                      (0, 1, 3, 5, 6))]
    return expect


def kgroups_run(tmp_path, at):
    lens = [n for g in KGROUPS for n in g]
    frames = [pcaplib.eth_ipv4(0, n, i) for i, n in enumerate(lens)]
    s, got = police_run(tmp_path, frames, at, "--police", KPOLICE)
    return sorted(pcaplib.seq_of(f) for _, f in got)


def test_police_groups_offline(tmp_path):
    """The kernel comparison's frames offline, 10 us apart within a group
    and KPAUSE_S between groups, and 300 us apart (a sender 30 times
    slower: the margins hold): the frames the margins name pass."""
    for step in (10_000, 300_000):
        at, t = [], 0
        for g in KGROUPS:
            t += int(KPAUSE_S * 1e9)
            for _ in g:
                at.append(t)
                t += step
        assert kgroups_run(tmp_path, at) == kgroups_expected(), step


def test_police_as_kernel(netns, tmp_path):
    """The kernel's act_police (a u32 filter on a veth's egress, in a
    private namespace) and ours pass the same frames, fed the times the
    frames reached the kernel."""
    ns = netns
    p = subprocess.run(["tc", "-n", ns, "qdisc", "add", "dev", "vA",
                        "clsact"], capture_output=True, text=True)
    if p.returncode != 0:
        kernel_lacks("the clsact qdisc: %s" % p.stderr.strip())
    try:
        p = subprocess.run(["tc", "-n", ns, "filter", "add", "dev", "vA",
                            "egress", "protocol", "all", "u32", "match",
                            "u32", "0", "0", "action", "police"] +
                           KPOLICE.split() + ["drop"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            kernel_lacks("cls_u32 or act_police (it cannot police): tc "
                         "says: %s" % " ".join(p.stderr.split()))
        out = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", KPROBE,
             ";".join(",".join(map(str, g)) for g in KGROUPS),
             os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
             str(KPAUSE_S)], capture_output=True, text=True, check=True,
            timeout=60).stdout
    finally:
        subprocess.run(["tc", "-n", ns, "qdisc", "del", "dev", "vA",
                        "clsact"])
    rows = [line.split() for line in out.splitlines()]
    sent = {int(r[1]): int(r[2]) for r in rows if r[0] == "S"}
    kernel_passed = sorted(int(r[1]) for r in rows if r[0] == "R")
    nb = sum(len(g) for g in KGROUPS)
    assert sorted(sent) == list(range(nb))
    ours_passed = kgroups_run(tmp_path,
                              [sent[i] - sent[0] for i in range(nb)])
    assert ours_passed == kgroups_expected(), (ours_passed, sent)
    assert kernel_passed == ours_passed, (kernel_passed, ours_passed)


def test_police_from_config_file(tmp_path):
    """`police =` in [port 0] and in a [class] section: the same frames
    pass as with --police and --class-police; --police overrides the
    file's, and `off` turns it off."""
    frames, at = offered(n=6000)
    _, want = police_run(tmp_path, frames, at, "--police", POLICE)
    ini = tmp_path / "p.ini"
    ini.write_text("[port 0]\npolice = %s\n" % POLICE)
    s, got = police_run(tmp_path, frames, at, "--config", str(ini))
    assert [f for _, f in got] == [f for _, f in want]
    s, got = police_run(tmp_path, frames, at, "--config", str(ini),
                        "--police", "off")
    assert s["out"] == len(frames) and s["by_cause"]["policed"] == 0
    ini.write_text("[class all]\nmatch = eth_type 0x0800\n"
                   "police = %s\n" % POLICE)
    s, got = police_run(tmp_path, frames, at, "--config", str(ini))
    assert [f for _, f in got] == [f for _, f in want]
    ini.write_text("[port 0]\npolice = %s limit 10kb\n" % POLICE)
    inp = tmp_path / "in.pcap"
    p = subprocess.run([REPLAY_BIN, str(inp), str(tmp_path / "x.pcap"),
                        "--config", str(ini)], capture_output=True,
                       text=True)
    assert p.returncode == 2, p
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "police" in err[0] and \
        "a policer holds no packets" in err[0], err
