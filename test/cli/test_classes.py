"""Per-class profiles at run time (issue 13): set class, clear class, show
class, the stats file's ports.N.classes, under traffic."""
import json
import os
import re
import struct
import subprocess
import sys
import time
import uuid

from conftest import (NULL_VDEVS as NULL2, Result, conservation, outputs,
                      wait_started,
                      prefix, run_piped, shaper_cmd, telemetry)

sys.path.insert(0, __file__.rsplit("/test/", 1)[0] + "/test")
import pcaplib  # noqa: E402

A, B = (10, 1, 0, 7), (10, 2, 0, 9)


def frame(dst, seq):
    f = bytearray(pcaplib.eth_ipv4(0, 200, seq))
    f[30:34] = bytes(dst)
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", pcaplib._csum(bytes(f[14:34])))
    return bytes(f)


def vdevs(tmp_path):
    frames = [frame(A if i % 2 else B, i) for i in range(64)]
    pcaplib.write(str(tmp_path / "in.pcap"), frames)
    return ["net_pcap0,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1"
            % (tmp_path / "in.pcap"),
            "net_null0,copy=1"]


def run_paced(tmp_path, commands, vdevs, app_args=(), timeout=120):
    """As run_piped, a float in commands being a pause (s) before the
    next one: time for packets to move."""
    stats = str(tmp_path / ("stats-%s.json" % uuid.uuid4().hex[:6]))
    cmd = shaper_cmd(vdevs, list(app_args) + ["--stats-file", stats, "-i"])
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        # the pauses count from the end of set-up, not from the start: the
        # EAL takes seconds on a loaded machine, and a "stop" during it
        # freezes whatever the first burst left queued
        head = wait_started(p)
        for c in commands:
            if isinstance(c, float):
                time.sleep(c)
                continue
            p.stdin.write(c + "\n")
            p.stdin.flush()
        p.stdin.close()
        out = head + p.stdout.read()
        p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return Result(p, out, stats if os.path.exists(stats) else None)


def test_set_show_clear_class_live(tmp_path):
    cmds = [
        "show class",
        "set class far match 'dst_ip 10.1.0.0/16' netem 'delay 200ms' "
        "quantum 3000",
        "set class near match 'dst_ip 10.2.0.0/16' tbf 'rate 10mbit burst "
        "10kb limit 100kb' prio 1",
        "show class far",
        "set class far netem delay 300ms",
        "show class",
        # refused, nothing changed
        "set class far bogus 1",
        "set class x match 'dst_ipp 10.0.0.0/8'",
        "set class x match 'dst_ip 10.1.0.0/16'",
        "set class far queue fq_codel",
        "set class far netem 'delay 1parsec'",
        "clear class nosuch",
        "show class nosuch",
        "show class far",
        1.0,
        # far holds 300 ms of packets: they leave after the clear
        "clear class far",
        "show class",
        1.0,
        "show class",
        "quit",
    ]
    r = run_paced(tmp_path, cmds, vdevs(tmp_path),
                  app_args=["--pairs", "0:1"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    assert o["show class"][0].strip() == "no class"
    far = o["show class far"][0]
    assert "port 1 class far: prio 0 quantum 3000" in far
    assert "netem: delay 200ms" in far
    assert "port 0 class far" in far   # every egress port by default
    after = o["show class"][1]
    assert "netem: delay 300ms" in after
    assert re.search(r"class near: prio 1 quantum 1514\n  queue: pfifo_fast"
                     r"\n  tbf: rate 10Mbit", after), after
    errs = r.errors()
    assert len(errs) == 7, errs
    assert "'bogus'" in errs[0]
    assert "dst_ipp" in errs[1]
    assert "already a rule of class far" in errs[2]
    assert "fq_codel" in errs[3] and "clear class far" in errs[3]
    assert "1parsec" in errs[4]
    assert "no class 'nosuch'" in errs[5] and "no class 'nosuch'" in errs[6]
    assert all("nothing changed" in e for e in errs[:6])
    # nothing changed by the refusals
    assert "netem: delay 300ms" in o["show class far"][1]
    # cleared while it held 300 ms of packets: still served...
    assert "class far: prio 0 quantum 3000 (cleared: served until empty)" \
        in o["show class"][2]
    # ... until empty, then freed (only an empty one is)
    assert "class far" not in o["show class"][3]
    assert "class near" in o["show class"][3]
    # every packet is accounted for, the freed class's drops included
    p1 = r.stats["ports"]["1"]
    a, b = conservation(p1)
    assert a == b, p1
    cls = p1["classes"]
    assert set(cls) == {"near"}
    assert cls["near"]["prio"] == 1
    assert cls["near"]["drops"]["tbf_limit"] > 0
    for c in cls.values():
        assert c["in_packets"] == c["packets"] + c["dropped"] + c["queued"]
    assert p1["dropped"] >= sum(c["dropped"] for c in cls.values())


def test_classes_from_the_command_line_and_stats(tmp_path):
    r = run_piped(tmp_path, ["show class near", "quit"],
                  vdevs=vdevs(tmp_path),
                  app_args=["--pairs", "0:1",
                            "--class", "near", "dst_ip 10.2.0.0/16",
                            "--class-netem", "near", "delay 1ms",
                            "--class-ports", "near", "1"], timeout=120)
    assert r.rc == 0, r.out
    o = outputs(r.out)
    assert "port 1 class near" in o["show class near"][0]
    assert "port 0 class" not in o["show class near"][0]
    assert "classes" not in r.stats["ports"]["0"]
    near = r.stats["ports"]["1"]["classes"]["near"]
    assert near["in_packets"] > 0
    a, b = conservation(r.stats["ports"]["1"])
    assert a == b


def test_telemetry_and_exporter(tmp_path, need_telemetry_client):
    """/shaper/classes and the exporter's shaper_class_* metrics agree
    with each other and with the stats file once forwarding is stopped."""
    from test_exporter import Procs, metrics, start_exporter, wait_for
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        import pytest
        pytest.fail("python3-prometheus-client missing: "
                    "scripts/deps.sh --test")
    fp = prefix()
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(vdevs(tmp_path),
                     ["-i", "--pairs", "0:1", "--stats-file", str(stats),
                      "--class", "far", "dst_ip 10.1.0.0/16",
                      "--class-tbf", "far", "rate 20mbit burst 10kb "
                      "limit 50kb"], file_prefix=fp)
    procs = Procs()
    try:
        sh = procs.start(cmd, stdin=subprocess.PIPE,
                         stdout=open(tmp_path / "out", "w"),
                         stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: metrics(ex)[("shaper_up",
                                                     frozenset())] == 1)
        time.sleep(0.5)
        sh.stdin.write("stop\n")
        sh.stdin.flush()

        def frozen():
            a = telemetry(fp, "/shaper/classes")[0]
            time.sleep(0.3)
            b = telemetry(fp, "/shaper/classes")[0]
            return b if a == b and a else None
        tc = wait_for("the counters to freeze", frozen)
        ms = metrics(ex)
        sh.stdin.write("quit\n")
        sh.stdin.flush()
        sh.wait(timeout=60)
    finally:
        procs.stop_all()
    assert set(tc) == {"0_far", "1_far"}
    far = tc["1_far"]
    assert far["in_packets"] > 0 and far["tbf_limit"] > 0
    assert far["in_packets"] == far["packets"] + far["dropped"] + \
        far["queued"]

    def metric(name, **labels):
        return ms[(name, frozenset((k, str(v)) for k, v in labels.items()))]
    assert metric("shaper_class_packets_total", port=1, **{"class": "far"}) \
        == far["packets"]
    assert metric("shaper_class_in_bytes_total", port=1,
                  **{"class": "far"}) == far["in_bytes"]
    assert metric("shaper_class_queued_packets", port=1,
                  **{"class": "far"}) == far["queued"]
    assert metric("shaper_class_dropped_packets_total", port=1,
                  cause="tbf_limit", **{"class": "far"}) == far["tbf_limit"]
    # the stats file at quit: the same counts (what was queued is flushed)
    st = json.load(open(stats))["ports"]["1"]["classes"]["far"]
    assert st["packets"] == far["packets"]
    assert st["drops"]["tbf_limit"] == far["tbf_limit"]
    assert st["in_packets"] == far["in_packets"]


def test_clear_stats_resets_the_class_counters(tmp_path):
    """`clear stats` starts the per-class counters at 0 as the port's
    (show class; telemetry reads the same sums); the stats file written at
    exit keeps the totals since start, as its ports' counters do."""
    r = run_paced(tmp_path, [
        0.8, "stop", 0.3,
        "show class near",
        "clear stats",
        "show class near",
        "show port stats 1",
        "quit"], vdevs(tmp_path),
        app_args=["--pairs", "0:1", "--class", "near", "dst_ip 10.2.0.0/16",
                  "--class-ports", "near", "1"])
    assert r.rc == 0, r.out
    o = outputs(r.out)

    def counts(text):
        m = re.search(r"in (\d+) packets (\d+) bytes, out (\d+) packets "
                      r"(\d+) bytes, queued (\d+), dropped (\d+)", text)
        assert m, text
        return [int(x) for x in m.groups()]
    before = counts(o["show class near"][0])
    after = counts(o["show class near"][1])
    assert before[0] > 0 and before[2] > 0, before
    # stopped: nothing moves between the two; the gauge (queued) stays
    assert after == [0, 0, 0, 0, before[4], 0], (before, after)
    assert re.search(r"delay to the port's stages \(ns\): min 0 avg 0 p99 0 "
                     r"max 0", o["show class near"][1]), o["show class near"]
    near = r.stats["ports"]["1"]["classes"]["near"]
    assert near["in_packets"] == before[0] and near["packets"] == before[2]


def test_class_on_a_port_that_does_not_exist(tmp_path):
    """--class-ports, ports = in [class NAME] and `set class ... ports`
    naming a port there is not: refused, naming the class and the port
    (one line, exit 2 at start; error, nothing changed, at run time)."""
    ini = tmp_path / "c.ini"
    ini.write_text("[class web]\nmatch = dst_ip 10.1.0.0/16\nports = 1,7\n")
    for args, said in [
            (["--class", "web", "dst_ip 10.1.0.0/16",
              "--class-ports", "web", "0,3"], "ports 0,3: there is no port 3"),
            (["--config", str(ini)], "ports 1,7: there is no port 7")]:
        p = subprocess.run(shaper_cmd(NULL2, args), capture_output=True,
                           text=True, timeout=120)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1, p.stderr
        assert "class web: " + said in lines[0] and \
            "the ports are 0, 1" in lines[0], lines[0]
    r = run_piped(tmp_path, [
        "set class web match 'dst_ip 10.1.0.0/16' ports 1",
        "set class web ports 0,4",
        "set class new match 'dst_ip 10.9.0.0/16' ports 9",
        "show class", "quit"], vdevs=NULL2)
    assert r.rc == 0, r.out
    o = outputs(r.out)
    e1 = o["set class web ports 0,4"][0]
    e2 = o["set class new match 'dst_ip 10.9.0.0/16' ports 9"][0]
    assert "error: class web: ports 0,4: there is no port 4" in e1 and \
        "nothing changed" in e1, e1
    assert "error: class new: ports 9: there is no port 9" in e2, e2
    shown = o["show class"][0]
    assert "port 1 class web" in shown and "port 0 class" not in shown
    assert "class new" not in shown


def test_class_fq_codel_change_keeps_its_flows(tmp_path):
    """A class's fq_codel started with a non-default `flows`: a `set
    class` queue text without flows keeps the class's table size (it
    aborted the program: the change was refused only once published);
    one naming another size is refused, the class unchanged."""
    r = run_piped(tmp_path, [
        "set class c queue 'fq_codel limit 5'",
        "set class c queue 'fq_codel flows 5'",
        "show class c", "quit"], vdevs=NULL2, app_args=[
            "--class", "c", "ip_proto 17",
            "--class-queue", "c", "fq_codel flows 2048"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    e = o["set class c queue 'fq_codel flows 5'"][0]
    assert e.startswith("error: ") and "class c: fq_codel: flows cannot " \
        "change" in e and "2048 now" in e and "nothing changed" in e, e
    shown = o["show class c"][0]
    assert shown.count("queue: fq_codel limit 5 flows 2048 quantum 1514 ") \
        == 2, shown


def many_netem_classes(path, n, delay_ms, extra=""):
    """n classes c0..c(n-1) in an INI, each on a /24 of its own (10.x.y.0:
    x, y from the index) with netem 'delay delay_ms(i)ms' + extra; returns
    the /24s."""
    nets = [(10, 100 + i // 256, i % 256) for i in range(n)]
    with open(path, "w") as f:
        for i, a in enumerate(nets):
            f.write("[class c%d]\nmatch = dst_ip %d.%d.%d.0/24\n"
                    "netem = delay %dms%s\n" % (i, *a, delay_ms(i), extra))
    return nets


def run_until_quit(tmp_path, vdevs, app_args, mem, seconds, log="*:error"):
    """dpdk-shaper under --no-huge -m MEM, forwarding for SECONDS once set
    up, then quit: (Result, stderr)."""
    from conftest import wait_started
    stats = str(tmp_path / ("stats-%s.json" % uuid.uuid4().hex[:6]))
    cmd = shaper_cmd(vdevs, list(app_args) + ["--stats-file", stats, "-i"])
    cmd[cmd.index("-m") + 1] = str(mem)
    cmd[cmd.index("--log-level") + 1] = log
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        head = wait_started(p)
        time.sleep(seconds)
        out, err = p.communicate(b"quit\n", timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return (Result(p, head + out.decode(errors="replace"),
                   stats if os.path.exists(stats) else None),
            err.decode(errors="replace"))


def test_4096_netem_classes_forward_in_2048_mb(tmp_path):
    """Issue 30, defect 4: 4096 classes, each with a netem of its own, on
    both ports take no time calendar while idle, so they load under
    --no-huge -m 2048 (with a calendar each, 5 MB a port, they failed
    near class c193 under -m 1024); traffic to every one of them is
    forwarded, each class's packets delayed by at least its own delay,
    and no calendar warning is printed."""
    n = 4096
    nets = many_netem_classes(str(tmp_path / "c.ini"), n,
                              lambda i: 1 + i % 5)
    frames = [frame(a + (1,), i) for i, a in enumerate(nets)]
    pcaplib.write(str(tmp_path / "in.pcap"), frames)
    vd = ["net_pcap0,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1"
          % (tmp_path / "in.pcap"), "net_null0,copy=1"]
    r, err = run_until_quit(tmp_path, vd, ["--pairs", "0:1", "--config",
                                           str(tmp_path / "c.ini")],
                            2048, 3.0, log="*:warning")
    assert r.rc == 0, r.out + err
    assert "calendar" not in err, err
    p1 = r.stats["ports"]["1"]
    a, b = conservation(p1)
    assert a == b, p1
    cls = p1["classes"]
    assert len(cls) == n
    for i in range(n):
        c = cls["c%d" % i]
        assert c["in_packets"] > 0 and c["packets"] > 0, ("c%d" % i, c)
        assert c["in_packets"] == c["packets"] + c["dropped"] + c["queued"]
        # the class's netem holds each packet its delay (and the first
        # to leave does not wait for anything else)
        d = (1 + i % 5) * 10**6
        assert d <= c["sojourn_ns"]["min"] < d + 50 * 10**6, \
            ("c%d" % i, c["sojourn_ns"])


def test_class_calendars_past_the_memory_warn_once(tmp_path):
    """Class netems that fill up get a time calendar from the control
    thread while the memory lasts; past it they go on with their rbtree
    and one warning line says how many (before: a warning per class at
    start, 51 in a row, then the class the memory ran out at)."""
    n = 128
    nets = many_netem_classes(str(tmp_path / "c.ini"), n, lambda i: 500)
    frames = [frame(nets[i % n] + (1,), i) for i in range(4 * n)]
    pcaplib.write(str(tmp_path / "in.pcap"), frames)
    vd = ["net_pcap0,rx_pcap=%s,tx_pcap=/dev/null,infinite_rx=1"
          % (tmp_path / "in.pcap"), "net_null0,copy=1"]
    r, err = run_until_quit(tmp_path, vd, ["--pairs", "0:1", "--config",
                                           str(tmp_path / "c.ini")],
                            320, 2.0, log="*:warning")
    assert r.rc == 0, r.out + err
    lines = [l for l in err.splitlines() if "calendar" in l]
    assert len(lines) == 1, lines
    m = re.search(r"port 1: (\d+) class netems hold packets with no time "
                  r"calendar", lines[0])
    assert m and 0 < int(m.group(1)) <= n, lines[0]
    cls = r.stats["ports"]["1"]["classes"]
    assert len(cls) == n
    for name, c in cls.items():
        assert c["packets"] > 0 and c["sojourn_ns"]["min"] >= 500 * 10**6, \
            (name, c)
    a, b = conservation(r.stats["ports"]["1"])
    assert a == b


def test_classes_out_of_memory_exit_1(tmp_path):
    """Classes the memory cannot hold fail set-up with one line naming the
    class, exit status 1 (a runtime error), as dpdk-shaper-replay does."""
    ini = tmp_path / "fat.ini"
    with open(str(ini), "w") as f:
        for i in range(64):
            f.write("[class c%d]\nmatch = dst_ip 10.100.%d.0/24\n"
                    "queue = fq_codel flows 65536\n" % (i, i))
    r = run_piped(tmp_path, ["quit"], app_args=["--config", str(ini)])
    assert r.rc == 1, r.out
    assert re.search(r"dpdk-shaper: class c\d+: .*memory", r.out), r.out
