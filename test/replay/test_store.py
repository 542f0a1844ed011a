"""netem's byte store (issue 25) in the offline tool: frames up to the
threshold wait as bytes and leave in fresh mbufs, which must change
nothing a capture shows. The same capture through the same profile with
`store off` (every frame keeps its mbuf, as before the store) and with
the default store gives byte-identical output files and the same
summary, and so does `store 256 after 0` (every frame stored that may
be: the default keeps a shallow line in mbufs). The capture mixes 64 B,
256 B (the default threshold), 257 B (one over) and 1500 B frames."""
import hashlib
import json
import os
import random
import re
import subprocess

import pytest

import pcaplib
from conftest import REPLAY_BIN

T0 = 1_700_000_000 * 10**9


@pytest.fixture(scope="module", autouse=True)
def replay_built():
    if not os.path.exists(REPLAY_BIN):
        pytest.fail("%s is missing: build first (ninja -C build)"
                    % REPLAY_BIN)


def capture(path, n, seed, gap_ns):
    rnd = random.Random(seed)
    sizes = (64, 256, 257, 1500)
    frames, ts, t = [], [], T0
    for i in range(n):
        frames.append(pcaplib.eth_ipv4(i % 4 * 8, rnd.choice(sizes), i))
        ts.append(t)
        t += int(rnd.expovariate(1.0 / gap_ns))
    pcaplib.write(str(path), frames, ts, nano=True)
    return frames


def replay(inp, out, netem, *args):
    proc = subprocess.run([REPLAY_BIN, str(inp), str(out), "--netem", netem,
                           "--seed", "5"] + list(args),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def lines_without_profile(text, out):
    """The summary, less the line that echoes the profile's text, with
    the output's name as OUT."""
    return [l.replace(str(out), "OUT") for l in text.splitlines()
            if not l.startswith("profile:")]


@pytest.mark.parametrize("netem,args", [
    ("delay 10ms 5ms", []),
    ("delay 10ms 5ms reorder 10% gap 5 duplicate 3% corrupt 2% loss 1%",
     []),
    ("delay 10ms 5ms", ["--tbf", "rate 1gbit burst 30kb limit 300kb"]),
    ("delay 2ms 1ms rate 2gbit", []),
    # over its rate: a queue that reaches a limit given (tc's, every
    # packet stored or not)
    ("delay 2ms 1ms rate 300mbit limit 3000", []),
])
def test_store_is_invisible(tmp_path, netem, args):
    inp = tmp_path / "in.pcap"
    frames = capture(inp, 30000, 11, 3000)
    off, on = tmp_path / "off.pcap", tmp_path / "on.pcap"
    dflt = tmp_path / "default.pcap"
    s_off = replay(inp, off, netem + " store off", "--stats-file",
                   str(tmp_path / "off.json"), *args)
    # every frame it may stored (after 0), and the default (stored past
    # the first thousands waiting in mbufs: here, few or none)
    s_on = replay(inp, on, netem + " store 256 after 0", "--stats-file",
                  str(tmp_path / "on.json"), *args)
    s_dflt = replay(inp, dflt, netem, *args)
    # the store held frames in one run only, and gave every one back
    x_off, x_on = (json.loads((tmp_path / f).read_text())
                   ["ports"]["0"]["xstats"]["netem"]
                   for f in ("off.json", "on.json"))
    assert x_off["store_hwm"] == 0 and x_on["store_hwm"] > 0
    assert x_on["store_frames"] == 0
    assert dflt.read_bytes() == off.read_bytes()
    assert (lines_without_profile(s_off, off) ==
            lines_without_profile(s_dflt, dflt))
    a, b = off.read_bytes(), on.read_bytes()
    _, got = pcaplib.read(str(on))
    # something left, and 256 and 257 byte frames among it
    assert len(got) > len(frames) // 5
    assert {len(f) for _, f in got} >= {64, 256, 257, 1500}
    assert a == b
    assert (lines_without_profile(s_off, off) ==
            lines_without_profile(s_on, on))


def test_default_limit_counts_mbufs(tmp_path):
    """Where the two differ, by design: netem's default limit (half the
    pool) bounds the packets that hold mbufs; stored frames hold none, so
    a queue over its rate keeps more of them (fewer netem_limit drops),
    and every packet is still accounted for."""
    inp = tmp_path / "in.pcap"
    capture(inp, 30000, 11, 3000)
    drops = []
    for st in (" store off", ""):
        out = tmp_path / "o.pcap"
        text = replay(inp, out, "delay 2ms 1ms rate 300mbit" + st)
        m = re.search(r"netem_limit (\d+)", text)
        assert m and "conservation" in text and ": ok" in text, text
        drops.append(int(m.group(1)))
    assert drops[0] > 0 and drops[1] < drops[0], drops


def test_store_threshold_is_a_parameter(tmp_path):
    """Another threshold (every frame stored, or only the smallest)
    leaves the output as it is too."""
    inp = tmp_path / "in.pcap"
    capture(inp, 20000, 3, 2000)
    outs = []
    for st in ("store off", "store 64 after 0", "store 1500 after 0"):
        out = tmp_path / (st.replace(" ", "_") + ".pcap")
        replay(inp, out, "delay 10ms 5ms " + st)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] == outs[2]


# The sha256 of what the build before the store (d385ee8) wrote for
# capture(in, 30000, 11, 3000) through --netem 'delay 10ms 5ms' --seed 5:
# SHP_STORE_PRINT_DIGEST=1 prints this build's, to make it again.
BEFORE_THE_STORE = ("1b83a8edff73594922103ed8a23effe2"
                    "1a379a952866df22cae4cafcc1e0b09f")


def test_same_as_before_the_store(tmp_path):
    """Byte for byte what the build before the change wrote, frames of
    64, 256, 257 and 1500 B through a jittered delay (issue 25)."""
    inp = tmp_path / "in.pcap"
    capture(inp, 30000, 11, 3000)
    out = tmp_path / "on.pcap"
    replay(inp, out, "delay 10ms 5ms")
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    if os.environ.get("SHP_STORE_PRINT_DIGEST"):
        print("digest", digest)
    assert digest == BEFORE_THE_STORE
