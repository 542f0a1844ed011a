"""docs/grafana/dpdk-shaper.json queries only what scripts/shaper-exporter
emits: every PromQL expression of the dashboard is read token by token,
each metric name it names must be a sample name of a scrape of the
exporter on a running shaper (net_null, two shards a port, a class, netem),
and each label it matches or groups by a label of those metrics.

Only 127.0.0.1; every process is started here, bounded in time and
stopped by its pid."""
import copy
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import NULL_VDEVS, REPO, prefix, shaper_cmd
from test_exporter import http_get, start_exporter, wait_for

DASHBOARD = os.path.join(REPO, "docs", "grafana", "dpdk-shaper.json")

# PromQL (Prometheus 2.x): functions, aggregation operators, keywords
FUNCTIONS = set("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time
ceil changes clamp clamp_max clamp_min cos cosh count_over_time
day_of_month day_of_week day_of_year days_in_month deg delta deriv exp
floor histogram_quantile holt_winters hour idelta increase irate
label_join label_replace last_over_time ln log10 log2 max_over_time
min_over_time minute month pi predict_linear present_over_time
quantile_over_time rad rate resets round scalar sgn sin sinh sort
sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh
time timestamp vector year
""".split())
AGGREGATIONS = set("""avg bottomk count count_values group max min quantile
stddev stdvar sum topk""".split())
# followed by a parenthesised list of label names
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left",
               "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![\w:]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<punct>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],@])
""", re.X)


class PromQLError(ValueError):
    pass


def tokens(expr):
    """[(kind, text)] of a PromQL expression, Grafana's $variables taken
    as what they stand for in a range ([$__rate_interval]) or a string."""
    expr = re.sub(r"\$\{?\w+\}?", "1m", expr)
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if m is None:
            raise PromQLError("cannot read %r at %d" % (expr[pos:], pos))
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    return out


def names(expr):
    """(metrics, matched, grouped) of a PromQL expression: the metric names
    it selects, {metric: labels its matchers name}, and the label names of
    its by/without/on/ignoring/group_* lists. An identifier that is
    neither a metric (a selector) nor a known function, operator or
    keyword raises PromQLError, so a misspelt name never passes as a
    label or a function."""
    toks = tokens(expr)
    metrics, matched, grouped = set(), {}, set()
    i = 0

    def expect(k, text):
        if k >= len(toks) or toks[k][1] != text:
            raise PromQLError("%r: %r expected at token %d" % (expr, text, k))

    def label_block(k, close):
        """Label names up to the bracket that closes the one at k-1."""
        labels = set()
        while k < len(toks) and toks[k][1] != close:
            kind, text = toks[k]
            if kind == "ident":
                labels.add(text)
            elif kind not in ("string", "punct"):
                raise PromQLError("%r: %r in a label list" % (expr, text))
            k += 1
        expect(k, close)
        return labels, k + 1

    depth = 0
    operand = False     # the last token ends an operand: an operator next
    while i < len(toks):
        kind, text = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "punct" and text == "[":
            # a range or a subquery's [range:step]: durations only
            i += 1
            while i < len(toks) and toks[i][1] != "]":
                if toks[i][0] not in ("duration", "number") and \
                        toks[i][1] != ":":
                    raise PromQLError("%r: %r in a range" % (expr,
                                                            toks[i][1]))
                i += 1
            expect(i, "]")
            i += 1
            operand = True
        elif kind == "punct" and text == "{":
            raise PromQLError("%r: a selector without a metric name" % expr)
        elif kind != "ident":
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
                if depth < 0:
                    raise PromQLError("%r: unbalanced )" % expr)
            operand = kind in ("number", "string", "duration") or text == ")"
            i += 1
        elif text in LABEL_LISTS:
            expect(i + 1, "(")
            labels, i = label_block(i + 2, ")")
            grouped |= labels
            operand = False
        elif text in AGGREGATIONS or text in FUNCTIONS:
            if nxt not in ("(", "by", "without"):
                raise PromQLError("%r: %s is not followed by its "
                                  "arguments" % (expr, text))
            i += 1
            operand = False
        elif text.lower() in KEYWORDS:
            i += 1
            operand = False
        elif nxt == "(":
            raise PromQLError("%r: unknown function %s" % (expr, text))
        elif operand:
            raise PromQLError("%r: %s where an operator belongs" % (expr,
                                                                   text))
        else:
            metrics.add(text)
            matched.setdefault(text, set())
            i += 1
            if i < len(toks) and toks[i][1] == "{":
                labels, i = label_block(i + 1, "}")
                matched[text] |= labels
            operand = True
    if depth:
        raise PromQLError("%r: unbalanced (" % expr)
    return metrics, matched, grouped


def dashboard_queries(dash):
    """Every PromQL expression of the dashboard (panel targets, rows'
    panels too) and the template variables' label_values(METRIC, LABEL)."""
    exprs, label_values = [], []

    def walk(o):
        if isinstance(o, dict):
            if isinstance(o.get("expr"), str):
                exprs.append(o["expr"])
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(dash.get("panels", []))
    for var in dash["templating"]["list"]:
        q = var.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if var["type"] == "query":
            m = re.fullmatch(r"\s*label_values\(\s*([A-Za-z_:][\w:]*)\s*,"
                             r"\s*(\w+)\s*\)\s*", q or "")
            if m is None:
                raise PromQLError("variable %s: %r is not "
                                  "label_values(METRIC, LABEL)" %
                                  (var["name"], q))
            label_values.append(m.groups())
    return exprs, label_values


def problems(dash, emitted):
    """What the dashboard asks for that the scrape (emitted: {sample name:
    set of its labels}) does not have, one line each."""
    out = []
    try:
        exprs, label_values = dashboard_queries(dash)
    except PromQLError as e:
        return [str(e)]
    for metric, label in label_values:
        if metric not in emitted:
            out.append("label_values: no metric %s" % metric)
        elif label not in emitted[metric]:
            out.append("label_values: %s has no label %s" % (metric, label))
    for e in exprs:
        try:
            metrics, matched, grouped = names(e)
        except PromQLError as err:
            out.append(str(err))
            continue
        if not metrics:
            out.append("%r selects no metric" % e)
        for m in sorted(metrics):
            if m not in emitted:
                out.append("%r: the exporter emits no %s" % (e, m))
                continue
            for lab in sorted(matched[m] - emitted[m]):
                out.append("%r: %s has no label %s" % (e, m, lab))
        have = set().union(*(emitted.get(m, set()) for m in metrics))
        for lab in sorted(grouped - have):
            out.append("%r: no metric of it has the label %s" % (e, lab))
    return out


def scrape(port):
    """{sample name: its label names} of one scrape of /metrics."""
    from prometheus_client.parser import text_string_to_metric_families
    text = http_get("http://127.0.0.1:%d/metrics" % port)
    assert text is not None, "the exporter does not answer"
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def test_reader_is_exact():
    """The reader finds metrics and only metrics: names inside strings,
    matchers, ranges and label lists are not taken for metrics, and an
    unknown function or a stray identifier is an error, not a pass."""
    m, matched, grouped = names(
        'histogram_quantile(0.99, sum by (port, le) (rate('
        'shaper_sojourn_seconds_bucket{port=~"$port", x!="rate"}'
        '[$__rate_interval]))) / on (port) group_left(cause) '
        'shaper_up offset 5m > bool 1e3')
    assert m == {"shaper_sojourn_seconds_bucket", "shaper_up"}
    assert matched["shaper_sojourn_seconds_bucket"] == {"port", "x"}
    assert grouped == {"port", "le", "cause"}
    assert names("sum without(le) (foo)")[0] == {"foo"}
    for bad in ("rat(shaper_up[1m])", "shaper_up[1m] by",
                "sum by (port) (shaper_up) unles shaper_up",
                '{__name__="shaper_up"}', "shaper_up[1x]", "sum(a"):
        with pytest.raises(PromQLError):
            names(bad)


def test_dashboard_shape():
    """Grafana 9/10: a datasource variable every query uses, a port
    variable, unique panel ids, a refId and an expr for every target."""
    dash = load()
    assert dash["uid"] == "dpdk-shaper"
    assert 36 <= dash["schemaVersion"] <= 39
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["port"]["type"] == "query"
    ids, n = set(), 0

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))
    for p in panels(dash["panels"]):
        assert p["id"] not in ids, p["title"]
        ids.add(p["id"])
        if p["type"] == "row":
            continue
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(set(refs)) == len(refs), p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            assert t["expr"].strip(), p["title"]
            # every per-port series follows the port variable
            if "shaper_up" not in t["expr"] and \
                    "shaper_forwarding" not in t["expr"]:
                assert 'port=~"$port"' in t["expr"], t["expr"]
            n += 1
    assert n >= 20


@pytest.fixture
def running_exporter(tmp_path):
    """A shaper on net_null (two shards a port, one class, netem loss and
    delay so every family has samples) and its exporter: the port."""
    from test_exporter import Procs
    procs = Procs()
    fp = prefix()
    cmd = shaper_cmd(NULL_VDEVS, ["--queues", "2", "--netem",
                                  "delay 1ms loss 1%", "--class", "tcp",
                                  "ip_proto tcp"], file_prefix=fp)
    out = open(tmp_path / "shaper.out", "w")
    try:
        procs.start(cmd, stdin=subprocess.DEVNULL, stdout=out,
                    stderr=subprocess.STDOUT)
        sock = os.path.join("/var/run/dpdk", fp, "dpdk_telemetry.v2")
        wait_for("the telemetry socket", lambda: os.path.exists(sock))
        port = start_exporter(procs, tmp_path, fp)
        yield port
    finally:
        procs.stop_all()
        out.close()
        shutil.rmtree(os.path.join("/var/run/dpdk", fp), ignore_errors=True)


def test_dashboard_metrics_exist(running_exporter):
    """Every metric and label the dashboard queries is in a scrape of the
    exporter on the running shaper; the same dashboard with one metric
    misspelt is caught."""
    # the families come once the shaper's telemetry commands are there,
    # the latency histograms once a packet has left
    def ready():
        e = scrape(running_exporter)
        return e if {"shaper_shard_tx_packets_total",
                     "shaper_sojourn_seconds_bucket",
                     "shaper_class_packets_total"} <= set(e) else None
    emitted = wait_for("the shard, latency and class families", ready)
    dash = load()
    assert problems(dash, emitted) == []
    exprs, _ = dashboard_queries(dash)
    asked = set().union(*(names(e)[0] for e in exprs))
    # what the dashboard is for: rates, drops, latency, shards
    assert {"shaper_rx_packets_total", "shaper_tx_bytes_total",
            "shaper_dropped_packets_total", "shaper_sojourn_seconds_bucket",
            "shaper_lateness_seconds_bucket",
            "shaper_shard_tx_packets_total",
            "shaper_shard_dropped_packets_total"} <= asked

    bad = copy.deepcopy(dash)
    text = json.dumps(bad).replace("shaper_tx_bytes_total",
                                   "shaper_tx_byte_total", 1)
    assert text != json.dumps(bad)
    found = problems(json.loads(text), emitted)
    assert len(found) == 1 and "shaper_tx_byte_total" in found[0], found
