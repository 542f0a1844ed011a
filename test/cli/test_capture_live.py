"""The drop capture of a live shaper (issue 60) on net_null: the workers
hand each dropped frame to the main lcore, which writes the pcapng file;
what it could not keep is counted (capture_lost), and captured +
capture_lost is every drop counted while it ran. Commands, the REST API
and bad input."""
import collections
import json
import os
import subprocess
import sys
import time

import pytest

from conftest import outputs, run_piped, shaper_cmd, telemetry
from test_api import api  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
import pcapng_read  # noqa: E402


def tshark(path):
    proc = subprocess.run(["tshark", "-r", str(path), "-T", "fields",
                           "-e", "frame.comment", "-e", "frame.time_epoch"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [l.split("\t") for l in proc.stdout.splitlines()]


def test_live_capture_counts_every_drop(live, tmp_path,
                                        need_telemetry_client):
    """net_null at full speed, `delay 10ms loss 1%`, `--capture-drops`
    with a 1mb limit, 10 s (the issue's run): tshark reads the file; for each port captured
    + capture_lost == the drops counted while the capture ran (all but
    what is flushed at exit, after it), and the file holds the captured
    ones, stamped within the run by the wall clock."""
    path = tmp_path / "drops.pcapng"
    t0 = time.time()
    lv = live(["--netem", "delay 10ms loss 1%", "--capture-drops", str(path),
               "--capture-limit", "1mb"])
    time.sleep(10)
    rc, out, _ = lv.ctl("show", "capture")
    assert rc == 0 and "drop capture: running" in out, out
    tel = telemetry(lv.prefix, "/shaper/capture")[0]
    assert tel["running"] == 1 and tel["0"]["captured"] > 0, tel
    st = lv.stop()
    t1 = time.time()
    rows = tshark(path)
    assert 0 < os.path.getsize(path) <= 1 << 20
    captured = 0
    for p, port in st["ports"].items():
        c = port["capture"]
        dropped = sum(n for k, n in port["drops"].items() if k != "flushed")
        assert c["captured"] + c["capture_lost"] == dropped > 0, (p, port)
        captured += c["captured"]
    assert len(rows) == captured > 0
    by_cause = collections.Counter(r[0].split()[0] for r in rows)
    assert by_cause["cause=lost"] > 0, by_cause
    for comment, when in rows:
        f = pcapng_read.comment_fields(comment)
        drops = st["ports"][f["port"]]["drops"]
        assert drops[f["cause"]] > 0, comment
        # (the start's and the stop's own times: a little slack)
        assert t0 - 0.5 <= float(when) <= t1 + 0.5, (when, t0, t1)


def test_capture_commands_and_refusals(tmp_path):
    """start, stop and show; a second start while one runs, a file that
    exists or cannot be written, snaplen 0 or above 65535, a stop with
    none running: each one line `error: ...`, nothing changed (no file
    made, the running capture goes on)."""
    d = tmp_path
    r = run_piped(tmp_path, [
        "capture drops start %s/a.pcapng snaplen 64" % d,
        "capture drops start %s/b.pcapng" % d,
        "show capture",
        "capture drops stop",
        "capture drops stop",
        "capture drops start /nonexistent/dir/c.pcapng",
        "capture drops start %s/c.pcapng snaplen 0" % d,
        "capture drops start %s/c.pcapng snaplen 65536" % d,
        "capture drops start %s/c.pcapng limit 12" % d,
        "capture drops start %s/c.pcapng bogus 1" % d,
        "capture drops start %s/a.pcapng" % d,
        "show capture",
    ], app_args=["--netem", "loss 5%"])
    errs = r.errors()
    assert len(errs) == 8, r.out
    for e, word in zip(errs, ["runs already", "no drop capture runs",
                              "/nonexistent/dir/c.pcapng", "1..65535",
                              "1..65535", "limit", "bogus", "exists"]):
        assert word in e, (word, e)
    assert "drop capture: running, to %s/a.pcapng, snaplen 64" % d in r.out
    shown = outputs(r.out)["show capture"]
    assert shown[0].startswith("drop capture: running"), shown
    assert shown[1].startswith("drop capture: stopped"), shown
    assert not os.path.exists(d / "b.pcapng")
    assert not os.path.exists(d / "c.pcapng")
    got = pcapng_read.read(d / "a.pcapng")
    assert all(len(data) <= 64 for _, _, _, data, _ in got)
    assert sum(p["capture"]["captured"] for p in r.stats["ports"].values()) \
        == len(got)


@pytest.mark.parametrize("args,word", [
    (["--capture-drops", "/nonexistent/dir/d.pcapng"], "/nonexistent"),
    (["--capture-snaplen", "0"], "1..65535"),
    (["--capture-snaplen", "70000"], "1..65535"),
    (["--capture-limit", "1k"], "limit"),
    (["--packet-log", "/nonexistent/dir/l.csv"], "/nonexistent"),
    (["--packet-log-sample", "0"], "1..1000000000"),
    (["--packet-log-sample", "x"], "1..1000000000"),
])
def test_capture_options_refused_before_the_eal(args, word):
    """exit 2, one line naming the option's value, before the EAL."""
    p = subprocess.run(shaper_cmd(["net_null0,copy=1", "net_null1,copy=1"],
                                  args), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and word in lines[0], p.stderr


def test_capture_through_rest(live, api, tmp_path, need_telemetry_client):
    """POST /v1/capture/drops starts it, GET /v1/capture says so, a second
    POST is 409, DELETE stops it; bad bodies are 400 and start nothing."""
    lv = live(["--netem", "loss 5%"])
    a = api(lv.prefix)
    path = str(tmp_path / "rest.pcapng")
    for bad in ({"file": 5}, {"file": "a b"}, {"file": path, "snaplen": 0},
                {"file": path, "snaplen": "64"}, {"file": path,
                                                  "limit": "1 mb"}):
        st, r = a.req("POST", "/v1/capture/drops", bad)
        assert st == 400 and "error" in r, (bad, st, r)
    assert not os.path.exists(path)
    st, r = a.req("POST", "/v1/capture/drops",
                  {"file": path, "snaplen": 96, "limit": "2mb"})
    assert st == 200 and "started" in r["output"], r
    st, r = a.req("POST", "/v1/capture/drops", {"file": path + "x"})
    assert st == 409, (st, r)
    time.sleep(0.5)
    st, r = a.req("GET", "/v1/capture")
    assert st == 200 and r["running"] == 1, r
    st, r = a.req("DELETE", "/v1/capture/drops")
    assert st == 200 and "stopped" in r["output"], r
    st, got = a.req("GET", "/v1/capture")
    assert got["running"] == 0 and got["0"]["captured"] > 0, got
    st, r = a.req("DELETE", "/v1/capture/drops")
    assert st == 409, (st, r)
    assert len(pcapng_read.read(path)) == sum(
        v["captured"] for v in got.values() if isinstance(v, dict))
    lv.stop()


LOG_HEADER = ("index,arrival_ns,port,shard,class,band,fate,departure_ns,"
              "sojourn_ns,dropped_ns,duplicated,corrupted,reordered,"
              "ecn_marked")


def test_live_packet_log_samples_every_fate(live, tmp_path):
    """`--packet-log F --packet-log-sample 50` on net_null, `delay 10ms
    loss 5%`, 3 s: the offline log's header; one fate in 50 logged
    (lines + capture_lost, the sample's fates the log could not keep,
    are the run's sent and dropped but flushed, over 50); a sent line's
    sojourn is its departure - arrival, 10 ms or more; a drop's cause is
    one the stats file counts, at or after its arrival."""
    path = tmp_path / "log.csv"
    lv = live(["--netem", "delay 10ms loss 5%", "--packet-log", str(path),
               "--packet-log-sample", "50"])
    time.sleep(3)
    st = lv.stop()
    lines = path.read_text().splitlines()
    assert lines[0] == LOG_HEADER
    rows = [l.split(",") for l in lines[1:]]
    fates = lost = 0
    for port in st["ports"].values():
        fates += port["tx_packets"] + sum(
            n for k, n in port["drops"].items() if k != "flushed")
        lost += port["capture"]["capture_lost"]
    assert len(rows) > 100
    assert abs(len(rows) + lost - fates / 50) <= fates / 50 * 0.01 + 10, \
        (len(rows), lost, fates)
    seen = collections.Counter(r[6] for r in rows)
    assert seen["sent"] > 0 and seen["lost"] > 0, seen
    for r in rows:
        assert len(r) == 14 and r[0] == "" and r[2] in st["ports"], r
        if r[6] == "sent":
            assert int(r[7]) - int(r[1]) == int(r[8]) >= 10_000_000, r
        else:
            assert st["ports"][r[2]]["drops"][r[6]] > 0, r
            assert int(r[9]) >= int(r[1]), r
