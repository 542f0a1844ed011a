"""Live changes keep queued packets: `set netem P off` lets the delay queue
drain on time, nothing lost or duplicated; `stop` holds packets, `start`
releases them."""
import re
import struct
import time

import pytest

from conftest import SAMPLE, clean, shaper_cmd

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402


def pcap_count(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic in (0xa1b2c3d4, 0xa1b23c4d)
    n, off = 0, 24
    while off + 16 <= len(data):
        incl = struct.unpack("<I", data[off + 8:off + 12])[0]
        off += 16 + incl
        n += 1
    return n


def test_netem_off_drains_queue_on_time(tmp_path):
    o0, o1 = tmp_path / "o0.pcap", tmp_path / "o1.pcap"
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, o0),
             "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, o1)]
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(vdevs, ["--replay", "-i", "--netem", "delay 1500ms",
                             "--stats-file", str(stats)])
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.expect_exact("workers")
    time.sleep(0.3)        # the capture is read into the delay queue
    t_off = time.monotonic()
    c.sendline("set netem all off")
    c.sendline("show netem 1")
    c.expect(r"netem_queued: (\d+)")
    queued = int(c.match.group(1))
    c.expect_exact("replay done")
    t_done = time.monotonic()
    c.sendline("show drops")
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0
    n = pcap_count(SAMPLE)
    # still held after `off`: they keep their send time...
    assert queued > 0.9 * n, (queued, n)
    # ...and leave then, not at once (1.5 s after RX, 0.3 s before `off`)
    assert t_done - t_off > 0.8, t_done - t_off
    import json
    st = json.load(open(stats))["ports"]
    for p, out in (("0", o0), ("1", o1)):
        assert st[p]["tx_packets"] == n and pcap_count(out) == n
        assert sum(st[p]["drops"].values()) == 0


def test_stop_holds_start_releases(tmp_path):
    o0, o1 = tmp_path / "o0.pcap", tmp_path / "o1.pcap"
    vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, o0),
             "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (SAMPLE, o1)]
    cmd = shaper_cmd(vdevs, ["--replay", "-i", "--netem", "delay 300ms"])
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.expect_exact("workers")
    time.sleep(0.1)
    c.sendline("stop")
    c.expect_exact("forwarding stopped")
    time.sleep(0.8)           # past the send time: still held
    c.sendline("show port stats 1")
    c.expect(r"tx_packets: (\d+)")
    held_tx = int(c.match.group(1))
    c.expect(r"queued: (\d+)")
    held_q = int(c.match.group(1))
    c.sendline("start")
    c.expect_exact("replay done")
    c.sendline("show port stats 1")
    c.expect(r"tx_packets: (\d+)")
    tx = int(c.match.group(1))
    c.sendline("quit")
    c.expect(pexpect.EOF)
    assert c.wait() == 0
    assert held_tx == 0 and held_q > 0
    assert tx == pcap_count(SAMPLE)     # every packet left, once
