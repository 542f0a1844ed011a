"""scripts/shaper-plot on the input and output of dpdk-shaper-replay: the
packets it matches, drops and delays are the replay's own, and the PNG
holds four non-empty panels."""
import importlib.machinery
import importlib.util
import os
import re
import struct
import subprocess

import pytest

import pcaplib
from conftest import REPLAY_BIN, REPO
from test_offline import MS, T0, summary, write_pcapng

PLOT = os.path.join(REPO, "scripts", "shaper-plot")
PY = "/usr/bin/python3"


def load_plot():
    loader = importlib.machinery.SourceFileLoader("shaper_plot", PLOT)
    spec = importlib.util.spec_from_loader("shaper_plot", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mpl():
    try:
        import matplotlib
    except ImportError:
        pytest.fail("python3-matplotlib missing: scripts/deps.sh --test")
    matplotlib.use("Agg")
    import matplotlib.image
    return matplotlib


def capture(path, n=1500, tos=0, nano=True):
    """n 600-byte frames: 1 s at 4 Mbit/s, then twice as fast; every
    other frame has TOS tos."""
    frames, ts, t = [], [], T0
    for i in range(n):
        frames.append(pcaplib.eth_ipv4(0 if i % 2 else tos, 600, i))
        ts.append(t)
        t += 1_200_000 if i < n // 2 else 600_000
    pcaplib.write(str(path), frames, ts, nano=nano)
    return frames, ts


def replay(inp, out, *args):
    p = subprocess.run([REPLAY_BIN, str(inp), str(out)] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return summary(p.stdout)


def plot_cli(*args):
    p = subprocess.run([PY, PLOT] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=120)
    return p


def plot_line(text):
    m = re.search(r"in (\d+), out (\d+) \(duplicates (\d+), "
                  r"corrupted/marked (\d+), unmatched (\d+)\), dropped (\d+); "
                  r"delay p50 (\d+)\.(\d{6}) ms p99 (\d+)\.(\d{6}) ms "
                  r"max (\d+)\.(\d{6}) ms", text)
    assert m, text
    g = [int(x) for x in m.groups()]
    return {"in": g[0], "out": g[1], "dup": g[2],
            "modified": g[3], "unmatched": g[4], "dropped": g[5],
            "p50": g[6] * MS + g[7], "p99": g[8] * MS + g[9],
            "max": g[10] * MS + g[11]}


CASES = {
    # the bucket's queue overflows in the second half; jitter, loss,
    # duplicates and one-bit corruption on top
    "tbf+netem": (0, ["--tbf", "rate 5mbit burst 10kb limit 60kb",
                      "--netem", "delay 20ms 5ms loss 2% duplicate 3% "
                      "corrupt 3%", "--seed", "5"]),
    # ECT(0) frames: netem marks CE instead of losing them
    "ecn": (0x02, ["--netem", "delay 5ms loss 10% ecn", "--seed", "3"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_plot_matches_replay(tmp_path, mpl, case):
    tos, args = CASES[case]
    inp, out, png = tmp_path / "in.pcap", tmp_path / "out.pcap", \
        tmp_path / "p.png"
    capture(inp, tos=tos)
    s = replay(inp, out, *args)
    p = plot_cli(inp, out, "-o", png, "--title", "run " + case)
    assert p.returncode == 0, p.stderr
    got = plot_line(p.stdout)

    # every output packet traced back to its input, each modification
    # and copy recognised, the drops and the delay statistics the same as
    # the replay's own accounting
    assert got["in"] == s["in"] and got["out"] == s["out"]
    assert got["unmatched"] == 0
    assert got["modified"] == s["corrupted"] + s["ecn_marked"]
    assert got["modified"] > 0 and got["dropped"] > 0
    # a packet is dropped when no copy of it left; a duplicated packet
    # that lost one of its two copies looks like neither in the captures
    assert got["in"] == got["out"] - got["dup"] + got["dropped"]
    hidden = s["duplicated"] - got["dup"]
    assert 0 <= hidden <= s["by_cause"]["lost"] + s["by_cause"]["tbf_limit"]
    assert got["dropped"] == s["drops"] - hidden
    assert (got["p50"], got["p99"], got["max"]) == \
        (s["p50"], s["p99"], s["max"])

    # the picture: the figure's size, and not blank
    img = mpl.image.imread(str(png))
    assert img.shape[:2] == (750, 1100), img.shape
    rgb = img[:, :, :3]
    assert rgb.var() > 0.01
    # the drops panel (bottom right) has red bars: some pixels of it are
    # pure matplotlib tab:red
    red = ((abs(rgb[375:, 550:, 0] - 0xd6 / 255) < 0.02) &
           (abs(rgb[375:, 550:, 1] - 0x27 / 255) < 0.02) &
           (abs(rgb[375:, 550:, 2] - 0x28 / 255) < 0.02))
    assert red.sum() > 50


def test_ecn_through_tags(tmp_path, mpl):
    """ECT(0) frames behind four VLAN tags (0x9200 outermost, then the
    other TPIDs): netem marks them instead of losing them (its ECN path
    walks the same tags as classify), and the plot still pairs each marked
    frame with its original."""
    tags = b"".join(struct.pack("!HH", tpid, 5 << 13 | 100 + i)
                    for i, tpid in enumerate((0x9200, 0x88a8, 0x9100,
                                              0x8100)))
    frames, ts, t = [], [], T0
    for i in range(600):
        f = pcaplib.eth_ipv4(0xb8 | 2, 600, i)
        frames.append(f[:12] + tags + f[12:])
        ts.append(t)
        t += 1_200_000
    inp, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(inp), frames, ts, nano=True)
    s = replay(inp, out, "--netem", "delay 5ms loss 10% ecn", "--seed", "3")
    assert s["ecn_marked"] > 30, s
    assert s["by_cause"]["lost"] == 0, s
    p = plot_cli(inp, out, "-o", tmp_path / "p.png")
    assert p.returncode == 0, p.stderr
    got = plot_line(p.stdout)
    assert got["out"] == 600 and got["unmatched"] == 0, got
    assert got["modified"] == s["ecn_marked"], (got, s)


def test_four_panels_drawn(tmp_path, mpl):
    """The figure holds exactly the four axes, each with data on it."""
    mod = load_plot()
    inp, out, png = tmp_path / "in.pcap", tmp_path / "out.pcap", \
        tmp_path / "p.png"
    capture(inp)
    replay(inp, out, "--tbf", "rate 5mbit burst 10kb limit 60kb",
           "--netem", "delay 10ms 2ms loss 1%", "--seed", "1")
    a_in, a_out = mod.read_capture(str(inp)), mod.read_capture(str(out))
    drawn = mod.plot(a_in, a_out, mod.analyse(a_in, a_out), str(png), "t")
    titles = [t for t, _ in drawn]
    assert len(drawn) == 4, drawn
    assert titles[0] == "delay over time"
    assert titles[1].startswith("delay CDF")
    assert titles[2] == "throughput"
    assert titles[3].startswith("drops: ")
    assert all(n > 0 for _, n in drawn), drawn


def test_pcapng_and_us_pcap_read_alike(tmp_path):
    """The reader gives the same packets from pcap (us, ns) and pcapng."""
    mod = load_plot()
    frames, ts = capture(tmp_path / "a.pcap")
    ts = [t - t % 1000 for t in ts]
    pcaplib.write(str(tmp_path / "us.pcap"), frames, ts, nano=False)
    write_pcapng(str(tmp_path / "ns.pcapng"), frames, ts, nano=True)
    write_pcapng(str(tmp_path / "us.pcapng"), frames, ts, nano=False)
    want = list(zip(ts, frames))
    for name in ("us.pcap", "ns.pcapng", "us.pcapng"):
        assert mod.read_capture(str(tmp_path / name)) == want, name


def test_delay_from_one_clock_and_from_two(tmp_path, mpl):
    """A constant delay reads as itself when both captures share a clock,
    and above the minimum (0) when the output clock is far off (a live
    capture), unless --clock-offset says by how much."""
    mod = load_plot()
    frames, ts = capture(tmp_path / "in.pcap", n=200)
    inp = list(zip(ts, frames))
    out = [(t + 7 * MS, f) for t, f in inp]
    a = mod.analyse(inp, out)
    assert set(a["delay_ms"]) == {7.0} and a["note"] is None
    for skew in (3600 * 10**9, -3600 * 10**9):   # ahead, behind
        far = [(t + skew, f) for t, f in out]
        a = mod.analyse(inp, far)
        assert set(a["delay_ms"]) == {0.0}, skew
        assert "different clocks" in a["note"] and a["lost"] == []
        # departure times on the input's time line
        assert a["dep_s"][0] == (ts[0] - a["t0"]) / 1e9 == 0
        a = mod.analyse(inp, far, clock_offset_ns=skew)
        assert set(a["delay_ms"]) == {7.0} and a["lost"] == []


def test_errors(tmp_path):
    (tmp_path / "bad.pcap").write_bytes(b"not a capture at all")
    capture(tmp_path / "in.pcap", n=10)
    cut = (tmp_path / "in.pcap").read_bytes()
    (tmp_path / "cut.pcap").write_bytes(cut[:-7])
    for inp, msg in (("missing.pcap", "No such file"),
                     ("bad.pcap", "not a pcap or pcapng"),
                     ("cut.pcap", "truncated after 9 packets")):
        p = plot_cli(tmp_path / inp, tmp_path / "in.pcap", "-o",
                     tmp_path / "x.png")
        assert p.returncode == 2, (inp, p.stdout, p.stderr)
        assert msg in p.stderr and p.stderr.count("\n") == 1, p.stderr
        assert not (tmp_path / "x.png").exists()
