"""What a real NIC needs from the port set-up (issue 29), on vdevs:
descriptor rings (--rxd/--txd), link state, NIC counters, NUMA."""
import json
import re
import signal
import subprocess
import time

from conftest import (NULL_VDEVS, clean, outputs, prefix, run_piped, shaper_cmd,
                      telemetry, wait_started)


def start_line_mbufs(out):
    m = re.search(r"dpdk-shaper: \d+ ports?, bands \d+, mbufs (\d+)", out)
    assert m, out
    return int(m.group(1))


def refused(args, timeout=60):
    p = subprocess.run(shaper_cmd(["net_null0", "net_null1"], args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, [l for l in p.stderr.splitlines()
                                    if l.startswith("dpdk-shaper")]


def test_rxd_txd_applied_and_counted_in_the_pool(tmp_path):
    base = run_piped(tmp_path, ["quit"])
    assert base.rc == 0, base.out
    for port in (0, 1):
        assert ("port %d (net_null): 1 RX queue of 1024 descriptors, "
                "1 TX queue of 1024" % port) in base.out, base.out
    r = run_piped(tmp_path, ["quit"], app_args=["--rxd", "4096",
                                                "--txd", "512"])
    assert r.rc == 0, r.out
    for port in (0, 1):
        assert ("port %d (net_null): 1 RX queue of 4096 descriptors, "
                "1 TX queue of 512" % port) in r.out, r.out
    # the default pool holds every port's rings: 2 ports, 3072 - 512 more
    assert start_line_mbufs(r.out) - start_line_mbufs(base.out) == \
        2 * (4096 - 1024 + 512 - 1024)


def test_rxd_txd_from_the_ini_file(tmp_path):
    ini = tmp_path / "p.ini"
    ini.write_text("[global]\nrxd = 2048\ntxd = 128\n")
    r = run_piped(tmp_path, ["quit"], app_args=["--config", str(ini)])
    assert r.rc == 0, r.out
    assert "1 RX queue of 2048 descriptors, 1 TX queue of 128" in r.out


def test_rxd_txd_zero_or_too_large_refused():
    for args, word in ((["--rxd", "0"], "--rxd"), (["--txd", "0"], "--txd"),
                       (["--rxd", "65536"], "--rxd"),
                       (["--txd", "x"], "--txd")):
        rc, out, err = refused(args)
        assert rc == 2, (args, out, err)
        assert len(err) == 1 and word in err[0], (args, err)


LINK_LINE = r"dpdk-shaper: port %d \(net_null\): link up 10 Gbps full-duplex, mtu 1500"


def test_link_awaited_printed_and_reported(tmp_path):
    """vdevs are up at once: the default --link-wait costs nothing, each
    port's speed, duplex and MTU are printed, and `show port info`, the
    stats file say the link, with no change since the start."""
    t0 = time.monotonic()
    r = run_piped(tmp_path, ["show port info", "show port info 1",
                             "show port info 9", "quit"])
    assert r.rc == 0, r.out
    for port in (0, 1):
        assert re.search(LINK_LINE % port, r.out), r.out
    o = outputs(r.out)
    info = o["show port info"][0]
    for port in (0, 1):
        assert ("port %d (net_null): link up 10 Gbps full-duplex, mtu 1500"
                % port) in info, info
    assert info.count("link changes: 0  last change: never") == 2, info
    assert "port 1 (net_null)" in o["show port info 1"][0]
    assert "port 0" not in o["show port info 1"][0]
    assert o["show port info 9"][0].startswith("error: show port info: "
                                               "no port '9'")
    for port in ("0", "1"):
        assert r.stats["ports"][port]["link"] == {
            "up": True, "speed_mbps": 10000, "full_duplex": True,
            "changes": 0}
    # up at once: far less than the 5 s --link-wait default
    assert time.monotonic() - t0 < 30


def test_link_wait_option():
    rc, out, err = refused(["--link-wait", "soon"])
    assert rc == 2 and len(err) == 1 and "--link-wait" in err[0], err


def test_link_in_telemetry(need_telemetry_client):
    fp = prefix()
    p = subprocess.Popen(shaper_cmd(NULL_VDEVS, ["--link-wait", "0"],
                                    file_prefix=fp),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_started(p)
        stats, = telemetry(fp, "/shaper/stats")
        for port in ("0", "1"):
            assert stats[port]["link_up"] == 1
            assert stats[port]["link_speed_mbps"] == 10000
            assert stats[port]["link_changes"] == 0
    finally:
        p.send_signal(signal.SIGTERM)
        rest = p.communicate(timeout=30)[0].decode()
    assert p.returncode == 0
    # after the start line: each port's rings and link
    assert re.search(LINK_LINE % 1, rest), rest


def test_show_port_xstats_and_stats_file(tmp_path):
    """`show port xstats P` lists the NIC's non-zero extended statistics,
    `all` every one; the stats file has them all by name."""
    r = run_piped(tmp_path, ["show port xstats 0", "show port xstats 0 all",
                             "show port xstats all", "show port xstats 5",
                             "quit"])
    assert r.rc == 0, r.out
    o = outputs(r.out)

    def rows(text):
        return {k: int(v) for k, v in
                re.findall(r"^  (\w+) +(\d+)$", text, re.M)}
    nz, every = rows(o["show port xstats 0"][0]), rows(
        o["show port xstats 0 all"][0])
    # net_null forwarded: it counts packets, not bytes (copy=1 aside)
    assert nz["rx_good_packets"] > 0 and nz["tx_good_packets"] > 0, nz
    assert all(v != 0 for v in nz.values()), nz
    assert set(nz) < set(every), (nz, every)
    assert "rx_missed_errors" in every and "rx_missed_errors" not in nz
    assert o["show port xstats all"][0].startswith(
        "error: show port xstats: give one port")
    assert o["show port xstats 5"][0].startswith(
        "error: show port xstats: no port '5'")
    for port in ("0", "1"):
        x = r.stats["ports"][port]["nic"]["xstats"]
        assert set(x) == set(every), x
        assert all(isinstance(v, int) for v in x.values())
        # counted to the end: at least what the prompt saw earlier
        if port == "0":
            assert x["rx_good_packets"] >= nz["rx_good_packets"]
        assert x["rx_good_packets"] == r.stats["ports"][port]["rx_packets"]


def test_lcore_sockets(tmp_path):
    """`show lcores` and the stats file say each lcore's NUMA socket (as
    the EAL's own lcore list does); vdevs are of no socket, so no worker
    is warned about serving a port on another one."""
    eal = subprocess.run(["lscpu", "-p=CPU,NODE"], stdout=subprocess.PIPE,
                         text=True).stdout
    node = {int(c): int(n or 0) for c, n in
            re.findall(r"^(\d+),(\d*)$", eal, re.M)}
    p = subprocess.run(shaper_cmd(NULL_VDEVS, ["-i", "--stats-file",
                                               str(tmp_path / "s.json")]),
                       input="show lcores\nquit\n", stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    o = outputs(clean(p.stdout))
    lines = o["show lcores"][0]
    assert re.search(r"^lcore 0: main .*, socket %d$" % node[0], lines,
                     re.M), lines
    assert re.search(r"^lcore 1: rx\+tx, socket %d," % node[1], lines,
                     re.M), lines
    doc = json.load(open(tmp_path / "s.json"))
    assert doc["lcores"]["1"]["socket"] == node[1]
    assert "is on socket" not in p.stderr, p.stderr
