"""`pie` and `red` (issue 59) on the live program: --queue and
--queue-port start them, `set queue` changes their parameters (a bad
value is refused with one line and changes nothing), `show queue`
prints what runs, `show qdisc` in tc's words."""
from conftest import outputs, run_piped
from test_api import api  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)


def test_pie_and_red_set_and_show(tmp_path):
    cmds = ["show queue all",
            "set queue 0 pie target 5ms ecn",
            "set queue 0 pie alpha 33",
            "set queue 1 red limit 50000 avpkt 1000 ecn adaptive",
            "set queue 1 red limit 50000 avpkt 1000 min 900 max 100",
            "show queue all",
            "show qdisc all",
            "quit"]
    r = run_piped(tmp_path, cmds, app_args=[
        "--queue", "pie", "--queue-port", "1",
        "red limit 100000 avpkt 1000"])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    first = o["show queue all"][0]
    assert "pie limit 1000 target 15ms tupdate 15ms alpha 2 beta 20 " \
        "noecn nobytemode" in first, first
    assert "red limit 100000 min 8333 max 25000 avpkt 1000 burst 13 " \
        "probability 0.02 bandwidth 10Mbit" in first, first
    got = o[cmds[1]][0]
    assert got.startswith("port 0: queue pie limit 1000 target 5ms "), got
    assert "alpha" in o[cmds[2]][0] and "nothing changed" in o[cmds[2]][0]
    got = o[cmds[3]][0]
    assert got.startswith("port 1: queue red limit 50000 min 4166 max "
                          "12500 avpkt 1000 "), got
    assert "ecn adaptive" in got, got
    assert "nothing changed" in o[cmds[4]][0]
    last = o["show queue all"][1]
    assert "pie limit 1000 target 5ms tupdate 15ms alpha 2 beta 20 ecn" \
        in last, last
    assert "red limit 50000 min 4166 max 12500" in last, last
    # `show` has the kinds' state: pie's p and delay, red's average
    assert "prob_ppm: 0  delay_ns: 0" in last, last
    assert "qavg: " in last, last
    tc = o["show qdisc all"][0]
    assert "pie" in tc and "limit 1000p target 5ms tupdate 15ms alpha 2 " \
        "beta 20 ecn" in tc, tc
    assert "red" in tc and "limit 50000b min 4166b max 12500b ecn " \
        "adaptive ewma" in tc, tc
    assert len(r.errors()) == 2, r.errors()


def test_pie_and_red_over_the_socket_and_rest(live, api,
                                             need_telemetry_client):
    lv = live(["--queue", "pie", "--queue-port", "1",
               "red limit 100000 avpkt 1000"])
    rc, out, err = lv.ctl("set", "queue", "0", "pie", "target", "5ms",
                          "ecn")
    assert rc == 0 and "pie limit 1000 target 5ms" in out, (out, err)
    rc, out, err = lv.ctl("set", "queue", "0", "pie", "beta", "99")
    assert rc != 0 and "beta" in err, (out, err)
    assert "target 5ms" in lv.ctl("show", "queue", "0")[1]
    a = api(lv.prefix)
    st, r = a.req("PATCH", "/v1/ports/1/queue", {"text": "ecn harddrop"})
    assert st == 200, r
    q = a.req("GET", "/v1/ports/1/queue")[1]
    assert q["kind"] == "red" and "ecn harddrop" in q["text"], q
    st, r = a.req("PUT", "/v1/ports/1/queue",
                  {"text": "red limit 100000 avpkt 1000 max 10"})
    assert st == 400 and r["error"].startswith("error: "), r
    assert "ecn harddrop" in a.req("GET", "/v1/ports/1/queue")[1]["text"]
    st, stats = a.req("GET", "/v1/stats")
    assert st == 200
    assert "pie_dropped" in stats["ports"]["0"]["drops"]
    assert "red_early" in stats["ports"]["1"]["drops"]
    # each port has its own kind's statistics, not the other's
    for k in ("pie_marked", "pie_prob_ppm", "pie_delay_ns"):
        assert k in stats["ports"]["0"], k
        assert k not in stats["ports"]["1"], k
    for k in ("red_marked", "red_qavg"):
        assert k in stats["ports"]["1"], k
        assert k not in stats["ports"]["0"], k
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out
