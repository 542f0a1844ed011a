"""Link presets live (issue 61, docs/presets.md): `show presets` lists
every file of config/presets; `set preset P NAME` through the control
socket, the REST API and the Python client makes the port's profile the
preset's, in one change; bad names and presets the port cannot take are
refused and change nothing; a bad --preset stops the start (exit 2)."""
import configparser
import os
import re
import subprocess
import sys

from conftest import REPO, outputs, run_piped, shaper_cmd, telemetry
from test_api import api  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)

sys.path.insert(0, os.path.join(REPO, "scripts"))
from shaper_client import Refused, Shaper  # noqa: E402

PRESETS = os.path.join(REPO, "config", "presets")


def names_on_disk():
    return sorted(f[:-4] for f in os.listdir(PRESETS) if f.endswith(".ini"))


def preset(name):
    cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"),
                                   interpolation=None)
    cp.read(os.path.join(PRESETS, name + ".ini"))
    return dict(cp["global"])


def config(prefix):
    return telemetry(prefix, "/shaper/config")[0]


def nolimit(text):
    return re.sub(r"^limit \d+ ", "", text)


def assert_is(conf, port, name):
    """Port's profile is preset name's: each stage it gives, the others
    off."""
    p = preset(name)
    c = conf[str(port)]
    if "tbf" in p:
        rate = re.match(r"rate (\d+)mbit", p["tbf"]).group(1)
        assert c["tbf"].startswith("rate %sMbit" % rate), (c, p)
    else:
        assert c["tbf"] == "off", c
    delay = re.search(r"delay (\S+)", p["netem"]).group(1)
    assert nolimit(c["netem"]).startswith("delay %s" % delay), (c, p)
    loss = re.search(r"loss ([\d.]+%)", p["netem"])
    assert (loss is None and "loss" not in c["netem"]) or \
        (loss is not None and "loss random %s" % loss.group(1) in
         c["netem"]), (c, p)


def test_show_presets_lists_every_file(live):
    lv = live(["--tbf", "rate 10mbit burst 10kb limit 1mb"])
    rc, out, err = lv.ctl("show", "presets")
    assert rc == 0, (out, err)
    listed = [ln.split()[0] for ln in out.splitlines() if ln.strip()]
    assert listed == names_on_disk(), out
    for ln in out.splitlines():
        name, summary = ln.split(None, 1)
        assert summary.strip() == preset(name)["summary"], ln
    assert "unusable" not in out
    # the Python client reads the same
    with Shaper(lv.prefix) as s:
        got = s.presets()
    assert sorted(got) == names_on_disk()
    assert got["5g_urban"] == preset("5g_urban")["summary"]


def test_set_preset_socket_rest_client(live, api, need_telemetry_client):
    lv = live(["--tbf", "rate 10mbit burst 10kb limit 1mb",
               "--netem", "delay 1ms"])
    before = config(lv.prefix)
    # the control socket: port 0 only
    rc, out, err = lv.ctl("set", "preset", "0", "5g_urban")
    assert rc == 0, (out, err)
    assert "preset 5g_urban on port 0" in out, out
    conf = config(lv.prefix)
    assert_is(conf, 0, "5g_urban")
    assert conf["1"] == before["1"], (conf, before)   # port 1 untouched
    rc, out, _ = lv.ctl("show", "config")
    assert rc == 0 and "delay 20ms" in out and "rate 100Mbit" in out, out
    # the event stream: the stages' events, then the preset's
    rc, out, _ = lv.ctl("show", "events")
    assert rc == 0 and re.search(r"port 0 preset: .*-> 5g_urban", out), out
    assert "police: off -> off" not in out, out   # no change, no event

    # refused, nothing changed: a name that is not one, a preset that is
    # not there, a path, a preset whose rate kind (trace) the port does
    # not run (tbf: a restart), a port that does not exist
    for words, msg in ((["0", "nope"], "no preset 'nope'"),
                       (["0", "../default"], "a preset's name"),
                       (["0", "Satellite"], "a preset's name"),
                       (["0", "leo_starlink"], "takes a restart"),
                       (["7", "satellite"], "no port")):
        rc, out, err = lv.ctl("set", "preset", *words)
        assert rc != 0 and msg in out + err, (words, out, err)
        assert config(lv.prefix) == conf, words

    # REST
    a = api(lv.prefix)
    st, r = a.req("GET", "/v1/presets")
    assert st == 200, r
    assert [p["name"] for p in r["presets"]] == names_on_disk(), r
    st, r = a.req("POST", "/v1/ports/1/preset", {"name": "satellite"})
    assert st == 200 and "preset satellite on port 1" in r["output"], r
    conf = config(lv.prefix)
    assert_is(conf, 1, "satellite")
    assert_is(conf, 0, "5g_urban")
    st, r = a.req("POST", "/v1/ports/all/preset", {"name": "transatlantic"})
    assert st == 200, r
    conf = config(lv.prefix)
    assert_is(conf, 0, "transatlantic")
    assert_is(conf, 1, "transatlantic")
    for body, want in (({"name": "nope"}, 404), ({"name": "a/b"}, 400),
                       ({"name": 3}, 400), ({"text": "x"}, 400),
                       ({"name": "wifi", "x": 1}, 400)):
        st, r = a.req("POST", "/v1/ports/0/preset", body)
        assert st == want, (body, st, r)
    assert a.req("POST", "/v1/ports/7/preset", {"name": "wifi"})[0] == 404
    assert a.req("GET", "/v1/ports/0/preset")[0] == 405
    assert config(lv.prefix) == conf

    # the Python client
    with Shaper(lv.prefix) as s:
        out = s.set_preset(0, "wifi")
        assert "preset wifi on port 0" in out
        for bad in ("nope", "../x"):
            try:
                s.set_preset(0, bad)
            except Refused:
                pass
            else:
                raise AssertionError("set_preset(%r) was taken" % bad)
    assert_is(config(lv.prefix), 0, "wifi")
    st = lv.stop()
    assert lv.proc.returncode == 0, lv.out


def test_start_with_preset_and_refusals(tmp_path, live,
                                        need_telemetry_client):
    lv = live(["--preset", "satellite", "--preset-port", "1", "dsl"])
    conf = config(lv.prefix)
    assert_is(conf, 0, "satellite")
    assert_is(conf, 1, "dsl")
    assert "linklayer atm" in conf["1"]["tbf"], conf
    lv.stop()
    # a bad name: one line saying how to see the names, exit 2, nothing
    # started; --preset-dir moves the directory
    for args in (["--preset", "nope"], ["--preset", "../config/default"],
                 ["--preset-port", "0", "Nope"],
                 ["--preset-dir", str(tmp_path), "--preset", "satellite"]):
        p = subprocess.run(shaper_cmd(["net_null0"], args), text=True,
                           capture_output=True, timeout=60)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(lines) == 1 and "show presets" in lines[0], (args, lines)
    # SHP_PRESET_DIR the same
    (tmp_path / "mine.ini").write_text(
        "; my link\n[global]\nnetem = delay 7ms\n")
    env = dict(os.environ, SHP_PRESET_DIR=str(tmp_path))
    p = subprocess.run(shaper_cmd(["net_null0"], ["--preset", "satellite"]),
                       text=True, capture_output=True, timeout=60, env=env)
    assert p.returncode == 2 and str(tmp_path) in p.stderr, p.stderr


def test_prompt_command_file_and_own_directory(tmp_path):
    """The prompt and a command file take `set preset`; a directory of
    one's own (--preset-dir) is what `show presets` lists: a summary from
    the first comment line where the file has no `summary`, and a file
    that is no preset (another section, a run's key) listed as unusable
    with its line, refused by `set preset`, nothing changed."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "lab.ini").write_text("; My lab's uplink, 35 ms\n[global]\n"
                               "netem = delay 35ms\n")
    (d / "ports.ini").write_text("[global]\nsummary = x\n[port 0]\n"
                                 "netem = delay 1ms\n")
    (d / "seeded.ini").write_text("[global]\nsummary = y\nseed = 3\n")
    (d / "Not_A_Name.ini").write_text("[global]\nnetem = delay 2ms\n")
    cmds = tmp_path / "start.cmd"
    cmds.write_text("set preset all lab\n")
    r = run_piped(tmp_path, ["show presets", "show netem 0",
                             "set preset 0 ports", "set preset 1 seeded",
                             "show netem 1", "quit"],
                  app_args=["--preset-dir", str(d), "--netem", "delay 1ms",
                            "--cmdline-file", str(cmds)])
    assert r.rc == 0, r.out
    o = outputs(r.out)
    lines = o["show presets"][0].splitlines()
    assert [ln.split()[0] for ln in lines] == ["lab", "ports", "seeded"], \
        lines
    assert lines[0].split(None, 1)[1] == "My lab's uplink, 35 ms", lines
    assert "unusable" in lines[1] and "ports.ini:3" in lines[1], lines
    assert "unusable" in lines[2] and "seeded.ini:3" in lines[2], lines
    assert "delay 35ms" in o["show netem 0"][0], o   # the command file's
    assert "error:" in o["set preset 0 ports"][0], o
    assert "error:" in o["set preset 1 seeded"][0], o
    assert "delay 35ms" in o["show netem 1"][0], o   # unchanged
