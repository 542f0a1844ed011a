"""pfifo_fast's own bands and priomap, per port (issue 27 point 4):
`--queue[-port] 'pfifo_fast bands N priomap ...'`, the INI's [port N]
queue, `set queue P pfifo_fast ...`; --bands, --priomap and `set priomap`
stay as aliases for every port whose queue gives none of its own."""
import json
import re
import struct
import subprocess
import sys
import time

import pytest

from conftest import outputs, run_piped, shaper_cmd, wait_started

sys.path.insert(0, __file__.rsplit("/test/", 1)[0] + "/test")
import pcaplib  # noqa: E402

# priority (TC_PRIO, through ip_tos2prio) of each TOS sent, and how many
# frames of it: counts that tell the bands' sums apart
TOS = {0x00: (0, 5), 0x08: (2, 7), 0x10: (6, 11)}

MAP4 = [3, 3, 0, 3, 3, 3, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3]
MAP2 = [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]


def csv(m):
    return ",".join(str(b) for b in m)


def qdisc_heads(text):
    return [l for l in text.splitlines() if l.startswith("qdisc ")]


def expected(m, bands):
    want = [0] * bands
    for prio, n in TOS.values():
        want[m[prio]] += n
    return want


def pcap_vdevs(tmp_path):
    frames = []
    for i in range(max(n for _, n in TOS.values())):
        for tos, (_, n) in sorted(TOS.items()):
            if i < n:
                frames.append(pcaplib.eth_ipv4(tos, 100, len(frames)))
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), frames)
    return ["net_pcap%d,rx_pcap=%s,tx_pcap=%s" % (p, inp,
                                                 tmp_path / ("o%d.pcap" % p))
            for p in (0, 1)]


def test_each_port_maps_by_its_own_priomap(tmp_path):
    """Port 0's input leaves by port 1 and the other way round: each
    egress port's bands count what its own map says of each TOS."""
    r = run_piped(tmp_path, [], interactive=False,
                  vdevs=pcap_vdevs(tmp_path), app_args=[
                      "--replay",
                      "--queue-port", "1",
                      "pfifo_fast bands 4 priomap " + " ".join(map(str, MAP4)),
                      "--queue-port", "0",
                      "pfifo_fast bands 2 priomap " + csv(MAP2)])
    assert r.rc == 0, r.out
    for port, m, bands in (("1", MAP4, 4), ("0", MAP2, 2)):
        got = [b["enqueued"] for b in r.stats["ports"][port]["bands"]]
        assert got == expected(m, bands), (port, got, r.out)
        assert r.stats["ports"][port]["tx_packets"] == \
            sum(n for _, n in TOS.values())


def test_show_qdisc_and_config_per_port(tmp_path):
    r = run_piped(tmp_path, ["show qdisc 0", "show qdisc 1", "show config",
                             "show bands 0", "show bands 1", "quit"],
                  app_args=["--queue-port", "1",
                            "pfifo_fast bands 4 priomap " + csv(MAP4),
                            "--queue-port", "0",
                            "pfifo_fast bands 2 priomap " + csv(MAP2)])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    (q0,) = qdisc_heads(o["show qdisc 0"][0])
    (q1,) = qdisc_heads(o["show qdisc 1"][0])
    assert q0 == "qdisc prio 3: root refcnt 2 bands 2 priomap %s " % \
        " ".join(map(str, MAP2)), q0
    assert q1 == "qdisc prio 3: root refcnt 2 bands 4 priomap %s " % \
        " ".join(map(str, MAP4)), q1
    conf = o["show config"][0]
    # the aliases as they were; each port's own in its queue line
    assert "bands: 3 " in conf and \
        "priomap: 1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1" in conf, conf
    assert "queue: pfifo_fast bands 2 priomap %s" % csv(MAP2) in conf
    assert "queue: pfifo_fast bands 4 priomap %s" % csv(MAP4) in conf
    assert "port 0: 2 bands" in o["show bands 0"][0]
    assert "port 1: 4 bands" in o["show bands 1"][0]
    assert [len(r.stats["ports"][p]["bands"]) for p in ("0", "1")] == [2, 4]
    assert r.stats["ports"]["1"]["bands"][3]["enqueued"] > 0   # prio 0


def test_ini_port_queue(tmp_path):
    ini = tmp_path / "p.ini"
    ini.write_text("[global]\nbands = 4\n[port 1]\nqueue = pfifo_fast "
                   "bands 2 priomap %s\n" % csv(MAP2))
    r = run_piped(tmp_path, ["show qdisc 0", "show qdisc 1", "quit"],
                  app_args=["--config", str(ini)])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    (q0,) = qdisc_heads(o["show qdisc 0"][0])
    (q1,) = qdisc_heads(o["show qdisc 1"][0])
    # [global] bands is the alias: port 0 has 4, port 1 its own 2
    assert q0 == "qdisc prio 3: root refcnt 2 bands 4 priomap " \
        "1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 ", q0
    assert q1.endswith("bands 2 priomap %s " % " ".join(map(str, MAP2))), q1


@pytest.mark.parametrize("order", ["alias_first", "port_first"])
def test_bands_alias_every_port_own_wins(tmp_path, order):
    alias = ["--bands", "4"]
    own = ["--queue-port", "1", "pfifo_fast bands 2"]
    args = alias + own if order == "alias_first" else own + alias
    r = run_piped(tmp_path, ["show qdisc 0", "show qdisc 1", "quit"],
                  app_args=args)
    assert r.rc == 0, r.out
    o = outputs(r.out)
    (q0,) = qdisc_heads(o["show qdisc 0"][0])
    (q1,) = qdisc_heads(o["show qdisc 1"][0])
    assert "bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 " in q0, q0
    assert "bands 2 priomap 1 1 1 1 1 1 0 0 1 1 1 1 1 1 1 1 " in q1, q1
    assert [len(r.stats["ports"][p]["bands"]) for p in ("0", "1")] == [4, 2]


def test_bands_alias_alone_applies_to_every_port(tmp_path):
    r = run_piped(tmp_path, ["show qdisc", "quit"],
                  app_args=["--bands", "4"])
    assert r.rc == 0, r.out
    heads = qdisc_heads(outputs(r.out)["show qdisc"][0])
    assert len(heads) == 2, heads
    for h in heads:
        assert "bands 4 priomap" in h, h
    assert [len(r.stats["ports"][p]["bands"]) for p in ("0", "1")] == [4, 4]


BAD = [
    ("pfifo_fast priomap " + csv([1] * 17), "more than 16 entries"),
    ("pfifo_fast bands 2 priomap " + csv([0] * 15 + [2]),
     "band 2 out of range 0..1"),
    ("pfifo_fast priomap 1,2,x,2,1,2,0,0,1,1,1,1,1,1,1,1",
     "'x' is not a band number"),
    ("pfifo_fast bands 2 bogus", "unknown word 'bogus'"),
]


@pytest.mark.parametrize("text,why", BAD)
def test_bad_priomap_refused_at_start(tmp_path, text, why):
    cmd = shaper_cmd(["net_null0,copy=1", "net_null1,copy=1"],
                     ["--queue-port", "1", text])
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith("dpdk-shaper: pfifo_fast: ") and \
        why in p.stderr, p.stderr


def test_alias_priomap_past_a_ports_own_bands_refused_at_start(tmp_path):
    cmd = shaper_cmd(["net_null0,copy=1", "net_null1,copy=1"],
                     ["--priomap", "1,2,2,2,1,2,0,0,1,1,1,1,1,1,1,1",
                      "--queue-port", "1", "pfifo_fast bands 2"])
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1, p.stderr
    assert "--queue-port 1 'pfifo_fast bands 2'" in p.stderr and \
        "own priomap" in p.stderr, p.stderr


def test_run_time_per_port_and_alias(tmp_path):
    own = "3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0"
    cmds = ["set queue 1 pfifo_fast priomap " + own,
            "show qdisc 1",
            # refused: nothing changes
            "set queue 1 pfifo_fast priomap " + " ".join(["0"] * 15 + ["4"]),
            "set queue 1 pfifo_fast priomap " + " ".join(["1"] * 17),
            "set queue 1 pfifo_fast priomap 1 x",
            "set queue 1 pfifo_fast bands 3",
            "show qdisc 1",
            # the alias: port 0 follows it, port 1 keeps its own
            "set priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1",
            "show qdisc",
            # port 0 has 2 bands of its own: band 3 does not fit it
            "set priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3",
            "show qdisc",
            "show config",
            # back to the alias
            "set queue 1 pfifo_fast",
            "show qdisc 1",
            "quit"]
    r = run_piped(tmp_path, cmds, app_args=[
        "--bands", "4", "--queue-port", "0", "pfifo_fast bands 2"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    first = qdisc_heads(o["show qdisc 1"][0])[0]
    assert first.endswith("bands 4 priomap %s " % own), first
    for c, why in ((cmds[2], "band 4 out of range 0..3"),
                   (cmds[3], "more than 16 entries"),
                   (cmds[4], "'x' is not a band number"),
                   (cmds[5], "bands cannot change while running")):
        msg = o[c][0]
        assert msg.startswith("error: set queue 1: pfifo_fast: ") and \
            why in msg and "(nothing changed)" in msg, (c, msg)
    assert qdisc_heads(o["show qdisc 1"][1]) == [first]
    q0, q1 = qdisc_heads(o["show qdisc"][0])
    assert "bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 " in q0, q0
    assert q1.endswith("bands 4 priomap %s " % own), q1
    msg = o["set priomap 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3"][0]
    assert re.match(r"error: set priomap: port 0: pfifo_fast: bands 2: ",
                    msg) and "(nothing changed)" in msg, msg
    assert qdisc_heads(o["show qdisc"][1]) == [q0, q1]
    assert "priomap: 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1" in o["show config"][0]
    last = qdisc_heads(o["show qdisc 1"][2])[0]
    assert last.endswith("bands 4 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 "), \
        last


def class_frame(dst, seq):
    f = bytearray(pcaplib.eth_ipv4(0, 100, seq))
    f[30:34] = bytes(dst)
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", pcaplib._csum(bytes(f[14:34])))
    return bytes(f)


def test_class_queue_maps_by_its_own_priomap(tmp_path):
    """A class's pfifo_fast maps its packets with its own map, not the
    port's (their band counters add into the port's)."""
    frames = [class_frame((10, 1, 0, 7) if i % 3 == 0 else (10, 2, 0, 9), i)
              for i in range(30)]
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), frames)
    r = run_piped(tmp_path, [], interactive=False, vdevs=[
        "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (inp, tmp_path / "o.pcap")],
        app_args=["--replay",
                  "--queue", "pfifo_fast bands 4 priomap " + csv([0] * 16),
                  "--class", "c", "dst_ip 10.1.0.0/16",
                  "--class-queue", "c",
                  "pfifo_fast bands 4 priomap " + csv([3] + [1] * 15)])
    assert r.rc == 0, r.out
    got = [b["enqueued"] for b in r.stats["ports"]["0"]["bands"]]
    assert got == [20, 0, 0, 10], (got, r.out)


def test_class_queue_follows_set_priomap(tmp_path):
    """A class's pfifo_fast without a map of its own follows the alias:
    `set priomap` moves its traffic, not the port's own map's."""
    frames = [class_frame((10, 1, 0, 7), i) for i in range(64)]
    inp = tmp_path / "in.pcap"
    pcaplib.write(str(inp), frames)
    stats = tmp_path / "s.json"
    cmd = shaper_cmd(["net_pcap0,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1"
                      % inp, "net_null0,copy=1"], [
        "-i", "--stats-file", str(stats), "--bands", "4",
        "--queue", "pfifo_fast priomap " + csv([0] * 16),
        "--class", "c", "dst_ip 10.1.0.0/16"])
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        head = wait_started(p)
        time.sleep(1)
        p.stdin.write("show bands 1\nset priomap " + " ".join(["3"] * 16) +
                      "\n")
        p.stdin.flush()
        time.sleep(1)
        out, _ = p.communicate("show bands 1\nquit\n", timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = head + out
    assert p.returncode == 0, out
    o = outputs(out)
    assert "priomap 3,3,3" in o["set priomap " + " ".join(["3"] * 16)][0]
    bands = json.loads(stats.read_text())["ports"]["1"]["bands"]
    got = [b["enqueued"] for b in bands]
    # the class's default map for 4 bands (priority 0: band 1), then the
    # alias's band 3; never the port's own band 0
    assert got[0] == 0 and got[1] > 0 and got[3] > 0, (got, out)
