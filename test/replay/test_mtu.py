"""--mtu and jumbo frames (issue 29.1): offline and live on net_pcap, with
frames larger than an mbuf's data room (several segments each).

The MTU bounds the L3 packet, so with --mtu 9000 an Ethernet frame of
9014 bytes (IPv4 packet of 9000) passes and one of 9015 is `oversize`."""
import os
import subprocess

import pytest

import pcaplib
import test_offline
from conftest import (BIN, REPLAY_BIN, assert_conserved, eal_args,
                      forget_prefix, new_prefix, pcap_port, run_shaper)

L3 = [50, 1500, 9000, 9001]          # IPv4 packet sizes, in turn
N = 400
SMALL_ROOM = "2176"                   # 2048 bytes of data: 5 segments


def jumbo_mix(path, n=N, l3=L3):
    frames = [pcaplib.eth_ipv4(0, l3[i % len(l3)] + 14, i)
              for i in range(n)]
    pcaplib.write(str(path), frames, ts_ns=[i * 200_000 for i in range(n)])
    return frames


def trace_file(tmp_path):
    """Mahimahi: 60 opportunities of 1504 bytes each ms (722 Mbit/s)."""
    p = tmp_path / "fast.trace"
    p.write_text("".join("%d\n" % ms for ms in range(1, 11)
                         for _ in range(60)))
    return str(p)


STAGES = {
    "bands": [],
    "tbf": ["--tbf", "rate 10gbit burst 64kb limit 10mb"],
    "netem": ["--netem", "delay 5ms"],
    "fq_codel": ["--queue", "fq_codel"],
    "police": ["--police", "rate 10gbit burst 64kb mtu 64kb"],
    "classes": ["--class", "udp", "ip_proto 17", "--class-netem", "udp",
                "delay 1ms"],
    "trace": None,   # its file is made per test
}


def stage_args(name, tmp_path):
    if name == "trace":
        return ["--trace", trace_file(tmp_path)]
    return list(STAGES[name])


def out_frames(path):
    return [f for _, f in pcaplib.read(str(path))[1]]


@pytest.mark.parametrize("stage", list(STAGES))
def test_offline_oversize_counted_rest_whole(tmp_path, stage):
    rx, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    frames = jumbo_mix(rx)
    stats = tmp_path / "s.json"
    proc = test_offline.run(rx, out, "--mtu", "9000", "--stats-file",
                            str(stats), *stage_args(stage, tmp_path))
    assert proc.returncode == 0, proc.stderr
    import json
    port = json.load(open(stats))["ports"]["0"]
    assert port["drops"]["oversize"] == N // 4, port["drops"]
    assert sum(port["drops"].values()) == N // 4, port["drops"]
    sent = out_frames(out)
    want = [f for f in frames if len(f) - 14 <= 9000]
    # byte for byte (fq_codel and classes may change the order)
    assert sorted(sent) == sorted(want)
    if stage not in ("fq_codel", "classes"):
        assert sent == want


def test_offline_no_mtu_no_check(tmp_path):
    rx, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    frames = jumbo_mix(rx)
    test_offline.ok_run(rx, out)
    assert out_frames(out) == frames


def one_bit_apart(a, b):
    """The bit offset where a and b differ, when they differ in exactly
    one bit; else None."""
    if len(a) != len(b):
        return None
    diff = [(i, x ^ y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(diff) != 1 or bin(diff[0][1]).count("1") != 1:
        return None
    return diff[0][0]


def test_offline_corrupt_one_bit_anywhere(tmp_path):
    """corrupt 100% on 9014-byte frames (5 segments of 2 KiB offline):
    each frame out has exactly one bit flipped, and the flips cover the
    whole frame, its later segments included."""
    rx, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    frames = jumbo_mix(rx, 300, [9000])
    test_offline.ok_run(rx, out, "--mtu", "9000", "--netem",
                        "corrupt 100% seed 3")
    sent = out_frames(out)
    assert len(sent) == 300
    where = [one_bit_apart(a, b) for a, b in zip(frames, sent)]
    assert None not in where
    assert min(where) < 2048 and max(where) > 8000, (min(where), max(where))
    assert sum(w >= 2048 for w in where) > 200   # 77% of a frame is there


def live(tmp_path, rx, tx, args, mode="rtc"):
    """One port, which sends back out of itself: egress port 0, as the
    offline tool is (the impairments' draws depend on the port)."""
    run = run_shaper(tmp_path, [pcap_port(rx, tx)],
                     ["--replay", "--mtu", "9000", "--mbuf-size", SMALL_ROOM,
                      "--ring-size", "4096"] + args, mode)
    # exit 0: every mbuf went back to the pool (3 is a leak)
    assert run.rc == 0, run.out + run.err
    return run


LIVE = {
    "bands": [],
    "tbf": ["--tbf", "rate 10gbit burst 64kb limit 10mb"],
    "netem": ["--netem", "delay 2ms corrupt 30% duplicate 20% seed 5"],
    "fq_codel": ["--queue", "fq_codel"],
    "classes": ["--class", "udp", "ip_proto 17", "--class-netem", "udp",
                "delay 1ms corrupt 50% seed 9"],
}


@pytest.mark.parametrize("stage", list(LIVE))
def test_live_scatter_as_offline(tmp_path, stage, mode):
    """Live, net_pcap: 9014-byte frames in mbufs of 2048 bytes of data
    (chains of 5), through each stage: what leaves is the offline tool's
    output, frame for frame, and the 9015-byte ones are `oversize`."""
    rx, tx = tmp_path / "in.pcap", tmp_path / "out.pcap"
    jumbo_mix(rx)
    run = live(tmp_path, rx, tx, LIVE[stage], mode)
    assert_conserved(run)
    p = run.port(0)
    assert p["drops"]["oversize"] == N // 4, p["drops"]
    off = tmp_path / "off.pcap"
    test_offline.ok_run(rx, off, "--mtu", "9000", "--ring-size", "4096",
                        *LIVE[stage])
    got, want = out_frames(tx), out_frames(off)
    assert sorted(got) == sorted(want)
    assert max(len(f) for f in got) == 9014


def test_start_refusals(tmp_path):
    """Refused at start with one line, exit 2: an MTU out of the option's
    range, descriptors 0."""
    rx = tmp_path / "in.pcap"
    pcaplib.write(str(rx), [])
    for args, words in ((["--mtu", "70000"], "--mtu"),
                        (["--mtu", "20"], "--mtu"),
                        (["--mbuf-size", "100"], "--mbuf-size"),
                        (["--rxd", "0"], "--rxd")):
        prefix = new_prefix()
        cmd = [BIN] + eal_args("rtc", prefix) + [
            "--vdev", pcap_port(rx, tmp_path / "o.pcap")] + ["--"] + args
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=60)
        finally:
            forget_prefix(prefix)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert words in p.stderr, (args, p.stderr)
    p = subprocess.run([REPLAY_BIN, str(rx), str(tmp_path / "o.pcap"),
                        "--mtu", "70000"], capture_output=True, text=True)
    assert p.returncode == 2 and "--mtu" in p.stderr, p.stderr


def veth_pair(a, b):
    r = subprocess.run(["ip", "link", "add", a, "type", "veth", "peer",
                        "name", b], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot create a veth pair (%s): needs root and the "
                    "veth module" % r.stderr.strip())
    for d in (a, b):
        subprocess.run(["ip", "link", "set", d, "up"], check=True)


def test_mtu_above_the_port_refused(tmp_path):
    """net_af_packet's ring frames (framesz=, 2048 by default) hold frames
    of at most framesz - 52 bytes (the kernel cuts longer ones short):
    --mtu 9000 is refused with one line naming the port, its driver and
    its limit (exit 2); --mtu 1500 starts and says so."""
    a, b = "shpm%da" % (os.getpid() % 10000), "shpm%db" % (os.getpid() % 10000)
    veth_pair(a, b)
    try:
        for mtu in ("9000", "1500"):
            prefix = new_prefix()
            cmd = [BIN] + eal_args("rtc", prefix) + [
                "--vdev", "net_af_packet0,iface=%s" % a, "--vdev",
                "net_af_packet1,iface=%s" % b, "--", "--mtu", mtu,
                "--link-wait", "0"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            try:
                if mtu == "9000":
                    _, err = proc.communicate(timeout=60)
                    assert proc.returncode == 2, err
                    line = [l for l in err.splitlines() if "--mtu" in l]
                    assert len(line) == 1, err
                    assert "port 0 (net_af_packet)" in line[0], line
                    assert "at most 1996 bytes (framesz=2048" in line[0], line
                    continue
                seen = ""
                while "mtu 1500" not in seen:
                    l = proc.stdout.readline()
                    assert l, (seen, proc.stderr.read())
                    seen += l
                proc.send_signal(2)
                proc.communicate(timeout=60)
                assert proc.returncode == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                forget_prefix(prefix)
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def test_ini_mtu(tmp_path):
    """[global] mtu, and [port 0] mtu over it (the offline tool is port
    0); --mtu over both."""
    import json
    rx, out = tmp_path / "in.pcap", tmp_path / "out.pcap"
    jumbo_mix(rx)
    for ini, args, over in (("[global]\nmtu = 1500\n", [], 200),
                            ("[global]\nmtu = 1500\n[port 0]\nmtu = 9000\n",
                             [], 100),
                            ("[port 0]\nmtu = 1500\n", ["--mtu", "9000"],
                             100),
                            ("[port 1]\nmtu = 1500\n", [], 0)):
        cfg = tmp_path / "p.ini"
        cfg.write_text(ini)
        stats = tmp_path / "s.json"
        proc = test_offline.run(rx, out, "--config", str(cfg),
                                "--stats-file", str(stats), *args)
        assert proc.returncode == 0, (ini, proc.stderr)
        d = json.load(open(stats))["ports"]["0"]["drops"]
        assert d["oversize"] == over, (ini, args, d)
    cfg.write_text("[global]\nmtu = 20\n")
    proc = test_offline.run(rx, out, "--config", str(cfg))
    assert proc.returncode == 2 and "mtu" in proc.stderr, proc.stderr
