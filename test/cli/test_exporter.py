"""scripts/shaper-exporter: a running dpdk-shaper's telemetry as Prometheus
metrics, scraped by Debian's real prometheus server and queried with
PromQL; the answers are checked against telemetry and the stats file.

Only 127.0.0.1; every process is started here, bounded in time and
stopped by its pid."""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest

from conftest import NULL_VDEVS, PY, REPO, prefix, shaper_cmd, telemetry

EXPORTER = os.path.join(REPO, "scripts", "shaper-exporter")
PROMETHEUS = "/usr/bin/prometheus"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, fn, timeout=30, step=0.2):
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > end:
            pytest.fail("timed out waiting for %s" % what)
        time.sleep(step)


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode()
    except OSError:
        return None


def metrics(port):
    """{(sample name, frozenset(labels)): value} of the exporter's
    /metrics, None while it does not answer."""
    from prometheus_client.parser import text_string_to_metric_families
    text = http_get("http://127.0.0.1:%d/metrics" % port)
    if text is None:
        return None
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text)
            for s in fam.samples}


def m(ms, name, **labels):
    return ms[(name, frozenset((k, str(v)) for k, v in labels.items()))]


class Procs:
    """Processes started by a test, stopped by pid at the end."""

    def __init__(self):
        self.procs = []

    def start(self, cmd, **kw):
        p = subprocess.Popen(cmd, **kw)
        self.procs.append(p)
        return p

    def stop_all(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=10)


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.stop_all()


@pytest.fixture
def need_prometheus():
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        pytest.fail("python3-prometheus-client missing: "
                    "scripts/deps.sh --test")
    if not os.path.exists(PROMETHEUS):
        pytest.fail("%s missing (Debian package prometheus): "
                    "scripts/deps.sh --test" % PROMETHEUS)


def start_exporter(procs, tmp_path, file_prefix, sock=None):
    port = free_port()
    cmd = [PY, EXPORTER, "--file-prefix", file_prefix, "--listen",
           "127.0.0.1:%d" % port]
    if sock:
        cmd += ["--socket", sock]
    log = open(tmp_path / "exporter.log", "w")
    procs.start(cmd, stdout=log, stderr=subprocess.STDOUT)
    wait_for("the exporter", lambda: metrics(port) is not None)
    return port


def start_prometheus(procs, tmp_path, target_port):
    port = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n"
                   "  scrape_timeout: 1s\n"
                   "scrape_configs:\n"
                   "  - job_name: shaper\n"
                   "    static_configs:\n"
                   "      - targets: ['127.0.0.1:%d']\n" % target_port)
    log = open(tmp_path / "prometheus.log", "w")
    procs.start([PROMETHEUS, "--config.file", str(cfg),
                 "--storage.tsdb.path", str(tmp_path / "tsdb"),
                 "--web.listen-address", "127.0.0.1:%d" % port,
                 "--log.level", "warn"],
                stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path))
    wait_for("prometheus ready", lambda: http_get(
        "http://127.0.0.1:%d/-/ready" % port) is not None, timeout=60)
    return port


def promql(port, query):
    """Instant query: {frozenset(labels): value}."""
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        port, urllib.parse.urlencode({"query": query}))
    r = json.loads(http_get(url))
    assert r["status"] == "success", r
    return {frozenset((k, v) for k, v in s["metric"].items()
                      if k not in ("job", "instance", "__name__")):
            float(s["value"][1]) for s in r["data"]["result"]}


def one(res, **labels):
    return res[frozenset((k, str(v)) for k, v in labels.items())]


def test_prometheus_scrapes_exact_counters(tmp_path, procs,
                                           need_prometheus,
                                           need_telemetry_client):
    """Traffic through a lossy profile, then `stop`: once the counters
    are frozen, what prometheus scraped equals telemetry exactly, and the
    stats file written at `quit` has the same counts (what was queued at
    the stop is what quit flushes)."""
    fp = prefix()
    stats = tmp_path / "stats.json"
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--netem", "delay 2ms loss 5%",
                                  "--tbf", "rate 50mbit burst 32kb "
                                  "limit 64kb", "--stats-file", str(stats)],
                     file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        # the socket comes before the shaper's commands are registered
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        pr = start_prometheus(procs, tmp_path, ex)
        # a scrape while forwarding: the job is up and counting
        wait_for("a first scrape", lambda: promql(
            pr, 'shaper_tx_packets_total{port="1"} > 0'))

        shaper.stdin.write("stop\n")
        shaper.stdin.flush()

        def frozen():
            a = telemetry(fp, "/shaper/config", "/shaper/stats",
                          "/shaper/drops")
            if a[0]["global"]["forwarding"] != "stopped":
                return None
            time.sleep(0.3)
            b = telemetry(fp, "/shaper/config", "/shaper/stats",
                          "/shaper/drops")
            return b if a == b else None
        _, tstats, tdrops = wait_for("the counters to freeze", frozen)
        t_frozen = time.time()
        # a scrape that started after the counters froze
        wait_for("a scrape after the stop", lambda: any(
            v > t_frozen for v in promql(
                pr, "timestamp(shaper_tx_packets_total)").values()))

        q = {name: promql(pr, name) for name in (
            "shaper_rx_packets_total", "shaper_tx_packets_total",
            "shaper_rx_bytes_total", "shaper_tx_bytes_total",
            "shaper_egress_packets_total", "shaper_queued_packets",
            "shaper_netem_queued_packets", "shaper_forwarding")}
        drops = promql(pr, "shaper_dropped_packets_total")
        by_port = promql(pr, "sum by (port) (shaper_dropped_packets_total)")
        depth = promql(pr, "sum by (port) (shaper_band_depth_packets)")
        assert one(q["shaper_forwarding"]) == 0
        for p in ("0", "1"):
            s = tstats[p]
            for name, key in (("shaper_rx_packets_total", "rx_packets"),
                              ("shaper_tx_packets_total", "tx_packets"),
                              ("shaper_rx_bytes_total", "rx_bytes"),
                              ("shaper_tx_bytes_total", "tx_bytes"),
                              ("shaper_egress_packets_total", "egress_in"),
                              ("shaper_queued_packets", "queued"),
                              ("shaper_netem_queued_packets",
                               "netem_queued")):
                assert one(q[name], port=p) == s[key], (name, p)
            for cause, n in tdrops[p].items():
                assert one(drops, port=p, cause=cause) == n, (p, cause)
            assert one(by_port, port=p) == s["dropped"]
            assert one(depth, port=p) + s["netem_queued"] + \
                s["tx_pending"] == s["queued"]
        # the profile made drops of two causes, and something is queued
        assert one(drops, port="1", cause="lost") > 0
        assert one(drops, port="1", cause="tbf_limit") > 0
        assert one(q["shaper_queued_packets"], port="1") > 0

        lat = promql(pr, '{__name__=~"shaper_.*_seconds_count"}')
        cmds = telemetry(fp, "/")[0]
        if "/shaper/latency" in cmds:
            # once the shaper has latency histograms, each is exported
            seen = 0
            for p in ("0", "1"):
                h = telemetry(fp, "/shaper/latency,%s" % p)[0]
                h = h.get(p, h)
                for key, v in h.items():
                    # "P_NAME_ns", its "P_NAME_buckets" beside it
                    if key.endswith("_ns") and key[:-3] + "_buckets" in h:
                        name = key[len(p) + 1:-3]
                        got = promql(pr, "shaper_%s_seconds_count" % name)
                        assert one(got, port=p) == v["count"], (p, key)
                        seen += 1
            assert seen > 0
        else:
            assert lat == {}

        shaper.stdin.write("quit\n")
        shaper.stdin.flush()
        assert shaper.wait(timeout=30) == 0
        with open(stats) as f:
            fstats = json.load(f)["ports"]
        for p in ("0", "1"):
            f = fstats[p]
            for name, key in (("shaper_rx_packets_total", "rx_packets"),
                              ("shaper_tx_packets_total", "tx_packets"),
                              ("shaper_egress_packets_total", "egress_in")):
                assert one(q[name], port=p) == f[key], (name, p)
            for cause, n in f["drops"].items():
                if cause == "flushed":
                    # queued at the stop, freed at quit
                    assert n == one(q["shaper_queued_packets"], port=p)
                else:
                    assert one(drops, port=p, cause=cause) == n, (p, cause)
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_no_shaper_is_not_up(tmp_path, procs, need_prometheus):
    """Without a shaper the exporter still answers, with shaper_up 0 and
    nothing else, and says why on stderr."""
    fp = prefix()
    ex = start_exporter(procs, tmp_path, fp)
    ms = metrics(ex)
    assert m(ms, "shaper_up") == 0
    assert [k for k in ms if k[0].startswith("shaper_") and
            k[0] != "shaper_up"] == []
    procs.stop_all()
    log = (tmp_path / "exporter.log").read_text()
    assert "does not exist yet" in log and fp in log


# A telemetry server in the protocol of librte_telemetry (banner, then
# one JSON reply per command) that answers /shaper/latency in the nested
# shape the exporter also accepts, to check the histogram conversion on
# known numbers (the live test above checks the shaper's own reply).
LATENCY = {
    "sojourn_ns": {"count": 10, "min": 800, "p50": 2_000_000, "p99": 0,
                   "sum": 60_001_800,
                   # per-bucket counts: 1 at <= 1000 ns, 6 at <= 2.1 ms,
                   # 3 at <= 20 ms
                   "buckets": [[1000, 1], [2_100_000, 6],
                               [20_000_000, 3]]},
    "lateness_ns": {"count": 4, "min": 0, "mean": 250,
                    # cumulative counts are recognised too
                    "buckets": [[100, 2], [400, 3], [900, 4]]},
}
STATS = {"0": {"rx_packets": 5, "rx_bytes": 300, "tx_packets": 4,
               "tx_bytes": 240, "queued": 1, "egress_in": 5, "dropped": 0,
               "netem_queued": 1, "tx_pending": 0, "duplicated": 0,
               "corrupted": 0, "reordered": 0, "ecn_marked": 0}}


def fake_telemetry(path, with_latency, stats=None, drops=None, config=None,
                   capture=None):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(30)
    cmds = ["/", "/shaper/stats", "/shaper/drops", "/shaper/bands",
            "/shaper/config"] + (["/shaper/latency"] if with_latency else
                                 []) + (["/shaper/capture"] if capture else [])
    answers = {"/": cmds, "/shaper/stats": stats or STATS,
               "/shaper/drops": drops or {"0": {"lost": 0}},
               "/shaper/bands": {}, "/shaper/config": config or {},
               "/shaper/latency": LATENCY, "/shaper/capture": capture}

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            with c:
                c.send(json.dumps({"version": "fake", "pid": os.getpid(),
                                   "max_output_len": 16384}).encode())
                while True:
                    req = c.recv(1024).decode()
                    if not req:
                        break
                    cmd = req.split(",")[0]
                    val = answers.get(cmd) if cmd in cmds else None
                    c.send(json.dumps({cmd: val}).encode())
    threading.Thread(target=serve, daemon=True).start()
    return srv


@pytest.mark.parametrize("with_latency", [True, False],
                         ids=["latency", "no-latency"])
def test_latency_histograms(tmp_path, procs, need_prometheus, with_latency):
    sock = str(tmp_path / "tel.sock")
    srv = fake_telemetry(sock, with_latency)
    try:
        ex = start_exporter(procs, tmp_path, "unused", sock=sock)
        ms = metrics(ex)
    finally:
        srv.close()
    assert m(ms, "shaper_up") == 1
    assert m(ms, "shaper_tx_packets_total", port=0) == 4
    hist = {k: v for k, v in ms.items() if "_seconds" in k[0]}
    if not with_latency:
        assert hist == {}
        return
    s = "shaper_sojourn_seconds"
    # each bucket lands in the first 1-2-5 bound that holds its top
    assert m(ms, s + "_bucket", port=0, le="1e-06") == 1
    assert m(ms, s + "_bucket", port=0, le="0.002") == 1
    assert m(ms, s + "_bucket", port=0, le="0.005") == 7
    assert m(ms, s + "_bucket", port=0, le="0.01") == 7
    assert m(ms, s + "_bucket", port=0, le="0.02") == 10
    assert m(ms, s + "_bucket", port=0, le="+Inf") == 10
    assert m(ms, s + "_count", port=0) == 10
    assert m(ms, s + "_sum", port=0) == pytest.approx(0.0600018)
    s = "shaper_lateness_seconds"
    assert m(ms, s + "_bucket", port=0, le="1e-06") == 4
    assert m(ms, s + "_count", port=0) == 4
    assert m(ms, s + "_sum", port=0) == pytest.approx(1e-6)


@pytest.mark.parametrize("with_capture", [True, False],
                         ids=["capture", "no-capture"])
def test_capture_metrics(tmp_path, procs, need_prometheus, with_capture):
    """/shaper/capture as shaper_capture_* (none from a shaper without
    it)."""
    sock = str(tmp_path / "tel.sock")
    srv = fake_telemetry(sock, False, capture={
        "running": 1, "0": {"captured": 7, "capture_lost": 2},
        "1": {"captured": 0, "capture_lost": 5}} if with_capture else None)
    try:
        ex = start_exporter(procs, tmp_path, "unused", sock=sock)
        ms = metrics(ex)
    finally:
        srv.close()
    assert m(ms, "shaper_up") == 1
    if not with_capture:
        assert not [k for k in ms if k[0].startswith("shaper_capture")]
        return
    assert m(ms, "shaper_capture_running") == 1
    assert m(ms, "shaper_capture_captured_packets_total", port=0) == 7
    assert m(ms, "shaper_capture_lost_packets_total", port=0) == 2
    assert m(ms, "shaper_capture_lost_packets_total", port=1) == 5


def test_kinds_xstats_and_causes_without_knowing_kinds(tmp_path, procs,
                                                      need_prometheus):
    """A kind's statistics (telemetry KIND_NAME) and drop causes are
    exported for whatever kinds /shaper/config says the ports run: here
    one the exporter has never heard of ("fq_pie") beside fq_codel."""
    stats = {"0": dict(STATS["0"], fq_codel_new_flows=7,
                       fq_codel_flows_active=2, fq_codel_ecn_marked=3,
                       netem_queued=1, tbf_something=0),
             "1": dict(STATS["0"], fq_pie_drop_prob=42,
                       fq_codel_new_flows=0)}
    drops = {"0": {"lost": 0, "codel": 11, "fq_overlimit": 5},
             "1": {"lost": 0, "pie_early": 4}}
    config = {"global": {"forwarding": "started"},
              "0": {"peer": 1, "queue": "fq_codel limit 100",
                    "tbf": "rate 10Mbit burst 10240b limit 1048576b",
                    "netem": "off"},
              "1": {"peer": 0, "queue": "fq_pie", "tbf": "off",
                    "netem": "off"}}
    sock = str(tmp_path / "tel.sock")
    srv = fake_telemetry(sock, False, stats, drops, config)
    try:
        ex = start_exporter(procs, tmp_path, "unused", sock=sock)
        ms = metrics(ex)
    finally:
        srv.close()
    x = "shaper_kind_xstat"
    assert m(ms, x, port=0, kind="fq_codel", stat="new_flows") == 7
    assert m(ms, x, port=0, kind="fq_codel", stat="flows_active") == 2
    assert m(ms, x, port=0, kind="fq_codel", stat="ecn_marked") == 3
    # netem's queued is the port gauge shaper_netem_queued_packets
    assert m(ms, "shaper_netem_queued_packets", port=0) == 1
    assert m(ms, x, port=1, kind="fq_pie", stat="drop_prob") == 42
    assert m(ms, x, port=1, kind="fq_codel", stat="new_flows") == 0
    # the longest kind wins: fq_pie_drop_prob is not fq's "pie_drop_prob"
    assert not [k for k in ms if k[0] == x and ("stat", "pie_drop_prob")
                in k[1]]
    # the port's own counters are not a kind's
    assert not [k for k in ms if k[0] == x and ("stat", "packets") in k[1]]
    d = "shaper_dropped_packets_total"
    assert m(ms, d, port=0, cause="codel") == 11
    assert m(ms, d, port=0, cause="fq_overlimit") == 5
    assert m(ms, d, port=1, cause="pie_early") == 4
    prof = {k: v for k, v in ms.items() if k[0] == "shaper_port_profile"}
    labels = [dict(k[1]) for k in prof]
    assert {"port": "0", "queue": "fq_codel limit 100", "netem": "off",
            "tbf": "rate 10Mbit burst 10240b limit 1048576b"} in labels
    assert {"port": "1", "queue": "fq_pie", "tbf": "off",
            "netem": "off"} in labels


def test_fq_codel_port_exported_as_telemetry_says(tmp_path, procs,
                                                  need_prometheus,
                                                  need_telemetry_client):
    """A live shaper with fq_codel on port 1: once `stop` froze the
    counters, every fq_codel_* telemetry key of port 1 is exported as
    shaper_kind_xstat{kind="fq_codel"} with its value, the queue is in the
    profile labels, and fq_codel's causes are in the drops."""
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--queue-port", "1",
                                  "fq_codel target 2ms"], file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        shaper.stdin.write("stop\n")
        shaper.stdin.flush()

        def frozen():
            a = telemetry(fp, "/shaper/config", "/shaper/stats")
            if a[0]["global"]["forwarding"] != "stopped":
                return None
            time.sleep(0.3)
            b = telemetry(fp, "/shaper/config", "/shaper/stats")
            return b if a == b else None
        conf, tstats = wait_for("the counters to freeze", frozen)
        ms = metrics(ex)
        seen = 0
        for p in ("0", "1"):
            for key, v in tstats[p].items():
                if key.startswith("fq_codel_"):
                    assert m(ms, "shaper_kind_xstat", port=p,
                             kind="fq_codel",
                             stat=key[len("fq_codel_"):]) == v, (p, key)
                    seen += 1
        # port 0 runs pfifo_fast: telemetry leaves fq_codel's keys out
        # there (a kind's statistics only where it runs or counted)
        assert seen >= 7
        assert not any(k.startswith("fq_codel_") for k in tstats["0"])
        # forwarding ran on port 1 through fq_codel: buckets were used
        assert m(ms, "shaper_kind_xstat", port=1, kind="fq_codel",
                 stat="new_flows") > 0
        prof = [dict(k[1]) for k in ms if k[0] == "shaper_port_profile"]
        q1 = [x["queue"] for x in prof if x["port"] == "1"]
        assert q1 == [conf["1"]["queue"]] and "target 2ms" in q1[0], prof
        for cause in ("codel", "fq_overlimit", "inbox_full"):
            assert ("shaper_dropped_packets_total",
                    frozenset({("port", "1"), ("cause", cause)})) in ms
        shaper.stdin.write("quit\n")
        shaper.stdin.flush()
        assert shaper.wait(timeout=30) == 0
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_shards_exported_as_telemetry_says(tmp_path, procs,
                                           need_telemetry_client):
    """--queues 2 on net_null: once `stop` froze the counters, each
    shard's figures in /shaper/shards are exported under port and shard,
    exactly, and the shards' tx sum to the port's."""
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--queues", "2", "--netem",
                                  "loss 1%"], file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        shaper.stdin.write("stop\n")
        shaper.stdin.flush()

        def frozen():
            a = telemetry(fp, "/shaper/config", "/shaper/shards")
            if a[0]["global"]["forwarding"] != "stopped":
                return None
            time.sleep(0.3)
            b = telemetry(fp, "/shaper/config", "/shaper/shards")
            return b if a == b else None
        _, shards = wait_for("the counters to freeze", frozen)
        ms = metrics(ex)
        assert sorted(shards) == ["0_0", "0_1", "1_0", "1_1"]
        for key, s in shards.items():
            p, q = key.split("_")
            lab = dict(port=p, shard=q)
            assert m(ms, "shaper_shard_tx_packets_total", **lab) == \
                s["tx_packets"]
            assert m(ms, "shaper_shard_tx_bytes_total", **lab) == \
                s["tx_bytes"]
            assert m(ms, "shaper_shard_queued_packets", **lab) == s["queued"]
            assert m(ms, "shaper_shard_lcore", **lab) == s["lcore"]
            assert m(ms, "shaper_shard_dropped_packets_total", cause="lost",
                     **lab) == s["lost"]
            assert m(ms, "shaper_shard_sojourn_seconds", quantile="0.99",
                     **lab) == pytest.approx(s["sojourn_p99_ns"] / 1e9)
        for p in ("0", "1"):
            assert m(ms, "shaper_tx_packets_total", port=p) == sum(
                m(ms, "shaper_shard_tx_packets_total", port=p, shard=q)
                for q in ("0", "1"))
            assert m(ms, "shaper_shard_tx_packets_total", port=p,
                     shard="1") > 0
        assert m(ms, "shaper_shard_dropped_packets_total", port="1",
                 shard="0", cause="lost") > 0
        shaper.stdin.write("quit\n")
        shaper.stdin.flush()
        assert shaper.wait(timeout=30) == 0
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_listen_errors(tmp_path, need_prometheus):
    """A bad --listen and a port in use: one line, no server left."""
    p = subprocess.run([PY, EXPORTER, "--file-prefix", "x", "--listen",
                        "9105"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "ADDR:PORT" in p.stderr, p.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = subprocess.run([PY, EXPORTER, "--file-prefix", "x", "--listen",
                            "127.0.0.1:%d" % port], capture_output=True,
                           text=True, timeout=30)
    assert p.returncode == 1, p.stderr
    assert "cannot listen on 127.0.0.1:%d" % port in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1, p.stderr


# ---- many clients (issue 30 item 6) ----------------------------------------

def threads_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: in /proc/%d/status" % pid)


def scrape_raw(port, method="GET", path="/metrics", timeout=60):
    """(status line, {header: value}, body) of one request, read to EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Connection: close\r\n\r\n" % (method, path)).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return lines[0], hdrs, body


def live_shaper(procs, tmp_path):
    """A forwarding dpdk-shaper on net_null and its file prefix, once its
    telemetry socket exists."""
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i", "--netem", "delay 1ms"],
                     file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                         stderr=subprocess.STDOUT, text=True)
    sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
    wait_for("the telemetry socket", lambda: os.path.exists(sock))
    return shaper, fp


def test_concurrent_scrapes_all_see_the_shaper_up(tmp_path, procs,
                                                  need_prometheus):
    """100 scrapes at once of a running shaper: every one answers
    shaper_up 1 with the port counters (DPDK 22.11's telemetry takes
    about 10 clients at once: the exporter's reads must not each open
    one), and the exporter's threads do not grow with them."""
    from prometheus_client.parser import text_string_to_metric_families
    try:
        shaper, fp = live_shaper(procs, tmp_path)
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        pid = procs.procs[-1].pid
        before = threads_of(pid)
        n = 100
        go = threading.Barrier(n)
        got = [None] * n
        peak = [before]

        def one_scrape(i):
            go.wait()
            try:
                got[i] = scrape_raw(ex)
            except OSError as e:
                got[i] = e
        ts = [threading.Thread(target=one_scrape, args=(i,))
              for i in range(n)]
        for t in ts:
            t.start()
        while any(t.is_alive() for t in ts):
            peak[0] = max(peak[0], threads_of(pid))
            time.sleep(0.01)
        for t in ts:
            t.join()
        ups = []
        for r in got:
            assert not isinstance(r, Exception), r
            status, _, body = r
            assert status.split()[1] == "200", status
            ms = {(s.name, frozenset(s.labels.items())): s.value
                  for fam in text_string_to_metric_families(body.decode())
                  for s in fam.samples}
            ups.append(ms[("shaper_up", frozenset())])
            assert ("shaper_tx_packets_total",
                    frozenset({("port", "1")})) in ms or ups[-1] != 1
        assert ups == [1] * n, "%d of %d said shaper_up 0" % (
            ups.count(0), n)
        assert peak[0] <= before + 1, (before, peak[0])
        log = (tmp_path / "exporter.log").read_text()
        assert "Resource temporarily unavailable" not in log, log
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_idle_and_slow_clients_bounded_and_timed_out(tmp_path, procs,
                                                     need_prometheus):
    """300 clients that connect and send nothing, and 5 that send a
    request a byte every 0.3 s: the exporter's thread count stays what it
    was idle (/proc/PID/status Threads), a normal scrape is answered
    while they are open, and each of them is closed once the client
    timeout has passed (not before)."""
    timeout = 3.0
    try:
        shaper, fp = live_shaper(procs, tmp_path)
        port = free_port()
        log = open(tmp_path / "exporter.log", "w")
        ex = procs.start([PY, EXPORTER, "--file-prefix", fp, "--listen",
                          "127.0.0.1:%d" % port, "--client-timeout",
                          str(timeout)], stdout=log,
                         stderr=subprocess.STDOUT)
        wait_for("shaper_up 1", lambda: (metrics(port) or {}).get(
            ("shaper_up", frozenset())) == 1)
        idle_threads = threads_of(ex.pid)
        # each one's time runs from its connect: the first one's first
        t_first = time.monotonic()
        idle = []
        for _ in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            idle.append(s)
        slow = []
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            slow.append(s)
        t_open = time.monotonic()
        req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        stop = threading.Event()

        def dribble():
            for i in range(len(req)):
                for s in slow:
                    try:
                        s.send(req[i:i + 1])
                    except OSError:
                        pass
                if stop.wait(0.3):
                    return
        dr = threading.Thread(target=dribble)
        dr.start()
        try:
            time.sleep(0.5)
            # every one of them is open to the exporter now
            assert threads_of(ex.pid) == idle_threads, \
                (idle_threads, threads_of(ex.pid))
            t = time.monotonic()
            status, _, body = scrape_raw(port, timeout=timeout)
            assert status.split()[1] == "200", status
            assert b"\nshaper_up 1.0\n" in body, body[:300]
            assert time.monotonic() - t < timeout
            assert threads_of(ex.pid) == idle_threads

            def closed(s):
                s.setblocking(False)
                try:
                    while True:
                        b = s.recv(4096)
                        if not b:
                            return True
                except BlockingIOError:
                    return False
                except OSError:
                    return True
            # not before the timeout...
            assert time.monotonic() - t_first < timeout - 0.5
            assert not any(closed(s) for s in idle + slow)
            # ... and each once it has passed
            end = t_open + timeout + 5
            while time.monotonic() < end and \
                    not all(closed(s) for s in idle + slow):
                time.sleep(0.1)
            assert all(closed(s) for s in idle), \
                sum(not closed(s) for s in idle)
            assert all(closed(s) for s in slow)
            assert threads_of(ex.pid) == idle_threads
        finally:
            stop.set()
            dr.join()
            for s in idle + slow:
                s.close()
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_head_gets_headers_and_no_body(tmp_path, procs, need_prometheus):
    """HEAD /metrics: the status and headers a GET gets (its
    Content-Length and Content-Type), and no body."""
    fp = prefix()
    ex = start_exporter(procs, tmp_path, fp)   # no shaper: a fixed body
    gs, gh, gbody = scrape_raw(ex)
    hs, hh, hbody = scrape_raw(ex, method="HEAD")
    assert gs.split()[1] == hs.split()[1] == "200", (gs, hs)
    assert gbody and b"shaper_up 0.0" in gbody, gbody
    assert hbody == b"", hbody[:200]
    assert hh["content-type"] == gh["content-type"], (hh, gh)
    assert hh["content-type"].startswith("text/plain"), hh
    assert int(hh["content-length"]) == len(gbody) == \
        int(gh["content-length"]), (hh, gh, len(gbody))


def test_one_telemetry_connection_kept_and_remade(tmp_path, procs,
                                                  need_prometheus):
    """Against a telemetry server that counts its clients: scrapes reuse
    one connection; when the server closes it (a restart) the next scrape
    still answers shaper_up 1 on a new one; a server that closes its
    first clients at once (DPDK over its client limit) is retried."""
    path = str(tmp_path / "t.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(30)
    state = {"accepts": 0, "refuse": 0, "drop_after": None}
    answers = {"/": ["/", "/shaper/stats", "/shaper/drops",
                     "/shaper/bands", "/shaper/config"],
               "/shaper/stats": STATS, "/shaper/drops": {"0": {"lost": 0}},
               "/shaper/bands": {}, "/shaper/config": {}}

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            state["accepts"] += 1
            with c:
                if state["refuse"] > 0:
                    state["refuse"] -= 1
                    continue          # closed before the banner
                c.send(json.dumps({"version": "fake", "pid": os.getpid(),
                                   "max_output_len": 16384}).encode())
                n = 0
                while state["drop_after"] is None or \
                        n < state["drop_after"]:
                    req = c.recv(1024).decode()
                    if not req:
                        break
                    n += 1
                    c.send(json.dumps({req: answers.get(req)}).encode())
                state["drop_after"] = None
    threading.Thread(target=serve, daemon=True).start()
    try:
        ex = start_exporter(procs, tmp_path, prefix(), sock=path)
        for _ in range(5):
            assert m(metrics(ex), "shaper_up") == 1
        assert state["accepts"] == 1, state
        # the server drops the connection after the next 2 requests:
        # the scrape that meets it remakes it and reads again
        state["drop_after"] = 2
        for _ in range(3):
            assert m(metrics(ex), "shaper_up") == 1
        assert state["accepts"] == 2, state
        # next time, the first 3 clients are closed at once
        state["refuse"], state["drop_after"] = 3, 0
        assert m(metrics(ex), "shaper_up") == 1
        assert state["accepts"] == 2 + 1 + 3, state
        assert m(metrics(ex), "shaper_up") == 1
        assert state["accepts"] == 6, state
    finally:
        procs.stop_all()
        srv.close()


def test_link_state_exported(tmp_path, procs, need_prometheus,
                             need_telemetry_client):
    """Each port's link as telemetry says it: shaper_link_up{port},
    its speed and the changes since the start (issue 29)."""
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i"], file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        tstats, = telemetry(fp, "/shaper/stats")
        ms = metrics(ex)
        for p in ("0", "1"):
            assert tstats[p]["link_up"] == 1
            assert m(ms, "shaper_link_up", port=p) == 1
            assert m(ms, "shaper_link_speed_mbps", port=p) == 10000
            assert m(ms, "shaper_link_changes_total", port=p) == 0
        # not mistaken for a stage kind's statistic
        assert not [k for k in ms if k[0] == "shaper_kind_xstat" and
                    dict(k[1]).get("kind") == "link"]
        # `disable 1` (issue 61): shaper_disabled{port}
        assert m(ms, "shaper_disabled", port="1") == 0
        shaper.stdin.write("disable 1\n")
        shaper.stdin.flush()
        wait_for("shaper_disabled 1",
                 lambda: m(metrics(ex), "shaper_disabled", port="1") == 1)
        assert m(metrics(ex), "shaper_disabled", port="0") == 0
        shaper.stdin.write("quit\n")
        shaper.stdin.flush()
        assert shaper.wait(timeout=30) == 0
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_nic_xstats_exported(tmp_path, procs, need_prometheus,
                             need_telemetry_client):
    """Every NIC extended statistic of each port (DPDK's /ethdev/xstats,P)
    is served as shaper_nic_xstat{port,name} with its value, once `stop`
    froze the counters (issue 29)."""
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["-i"], file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        shaper = procs.start(cmd, stdin=subprocess.PIPE, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        ex = start_exporter(procs, tmp_path, fp)
        wait_for("shaper_up 1", lambda: m(metrics(ex), "shaper_up") == 1)
        shaper.stdin.write("stop\n")
        shaper.stdin.flush()

        def frozen():
            a = telemetry(fp, "/ethdev/xstats,0", "/ethdev/xstats,1")
            time.sleep(0.3)
            b = telemetry(fp, "/ethdev/xstats,0", "/ethdev/xstats,1")
            return b if a == b else None
        x = wait_for("the NIC counters to freeze", frozen)
        ms = metrics(ex)
        for p in (0, 1):
            assert x[p]["rx_good_packets"] > 0
            for name, v in x[p].items():
                key = ("shaper_nic_xstat",
                       frozenset({("port", str(p)), ("name", name)}))
                assert ms[key] == v, (p, name)
        shaper.stdin.write("quit\n")
        shaper.stdin.flush()
        assert shaper.wait(timeout=30) == 0
    finally:
        procs.stop_all()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_malformed_requests_answered(tmp_path, procs, need_prometheus):
    """Every malformed request gets its own answer and nothing else: a GET
    carrying a body (which would run as the next request), a bad
    Content-Length, half a request then a half-close."""
    ex = start_exporter(procs, tmp_path, prefix())   # no shaper needed

    def raw(data):
        with socket.create_connection(("127.0.0.1", ex), timeout=30) as s:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
            out = b""
            while True:
                b = s.recv(65536)
                if not b:
                    return out
                out += b

    def codes(out):
        return [l.split()[1] for l in out.split(b"\r\n")
                if l.startswith(b"HTTP/1.")]
    inner = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    out = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n"
              b"\r\n" % len(inner) + inner)
    assert codes(out) == [b"400"], out
    out = raw(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n"
              b"\r\n")
    assert codes(out) == [b"400"], out
    out = raw(b"GET /metrics HTTP/1.1\r\nHost:")
    assert codes(out) == [b"400"], out
    out = raw(inner)      # whole, then a half-close: answered
    assert codes(out) == [b"200"] and b"shaper_up 0.0" in out, out
