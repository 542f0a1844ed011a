"""A delay limit larger than the pool can carry (issue 30, defect 3): the
change is capped to the port's share of the pool and says so, the port's
delay stages (its own and its classes') drop beyond it as `pool_share`,
and the other direction keeps flowing; nothing is lost uncounted and the
pool is full at exit. (`store off`: 64-byte frames would otherwise wait
in netem's byte store, issue 25, holding no mbufs: the pool is then not
what bounds them.) A burst RX could not fill because the pool was
empty is counted as `rx_pool_empty`."""
import io
import json
import re
import time

import pytest

from conftest import NULL_VDEVS, shaper_cmd

pexpect = pytest.importorskip("pexpect")
from pexpect.popen_spawn import PopenSpawn  # noqa: E402


def stats_of(c, port):
    c.sendline("show port stats %d" % port)
    c.expect(r"rx_packets: (\d+)")
    rx = int(c.match.group(1))
    c.expect(r"tx_packets: (\d+)")
    tx = int(c.match.group(1))
    return rx, tx


def run(tmp_path, change, app_args=()):
    """Forward net_null at full rate, make `change` (None: none), then
    read the untouched direction (port 1 -> port 0) twice, a second
    apart, while the delay stage holds what it took (3 s delay)."""
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--stats-file", str(stats)] +
                     list(app_args))
    c = PopenSpawn(cmd, encoding="utf-8", timeout=60)
    c.logfile_read = io.StringIO()     # all of it, for the exit checks
    c.expect(r"dpdk-shaper: \d+ ports?, ")
    time.sleep(0.5)
    reply = ""
    if change is not None:
        c.sendline(change)
        c.sendline("show netem 1")
        c.expect(r"netem_queued")
        reply = c.before
    time.sleep(1.0)      # the delay line is full by now (3 s delay)
    a = stats_of(c, 1)[0], stats_of(c, 0)[1]
    time.sleep(1.0)
    b = stats_of(c, 1)[0], stats_of(c, 0)[1]
    c.sendline("quit")
    c.expect(pexpect.EOF)
    rc = c.wait()
    out = c.logfile_read.getvalue()
    return rc, out, reply, a, b, json.load(open(stats))["ports"]


def check_exit(rc, out, st):
    # the pool full at exit (a leak fails the run) and nothing uncounted
    assert rc == 0, out[-2000:]
    assert "mbuf leak" not in out
    for p in st.values():
        assert (p["egress_in"] + p["duplicated"] ==
                p["tx_packets"] + sum(p["drops"].values()) + p["queued"]), p
        assert "rx_pool_empty" in p


def flowing(a, b):
    """The untouched direction moved: port 1 received and port 0 sent
    in the second between a and b."""
    return b[0] - a[0] > 1000 and b[1] - a[1] > 1000


@pytest.mark.parametrize("change", [
    "set netem 1 delay 3s limit 5000000 store off",
    "set class big match 'eth_type 0x0000' ports 1 "
    "netem 'delay 3s limit 5000000'",
])
def test_limit_above_pool_is_capped_and_starves_nothing(tmp_path, change):
    rc, out, reply, a, b, st = run(tmp_path, change)
    # the other direction was never starved of mbufs
    assert flowing(a, b), (a, b)
    check_exit(rc, out, st)
    m = re.search(r"limit 5000000 capped to (\d+)", reply)
    assert m, reply
    cap = int(m.group(1))
    assert "pool_share" in reply
    assert cap < 45000
    # the port's delay stages stopped at the cap, the excess counted
    assert st["1"]["drops"].get("pool_share", 0) > 0, st["1"]["drops"]
    assert st["0"]["drops"].get("pool_share", 0) == 0


def test_default_limits_leave_rx_its_mbufs(tmp_path):
    """netem's default limit (half the pool) on both ports would take the
    whole pool between them: each stays within its port's share, so both
    ports keep receiving (what exceeds the share is counted)."""
    rc, out, reply, a, b, st = run(tmp_path,
                                   "set netem all delay 3s store off")
    # received on port 1 (a[0], b[0]) kept growing: RX had mbufs
    assert b[0] - a[0] > 1000, (a, b)
    check_exit(rc, out, st)
    for p in ("0", "1"):
        assert st[p]["rx_pool_empty"] == 0, st[p]
        assert st[p]["drops"]["netem_limit"] > 0, st[p]["drops"]


def test_rx_pool_empty_counted(tmp_path):
    """A pool too small for what the queues hold (--mbufs warns): net_null
    returns nothing and counts nothing; RX counts the bursts it could not
    fill as rx_pool_empty."""
    rc, out, reply, a, b, st = run(
        tmp_path, None, ["--mbufs", "1024", "--ring-size", "2048",
                         "--tbf", "rate 1mbit burst 10kb latency 10s"])
    check_exit(rc, out, st)
    assert "rx_pool_empty" in out.split("--mbufs 1024")[1][:200]
    for q in st.values():
        assert q["rx_pool_empty"] > 0, q
        assert q["nic"]["rx_nombuf"] == 0    # what the PMD leaves out


@pytest.mark.parametrize("how", ["option", "ini"])
def test_start_limit_above_mbufs_is_capped(tmp_path, how):
    """The same rule at start: --mbufs too small for the profile's limit
    is warned about (as before) and the limit capped, saying so."""
    if how == "option":
        prof = ["--netem-port", "1", "delay 3s limit 5000000 store off"]
    else:
        ini = tmp_path / "p.ini"
        ini.write_text("[port 1]\nnetem = delay 3s limit 5000000 "
                       "store off\n")
        prof = ["--config", str(ini)]
    rc, out, reply, a, b, st = run(tmp_path, None,
                                   ["--mbufs", "40000"] + prof)
    assert flowing(a, b), (a, b)
    check_exit(rc, out, st)
    assert re.search(r"warning: port 1: netem limit 5000000 capped to "
                     r"\d+", out), out[:3000]
    assert st["1"]["drops"].get("pool_share", 0) > 0


def test_schedule_limit_above_pool_starves_nothing(tmp_path):
    """A schedule's change is bound the same way (by the stages)."""
    sched = tmp_path / "s"
    sched.write_text("0.3s set netem 1 delay 3s limit 5000000 store off\n")
    rc, out, reply, a, b, st = run(tmp_path, None,
                                   ["--schedule", str(sched)])
    assert flowing(a, b), (a, b)
    check_exit(rc, out, st)
    assert st["1"]["drops"].get("pool_share", 0) > 0, st["1"]["drops"]


def test_share_is_the_links_on_shards(tmp_path):
    """--queues 2 (issue 56): the port's share of the pool is its link's,
    not split over its shards: the limit is capped to the port's share,
    no less than on one queue (the pool of 2 shards is larger: more
    rings), where it was capped to half of it, a shard's, and the link's
    delay stages hold it together (a shard alone may hold all of it:
    test_netem_link.c's test_share_is_the_links on a virtual clock)."""
    change = "set netem 1 delay 3s limit 5000000 store off"
    caps = {}
    for q in (1, 2):
        rc, out, reply, a, b, st = run(tmp_path, change,
                                       ["--queues", str(q)])
        assert flowing(a, b), (q, a, b)
        check_exit(rc, out, st)
        m = re.search(r"limit 5000000 capped to (\d+)", reply)
        assert m, reply
        caps[q] = int(m.group(1))
        assert st["1"]["drops"].get("pool_share", 0) > 0, st["1"]["drops"]
        if q == 2:
            assert len(st["1"]["shards"]) == 2, st["1"]
    print("capped to %d on one queue, %d on 2 shards" % (caps[1], caps[2]))
    assert caps[2] >= caps[1], caps
