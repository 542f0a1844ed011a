"""The dashboard (scripts/dashboard, served by shaper-api at /) in a real
browser: headless Chromium driven by Selenium, against a live shaper on
net_null with two ports. The page loads with no console error, both
ports' rates rise above zero, a change typed into port 0's editor is
applied, a bad one shows the shaper's own error and changes nothing, the
shaper's stop shows the page's notice and its restart brings the figures
back. Screenshots (desktop and phone) are saved in the test's tmp_path."""
import http.client
import importlib.machinery
import importlib.util
import os
import shutil
import time

import pytest

from test_api import API, api  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)

DRIVER = "/usr/bin/chromedriver"
ARGS = ["--netem", "delay 10ms"]


def wait(what, cond, timeout):
    """cond()'s first true value within timeout seconds, else fail."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError("not within %gs: %s" % (timeout, what))
        time.sleep(0.1)


@pytest.fixture
def browser():
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="python3-selenium missing "
        "(scripts/deps.sh --test)")
    from selenium.webdriver.chrome.service import Service
    chromium = shutil.which("chromium")
    if chromium is None or not os.access(DRIVER, os.X_OK):
        pytest.skip("chromium or chromium-driver missing "
                    "(scripts/deps.sh --test)")
    o = webdriver.ChromeOptions()
    o.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1280,800",
              "--no-first-run", "--disable-extensions"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=o)
    d.set_page_load_timeout(20)
    yield d
    d.quit()


def errors(d):
    """The browser's console errors since the last call."""
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def fig(d, port, name):
    """A figure of a port's card, as a number (None when not shown)."""
    els = d.find_elements("css selector", "#port-%d [data-fig=%s]" %
                          (port, name))
    v = els[0].get_attribute("data-value") if els else None
    return float(v) if v not in (None, "") else None


def rates_up(d):
    return all((fig(d, p, "in_pps") or 0) > 0 and
               (fig(d, p, "out_bps") or 0) > 0 for p in (0, 1))


def test_dashboard(live, api, browser, tmp_path):
    d = browser
    lv = live(ARGS)
    a = api(lv.prefix)
    url = "http://127.0.0.1:%d/" % a.port
    d.get(url)
    # no token yet: the page asks for it, and has asked the API nothing
    wait("the token form", lambda: d.find_element("id", "token")
         .is_displayed(), 5)
    assert errors(d) == []
    d.find_element("id", "token").send_keys(a.token + "\n")
    t0 = time.monotonic()
    wait("both ports' rates above zero", lambda: rates_up(d), 3)
    print("rates up %.2f s after the token" % (time.monotonic() - t0))
    assert errors(d) == []
    assert d.find_element("id", "notice").is_displayed() is False
    # the profile as text
    prof = d.find_element("css selector", "#port-0 .profile")
    wait("port 0's profile", lambda: "netem: limit" in prof.text and
         "delay 10ms" in prof.text, 5)

    # a change typed into port 0's editor
    ed = d.find_element("css selector", "#port-0 form.editor")
    assert ed.find_element("name", "key").get_attribute("value") == "netem"
    box = ed.find_element("name", "text")
    box.send_keys("delay 20ms\n")
    wait("the shaper's reply", lambda: "delay 20ms" in
         ed.find_element("class name", "ok").text, 10)
    rc, out, _ = lv.ctl("show", "netem", "0")
    assert rc == 0 and "delay 20ms" in out.splitlines()[0], out
    assert "delay 10ms" in lv.ctl("show", "netem", "1")[1]
    wait("the new profile on the page", lambda: "delay 20ms" in prof.text, 5)

    # the change in the page's table of changes applied (GET /v1/events)
    wait("the change's event", lambda: [r for r in d.find_elements(
        "css selector", "#event-rows tr") if "delay 20ms" in r.text and
        " rest " in " %s " % r.text and "netem" in r.text], 10)
    assert "watching" == d.find_element("id", "events-state").text

    # a preset onto port 1 (POST /v1/ports/1/preset)
    pk = d.find_element("css selector", "#port-1 .presets")
    from selenium.webdriver.support.ui import Select
    Select(pk.find_element("name", "preset")).select_by_value(
        "transatlantic")
    pk.find_element("css selector", "[data-op=preset]").click()
    ed1 = d.find_element("css selector", "#port-1 form.editor")
    wait("the preset's reply", lambda: ed1.find_element(
        "class name", "ok").text, 10)
    assert "delay 37ms" in lv.ctl("show", "netem", "1")[1]
    assert "delay 20ms" in lv.ctl("show", "netem", "0")[1]
    wait("the preset's event", lambda: [r for r in d.find_elements(
        "css selector", "#event-rows tr") if "delay 37ms" in r.text], 10)

    # one change onto both ports at once (POST /v1/batch)
    ed.find_element("css selector", "input[name=port][value='1']").click()
    box.clear()
    box.send_keys("loss 1%\n")
    wait("the batch's reply", lambda: "applied at once" in
         ed.find_element("class name", "ok").text, 10)
    for p in ("0", "1"):
        assert "loss random 1%" in lv.ctl("show", "netem", p)[1]
    assert "delay 20ms" in lv.ctl("show", "netem", "0")[1]
    assert "delay 37ms" in lv.ctl("show", "netem", "1")[1]
    ed.find_element("css selector", "input[name=port][value='1']").click()

    # link down and up
    badge = d.find_element("css selector", "#port-1 .link")
    d.find_element("css selector", "#port-1 [data-link=down]").click()
    wait("link down", lambda: "link down" in badge.text, 5)
    assert "port 1: link down" in lv.ctl("show", "schedule")[1]
    d.find_element("css selector", "#port-1 [data-link=up]").click()
    wait("link up", lambda: "link up" in badge.text, 5)
    assert "port 1: link up" in lv.ctl("show", "schedule")[1]

    # disable port 1 (a bare wire keeping its profile), then enable it
    wire = d.find_element("css selector", "#port-1 .wire")
    assert not wire.is_displayed()
    d.find_element("css selector", "#port-1 [data-wire=disable]").click()
    wait("port 1 disabled", lambda: wire.is_displayed(), 5)
    assert "disabled" in lv.ctl("show", "config")[1]
    d.find_element("css selector", "#port-1 [data-wire=enable]").click()
    wait("port 1 enabled", lambda: not wire.is_displayed(), 5)
    assert "disabled" not in lv.ctl("show", "config")[1]
    assert "delay 37ms" in lv.ctl("show", "netem", "1")[1]

    # a bad value: the shaper's own error line, nothing changed
    _, before, _ = lv.ctl("show", "config")
    box.clear()
    box.send_keys("delay 10m\n")
    err = wait("the error line", lambda: ed.find_element(
        "class name", "err").text, 10)
    _, after, _ = lv.ctl("show", "config")
    assert after == before
    rc, _, ctl_err = lv.ctl("update", "netem", "0", "delay", "10m")
    assert rc == 1 and err == ctl_err.strip(), (err, ctl_err)
    assert "unknown time unit" in err
    assert ed.find_element("class name", "ok").text == ""
    d.save_screenshot(str(tmp_path / "dashboard.png"))

    # a phone-sized window: one column, nothing wider than the screen
    d.set_window_size(390, 844)
    wait("one column", lambda: d.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"),
        5)
    d.save_screenshot(str(tmp_path / "dashboard-phone.png"))
    d.set_window_size(1280, 800)

    # the shaper stops: the page says so; started again: figures back
    lv.stop()
    note = d.find_element("id", "notice")
    wait("the notice of a stopped shaper", lambda: note.is_displayed() and
         "does not answer" in note.text, 5)
    assert fig(d, 0, "in_pps") is not None
    lv2 = live(ARGS, file_prefix=lv.prefix)
    wait("the notice of a shaper back", lambda: "answers again" in
         note.text, 10)
    # rates from two samples of the new shaper
    d.execute_script("document.querySelectorAll('[data-fig]').forEach("
                     "(e) => e.dataset.value = '')")
    wait("both ports' rates back", lambda: rates_up(d), 5)
    wait("the new shaper's profile", lambda: "delay 10ms" in prof.text, 5)
    d.execute_script("window.scrollTo(0, 0)")
    d.save_screenshot(str(tmp_path / "dashboard-again.png"))
    print("screenshots in %s" % tmp_path)
    a.stop()
    lv2.stop()


def test_page_route_and_live(live, api, tmp_path):
    """The page's files are served without the token, nothing else is:
    not a name outside its folder, however spelled (401 without the
    token, 404 with it). /v1/live carries what the page draws."""
    lv = live(ARGS)
    a = api(lv.prefix)
    for path in ("/", "/index.html", "/app.js", "/style.css",
                 "/app.js?x=1"):
        c = http.client.HTTPConnection("127.0.0.1", a.port, timeout=30)
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        c.close()
        assert r.status == 200, (path, r.status, body)
        assert "default-src 'self'" in r.getheader(
            "Content-Security-Policy"), path
        assert r.getheader("X-Content-Type-Options") == "nosniff"
    assert body.startswith(b"/* dpdk-shaper's dashboard")
    for path in ("/../shaper-api", "/%2e%2e/shaper-api", "/..%2fshaper-api",
                 "/dashboard/app.js", "//etc/passwd", "/app.js/",
                 "/app.js%00", "/APP.JS", "/./app.js", "/.app.js",
                 "/index.htm", "/v1/../app.js"):
        assert a.req("GET", path, headers={})[0] == 401, path
        assert a.req("GET", path)[0] == 404, path
    # only a GET, with no body, and the API still needs its token
    assert a.req("POST", "/", headers={})[0] == 401
    assert a.req("GET", "/", raw=b"x", headers={})[0] == 400
    assert a.req("GET", "/v1/live", headers={})[0] == 401
    # (on a loaded machine the first frames through the 10 ms delay may
    # leave seconds after the start: wait for some on both ports)
    deadline = time.monotonic() + 20
    while True:
        st, r = a.req("GET", "/v1/live")
        assert st == 200 and r["time"] > 0, r
        if all(r["ports"][p]["tx_packets"] > 0 and
               r["ports"][p]["latency"]["sojourn"]["p99_9"] > 0
               for p in ("0", "1")) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    for p in ("0", "1"):
        port = r["ports"][p]
        assert port["link"] == "up" and port["rx_packets"] > 0, port
        assert "late" in port["drops"] and "queued" in port
        assert port["latency"]["sojourn"]["p99_9"] >= 10 * 10**6, port
        assert port["shards"]["0"]["lcore"] == 1, port
    assert a.req("POST", "/v1/links/1", {"up": False})[0] == 200
    assert a.req("GET", "/v1/live")[1]["ports"]["1"]["link"] == "down"
    lv.stop()
    assert a.req("GET", "/v1/live")[0] == 503
    assert a.req("GET", "/", headers={})[0] == 200


def test_page_files(tmp_path):
    """What load_pages() takes from the page's folder: regular files
    directly in it with a plain name and a known suffix, and nothing a
    link, a folder, a hidden or oversize file could add."""
    loader = importlib.machinery.SourceFileLoader("shaper_api", API)
    spec = importlib.util.spec_from_loader("shaper_api", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    d = tmp_path / "page"
    d.mkdir()
    (d / "index.html").write_text("<p>x")
    (d / "app.js").write_text("1")
    (d / ".env.js").write_text("secret")
    (d / "notes.txt").write_text("secret")
    (d / "big.js").write_bytes(b"x" * (mod.PAGE_MAX + 1))
    (d / "sub").mkdir()
    (d / "sub" / "x.js").write_text("secret")
    (tmp_path / "outside.js").write_text("secret")
    os.symlink(tmp_path / "outside.js", d / "link.js")
    os.symlink("/etc/passwd", d / "passwd.css")
    pages = mod.load_pages(str(d))
    assert sorted(pages) == ["/", "/app.js", "/index.html"], pages
    assert pages["/"] == pages["/index.html"] == ("text/html", b"<p>x")
    assert mod.load_pages(str(tmp_path / "none")) == {}
