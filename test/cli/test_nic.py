"""What a real NIC needs from the port set-up (issue 29), on vdevs:
descriptor rings (--rxd/--txd), link state, NIC counters, NUMA."""
import re
import subprocess

from conftest import run_piped, shaper_cmd


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
