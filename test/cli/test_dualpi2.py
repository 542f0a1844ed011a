"""dualpi2 through every surface that sets a queue (issue 59): it is a
registered kind, so --queue-port, the INI profile, `set queue` on the
control socket, REST and the offline tool reach it with no code of their
own; this checks they do, with `show queue`'s state and a refusal that
changes nothing."""
from conftest import run_piped, telemetry
from test_api import api  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)

DEFAULTS = ("target 15ms tupdate 16ms alpha 0.16 beta 3.2 step_thresh 1ms "
            "min_qlen_step 0p coupling_factor 2 drop_on_overload "
            "drop_dequeue classic_protection 10% l4s_ect split_gso")


def test_queue_port_ini_set_and_show(live, tmp_path):
    ini = tmp_path / "p.ini"
    ini.write_text("[port 1]\nqueue = dualpi2 limit 300 any_ect\n")
    lv = live(["--queue-port", "0", "dualpi2 step_thresh 5p",
               "--config", str(ini)])
    rc, out, _ = lv.ctl("show", "queue", "0")
    assert rc == 0, out
    assert "queue dualpi2 limit 10000p target 15ms tupdate 16ms alpha 0.16 " \
        "beta 3.2 step_thresh 5p " in out, out
    # the state: p', p_L, p_C and both queues' delays, and the counters
    for word in ("prob_ppb: 0", "p_l_ppb", "p_c_ppb", "c_delay_ns",
                 "l_delay_ns",
                 "l4s_marked", "classic_marked", "step_marked", "overload",
                 "classic_dropped", "overload_dropped", "dualpi2_limit"):
        assert word in out, (word, out)
    rc, out, _ = lv.ctl("show", "queue", "1")
    assert "queue dualpi2 limit 300p " in out and "any_ect" in out, out
    # a change at run time, then one refused: nothing changes
    rc, out, err = lv.ctl("set", "queue", "0", "dualpi2", "target", "5ms")
    assert rc == 0, (out, err)
    assert "target 5ms" in out and "(was dualpi2" in out, out
    rc, out, err = lv.ctl("set", "queue", "0", "dualpi2", "alpha", "0")
    assert rc != 0 and "alpha" in out + err, (out, err)
    assert (out + err).strip().count("\n") == 0, (out, err)
    rc, out, _ = lv.ctl("show", "queue", "0")
    assert "dualpi2 limit 10000p target 5ms tupdate 16ms" in out, out
    rc, out, _ = lv.ctl("show", "qdisc", "0")
    assert "dualpi2" in out and "alpha 0.156250 beta 3.195312" in out, out
    p = lv.stop()["ports"]["0"]
    assert "dualpi2" in p["xstats"], p["xstats"].keys()
    for k in ("prob_ppb", "p_l_ppb", "p_c_ppb", "c_delay_ns", "l_delay_ns",
              "l4s_marked", "queued"):
        assert k in p["xstats"]["dualpi2"], k
    assert "classic_dropped" in p["drops"]


def test_rest_and_telemetry(live, api, need_telemetry_client):
    lv = live(["--queue-port", "1", "dualpi2"])
    a = api(lv.prefix)
    st, q = a.req("GET", "/v1/ports/1/queue")
    assert st == 200 and q["kind"] == "dualpi2", q
    assert q["params"]["target"] == "15ms", q
    st, r = a.req("PATCH", "/v1/ports/1/queue",
                  {"text": "coupling_factor 4"})
    assert st == 200, r
    q = a.req("GET", "/v1/ports/1/queue")[1]
    assert q["params"]["coupling_factor"] == "4" and \
        q["params"]["target"] == "15ms", q
    st, r = a.req("PATCH", "/v1/ports/1/queue",
                  {"text": "coupling_factor 0"})
    assert st == 400 and "coupling_factor" in r["error"], r
    assert a.req("GET", "/v1/ports/1/queue")[1]["params"][
        "coupling_factor"] == "4"
    conf = telemetry(lv.prefix, "/shaper/config")[0]
    assert "dualpi2" in conf["1"]["queue"], conf


def test_start_refusal_exit_2(tmp_path):
    for text in ("dualpi2 limit 0", "dualpi2 step_thresh 3x",
                 "dualpi2 classic_protection 200"):
        r = run_piped(tmp_path, [], ["--queue", text], interactive=False)
        assert r.rc == 2, (text, r.out)
        err = r.out.strip()
        assert err.count("\n") == 0 and "dualpi2" in err, err


def test_help_names_the_kind(tmp_path):
    r = run_piped(tmp_path, [], ["--help"], interactive=False)
    assert "dualpi2 [limit PACKETS]" in r.out, r.out
