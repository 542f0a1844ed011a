"""Replays through net_pcap: forwarding, priority, rate, bad input, in
run-to-completion and pipeline mode. Every run must end by itself
(--replay) and account for every packet."""
import os
import struct

import pytest

import pcaplib
from conftest import assert_conserved, pcap_port, run_shaper


def mixed_frames(n):
    """IPv4 with assorted TOS and sizes, plus IPv6, VLAN, ARP and runts."""
    frames = []
    for i in range(n):
        k = i % 10
        if k < 6:
            frames.append(pcaplib.eth_ipv4([0, 0x10, 0x08, 0x18, 0xb8, 4][k],
                                           64 + (i * 37) % 1400, i))
        elif k == 6:   # IPv6, traffic class 0x10
            fr = bytearray(pcaplib.eth_ipv4(0, 100, i))
            fr[12:14] = b"\x86\xdd"
            fr[14] = 0x61
            fr[15] = 0x00
            frames.append(bytes(fr))
        elif k == 7:   # VLAN-tagged IPv4
            fr = pcaplib.eth_ipv4(0x10, 200, i)
            frames.append(fr[:12] + b"\x81\x00\xa0\x05" + fr[12:])
        elif k == 8:   # ARP
            frames.append(b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" +
                          bytes(28) + struct.pack("!I", i))
        else:          # runt
            frames.append(b"\x02" * 6 + struct.pack("!I", i))
    return frames


def band_of(frame):
    """Band under the default TOS classifier and priomap (3 bands)."""
    tos2prio = [0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4]
    priomap = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
    if len(frame) < 16:
        return priomap[0]
    et = frame[12:14]
    off = 14
    if et == b"\x81\x00" and len(frame) >= 20:
        et = frame[16:18]
        off = 18
    if et == b"\x08\x00" and frame[off] >> 4 == 4:
        tos = frame[off + 1]
    elif et == b"\x86\xdd" and frame[off] >> 4 == 6:
        tos = ((frame[off] & 0xf) << 4) | (frame[off + 1] >> 4)
    else:
        return priomap[0]
    return priomap[tos2prio[(tos & 0x1e) >> 1]]


def test_no_shaping(tmp_path, mode):
    frames = mixed_frames(3000)
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), frames)
    # rings large enough for the whole capture: net_pcap reads as fast as
    # polled, and this test is about integrity, not queue overflow
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--ring-size", "4096"], mode)
    assert run.rc == 0, run.err
    _, out = pcaplib.read(str(tx))
    got = [f for _, f in out]
    # every packet out, byte-identical
    assert sorted(got) == sorted(frames)
    # order kept within each band
    for b in range(3):
        assert [f for f in got if band_of(f) == b] == \
            [f for f in frames if band_of(f) == b]
    p = run.port(0)
    assert p["rx_packets"] == 3000 and p["tx_packets"] == 3000
    assert p["rx_bytes"] == sum(len(f) for f in frames) == p["tx_bytes"]
    assert_conserved(run)


def test_two_ports_both_ways(tmp_path, mode):
    a = [pcaplib.eth_ipv4(0x10, 100, i) for i in range(500)]
    b = [pcaplib.eth_ipv4(0x08, 300, 10000 + i) for i in range(700)]
    pcaplib.write(str(tmp_path / "a.pcap"), a)
    pcaplib.write(str(tmp_path / "b.pcap"), b)
    run = run_shaper(tmp_path, [
        pcap_port(tmp_path / "a.pcap", tmp_path / "a-out.pcap", 0),
        pcap_port(tmp_path / "b.pcap", tmp_path / "b-out.pcap", 1)],
        ["--replay", "--pairs", "0:1", "--ring-size", "2048"], mode)
    assert run.rc == 0, run.err
    # what came in on 0 leaves on 1 and the other way round
    assert [f for _, f in pcaplib.read(str(tmp_path / "b-out.pcap"))[1]] == a
    assert [f for _, f in pcaplib.read(str(tmp_path / "a-out.pcap"))[1]] == b
    assert_conserved(run, ingress_of={0: 1, 1: 0})


TBF = "rate 10mbit burst 10kb limit 1mb"


def test_priority(tmp_path, mode):
    """Three bands arriving far faster than the bucket: band 0 leaves
    before queued band 1, band 1 before band 2; overload costs band 2."""
    n = 600
    frames = []
    for i in range(n):
        for j, tos in enumerate((0x08, 0x00, 0x10)):   # bands 2, 1, 0
            frames.append(pcaplib.eth_ipv4(tos, 1000, 3 * i + j))
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), frames)
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--tbf", TBF], mode)
    assert run.rc == 0, run.err
    _, out = pcaplib.read(str(tx))
    bands = [band_of(f) for _, f in out]
    # The bucket lets 10 frames through at once; RX reads a burst at a
    # time, so only the start may interleave. After that the bands leave
    # in order 0, 1, 2.
    head = 10 + 2 * 32
    tail = bands[head:]
    assert tail == sorted(tail), "a lower band left before a higher one"
    assert tail.count(0) > 0 and tail.count(1) > 0
    p = run.port(0)
    drops = [b["dropped"] for b in p["bands"]]
    assert drops[0] == 0
    assert drops[2] >= drops[1]
    if drops[1] > 0:
        # band 1 lost packets only once band 2 had nothing left to give
        assert bands.count(2) <= head
    assert sum(drops) > 0   # 1.8 MB offered into a 1 MB limit
    assert p["drops"]["tbf_limit"] == sum(drops)
    # FIFO within each band
    for b in range(3):
        seqs = [pcaplib.seq_of(f) for _, f in out if band_of(f) == b]
        assert seqs == sorted(seqs)
    assert_conserved(run)


def test_rate(tmp_path, mode):
    frames = [pcaplib.eth_ipv4(0, 1000, i) for i in range(600)]
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), frames)
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--tbf", TBF], mode, watch=True)
    assert run.rc == 0, run.err
    _, out = pcaplib.read(str(tx))
    assert len(out) == 600
    # skip the initial bucket (10 frames), measure the rest
    t0, t1 = out[20][0], out[-1][0]
    bits = sum(len(f) for _, f in out[21:]) * 8
    rate_bits = bits * 1e9 / (t1 - t0)
    # never faster than the rate, whatever the host does
    assert rate_bits / 10e6 - 1 < 0.02, rate_bits
    # and slower only by what the host took: a bucket keeps no more than
    # its burst of the time a worker did not run (tbf's rule, as the
    # kernel's), so the span is the rate's plus at most the time the
    # host took from the polling threads (the kernel's figures,
    # cpu_lost.py), up to a tenth of the span: a run the host took more
    # from fails
    span = bits * 1e9 / 10e6
    took = sum(v["lost_s"] for v in run.lost.busy().values()) * 1e9
    assert t1 - t0 <= span * 1.02 + min(took, 0.1 * span), \
        (rate_bits, run.lost, run.stats["lcores"])
    assert_conserved(run)


def test_empty_capture_ends(tmp_path, mode):
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), [])
    run = run_shaper(tmp_path, [pcap_port(rx, tx)], ["--replay"], mode)
    assert run.rc == 0, run.err
    assert run.port(0)["tx_packets"] == 0
    assert pcaplib.read(str(tx))[1] == []


@pytest.mark.parametrize("kind", ["zero-bytes", "truncated", "not-ethernet",
                                  "garbage", "missing"])
def test_bad_capture(tmp_path, kind):
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    if kind == "zero-bytes":
        open(rx, "wb").close()
    elif kind == "truncated":
        pcaplib.write(str(rx), [pcaplib.eth_ipv4(0, 500, i)
                                for i in range(10)])
        with open(rx, "r+b") as f:
            f.truncate(os.path.getsize(rx) - 100)
    elif kind == "not-ethernet":
        pcaplib.write(str(rx), [bytes(40)], linktype=101)  # raw IP
    elif kind == "garbage":
        with open(rx, "wb") as f:
            f.write(b"this is not a capture file at all" * 4)
    run = run_shaper(tmp_path, [pcap_port(rx, tx)], ["--replay"])
    assert run.rc == 2, (run.rc, run.err)
    lines = [l for l in run.err.splitlines() if "dpdk-shaper" in l]
    assert len(lines) == 1, run.err
    assert str(rx) in lines[0]
    want = {"zero-bytes": "", "truncated": "broken",
            "not-ethernet": "not Ethernet", "garbage": "",
            "missing": ""}[kind]
    assert want in lines[0]
    assert run.stats is None     # nothing started, nothing written
    assert "Segmentation" not in run.err


@pytest.mark.parametrize("args,word", [
    (["--bands", "0"], "--bands"),
    (["--bands", "17"], "--bands"),
    (["--bands", "x"], "--bands"),
    (["--priomap", "1,2,3"], "priomap"),
    (["--bands", "2", "--priomap", "1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1"],
     "priomap"),
    (["--classify", "color"], "classify"),
    (["--tbf", "rate 1mbit"], "burst"),
    (["--tbf", "rate 1mbit burst 10kb limit 1mb colour blue"], "colour"),
    (["--tbf-port", "0"], "tbf-port"),
    (["--tbf-port", "x", "rate 1mbit burst 1kb limit 1kb"], "tbf-port"),
    (["--netem", "delay 10m"], "unit"),   # (bare: tc's ns)
    (["--netem", "loss 120%"], "120"),
    (["--burst", "0"], "--burst"),
    (["--ring-size", "1"], "ring-size"),
    (["--no-such-option"], "--no-such-option"),
    (["--stats-period"], "--stats-period"),
    (["--pairs", "0:"], "--pairs"),
    (["--pairs", "0:5"], "port"),
    (["--config", "/nonexistent.ini"], "/nonexistent.ini"),
    (["--max-late", "10"], "--max-late"),
    (["--late-drop", "soon"], "--late-drop"),
    (["--late-drop", "5ms5"], "--late-drop"),
])
def test_bad_options(tmp_path, args, word):
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), [pcaplib.eth_ipv4(0, 100, 1)])
    run = run_shaper(tmp_path, [pcap_port(rx, tx)], ["--replay"] + args,
                     stats=False)
    assert run.rc == 2, (run.rc, run.out, run.err)
    lines = [l for l in run.err.splitlines() if l.startswith("dpdk-shaper")]
    assert len(lines) == 1, run.err
    assert word in lines[0], lines[0]
    assert not os.path.exists(tx) or pcaplib.read(str(tx))[1] == []


def test_help_lists_every_option():
    import subprocess
    from conftest import BIN
    out = subprocess.run([BIN, "--", "--help"], capture_output=True,
                         text=True).stdout
    for opt in ("--bands", "--priomap", "--classify", "--pairs", "--tbf",
                "--tbf-port", "--netem", "--netem-port", "--config",
                "--stats-period", "--stats-file", "--replay", "--rx-lcores",
                "--tx-lcores", "--mbufs", "--ring-size", "--burst", "--seed",
                "--interactive", "--cmdline-file", "--max-late",
                "--late-drop", "--preset", "--preset-port", "--preset-dir"):
        assert opt in out, opt
    assert "default" in out


def test_config_file_and_override(tmp_path):
    frames = [pcaplib.eth_ipv4(0, 1000, i) for i in range(300)]
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    pcaplib.write(str(rx), frames)
    ini = tmp_path / "p.ini"
    ini.write_text("[global]\nbands = 4\nclassify = none\n"
                   "[port 0]\ntbf = rate 1mbit burst 2kb limit 20kb\n")
    # the file's tbf would drop most; the command line turns it off
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--config", str(ini), "--tbf", "off"])
    assert run.rc == 0, run.err
    p = run.port(0)
    assert len(p["bands"]) == 4
    assert p["tx_packets"] == 300
    assert p["bands"][1]["enqueued"] == 300   # none -> prio 0 -> band 1
    bad = tmp_path / "bad.ini"
    bad.write_text("[global]\nbands = 4\n[port 0]\nnetem = delay 5m\n")
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--config", str(bad)], stats=False)
    assert run.rc == 2
    assert "port 0" in run.err and "netem" in run.err


def test_two_rx_lcores_one_port(tmp_path):
    """Two RX lcores feed the same egress bands (multi-producer rings and
    the bitmap's producer/consumer protocol): nothing lost or stranded,
    each input's order kept within a band."""
    a = [pcaplib.eth_ipv4([0x10, 0x00, 0x08][i % 3], 100 + i % 700, i)
         for i in range(3000)]
    b = [pcaplib.eth_ipv4([0x08, 0x10, 0x00][i % 3], 90 + i % 500,
                          100000 + i) for i in range(3000)]
    pcaplib.write(str(tmp_path / "a.pcap"), a)
    pcaplib.write(str(tmp_path / "b.pcap"), b)
    vdev = "net_pcap0,rx_pcap=%s,rx_pcap=%s,tx_pcap=%s" % (
        tmp_path / "a.pcap", tmp_path / "b.pcap", tmp_path / "out.pcap")
    import subprocess
    from conftest import BIN, Run, new_prefix
    stats = tmp_path / "s.json"
    cmd = [BIN, "--lcores", "(0-3)@(0-1)", "--no-huge", "-m", "512",
           "--no-pci", "--file-prefix", new_prefix(),
           "--log-level", "*:error", "--vdev", vdev, "--",
           "--rx-lcores", "1,2", "--tx-lcores", "3", "--replay",
           "--ring-size", "8192", "--stats-file", str(stats)]
    run = Run(subprocess.run(cmd, capture_output=True, text=True,
                             timeout=120), str(stats))
    assert run.rc == 0, run.err
    got = [f for _, f in pcaplib.read(str(tmp_path / "out.pcap"))[1]]
    assert sorted(got) == sorted(a + b)
    for src in (a, b):
        mine = set(src)
        for band in range(3):
            assert [f for f in got if f in mine and band_of(f) == band] == \
                [f for f in src if band_of(f) == band]
    assert run.port(0)["rx_packets"] == 6000
    assert_conserved(run)
