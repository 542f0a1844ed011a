"""The dashboard in Firefox (issue 62: "current Chromium and Firefox"):
Debian's firefox-esr, headless, driven over WebDriver BiDi, the protocol
Firefox speaks itself (--remote-debugging-port), since Debian ships no
geckodriver for Selenium. Against a live shaper on net_null with two
ports: the page loads with no console error, the token entered once
brings both ports' rates above zero, a change in port 0's editor is
applied, a bad value shows the shaper's own error and changes nothing,
a phone-sized viewport has one column, the shaper's stop shows the
notice and its restart brings the figures back. Screenshots under the
test's tmp_path."""
import asyncio
import base64
import json
import os
import shutil
import subprocess
import time

import pytest

from test_api import api, free_port  # noqa: F401  (the fixture)
from test_ctl import live  # noqa: F401  (the fixture)
from test_dashboard import ARGS, wait

FIREFOX = "firefox-esr"


class Bidi:
    """A WebDriver BiDi session, synchronous: each command waits for its
    answer; the events met meanwhile are kept (log.entryAdded)."""

    def __init__(self, url, timeout=30):
        import aiohttp
        self.loop = asyncio.new_event_loop()
        self.timeout = timeout
        self.http = self.run(self._session(aiohttp))
        self.ws = self.run(self.http.ws_connect(url, timeout=timeout,
                                                max_msg_size=64 << 20))
        self.n = 0
        self.events = []

    async def _session(self, aiohttp):
        return aiohttp.ClientSession()

    def run(self, coro):
        return self.loop.run_until_complete(
            asyncio.wait_for(coro, self.timeout))

    async def _cmd(self, method, params):
        self.n += 1
        await self.ws.send_str(json.dumps({"id": self.n, "method": method,
                                           "params": params}))
        while True:
            m = json.loads((await self.ws.receive()).data)
            if m.get("id") == self.n:
                if m.get("type") == "error":
                    raise AssertionError("%s: %s" % (method, m))
                return m["result"]
            if m.get("type") == "event":
                self.events.append(m)

    def cmd(self, method, **params):
        return self.run(self._cmd(method, params))

    def close(self):
        try:
            self.run(self.ws.close())
            self.run(self.http.close())
        finally:
            self.loop.close()


class Page:
    def __init__(self, b):
        self.b = b
        self.ctx = b.cmd("browsingContext.getTree")["contexts"][0]["context"]

    def js(self, expr):
        """expr's value in the page (a function body's return)."""
        r = self.b.cmd("script.callFunction",
                       functionDeclaration="() => { %s }" % expr,
                       target={"context": self.ctx}, awaitPromise=True)
        if r["type"] != "success":
            raise AssertionError("%s: %s" % (expr, r))
        return r["result"].get("value")

    def shot(self, path):
        data = self.b.cmd("browsingContext.captureScreenshot",
                          context=self.ctx)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def errors(self):
        """The page's console errors and uncaught exceptions so far."""
        self.js("return 0")    # (events arrive in order with replies)
        return [e["params"] for e in self.b.events
                if e.get("method") == "log.entryAdded" and
                e["params"].get("level") == "error"]


@pytest.fixture
def firefox(tmp_path):
    exe = shutil.which(FIREFOX)
    if exe is None:
        pytest.skip("firefox-esr missing (scripts/deps.sh --test)")
    pytest.importorskip("aiohttp", reason="python3-aiohttp missing "
                        "(scripts/deps.sh --test)")
    prof = tmp_path / "profile"
    prof.mkdir()
    port = free_port()
    env = dict(os.environ, MOZ_HEADLESS="1")
    proc = subprocess.Popen([exe, "--headless", "--no-remote", "--profile",
                             str(prof), "--remote-debugging-port",
                             str(port), "about:blank"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        end = time.monotonic() + 60
        for line in proc.stderr:
            if "WebDriver BiDi listening" in line:
                break
            if time.monotonic() > end:
                raise AssertionError("firefox did not listen within 60 s")
        else:
            raise AssertionError("firefox ended: %s" % proc.wait())
        b = Bidi("ws://127.0.0.1:%d/session" % port)
        b.cmd("session.new", capabilities={})
        b.cmd("session.subscribe", events=["log.entryAdded"])
        yield b
        b.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fig(pg, port, name):
    v = pg.js("const e = document.querySelector('#port-%d [data-fig=%s]');"
              " return e ? e.dataset.value : null" % (port, name))
    return float(v) if v not in (None, "") else None


def rates_up(pg):
    return all((fig(pg, p, "in_pps") or 0) > 0 and
               (fig(pg, p, "out_bps") or 0) > 0 for p in (0, 1))


def shown(pg, css):
    return pg.js("const e = document.querySelector(%s); return !!e && "
                 "e.offsetParent !== null" % json.dumps(css))


def text(pg, css):
    return pg.js("const e = document.querySelector(%s); return e ? "
                 "e.textContent : ''" % json.dumps(css))


def submit(pg, css, value):
    """Type value into the input css names and submit its form, as Enter
    would."""
    pg.js("const i = document.querySelector(%s); i.value = %s; "
          "i.dispatchEvent(new Event('input')); i.form.requestSubmit(); "
          "return 1" % (json.dumps(css), json.dumps(value)))


def test_dashboard_in_firefox(live, api, firefox, tmp_path):
    b = firefox
    lv = live(ARGS)
    a = api(lv.prefix)
    pg = Page(b)
    b.cmd("browsingContext.setViewport", context=pg.ctx,
          viewport={"width": 1280, "height": 800})
    b.cmd("browsingContext.navigate", context=pg.ctx,
          url="http://127.0.0.1:%d/" % a.port, wait="complete")
    wait("the token form", lambda: shown(pg, "#token"), 5)
    assert pg.errors() == []
    submit(pg, "#token", a.token)
    t0 = time.monotonic()
    wait("both ports' rates above zero", lambda: rates_up(pg), 3)
    print("firefox: rates up %.2f s after the token" %
          (time.monotonic() - t0))
    assert not shown(pg, "#notice")
    wait("port 0's profile", lambda: "delay 10ms" in
         text(pg, "#port-0 .profile"), 5)

    # a change in port 0's editor
    ed = "#port-0 form.editor"
    submit(pg, ed + " [name=text]", "delay 20ms")
    wait("the shaper's reply", lambda: "delay 20ms" in
         text(pg, ed + " .ok"), 10)
    rc, out, _ = lv.ctl("show", "netem", "0")
    assert rc == 0 and "delay 20ms" in out.splitlines()[0], out
    assert "delay 10ms" in lv.ctl("show", "netem", "1")[1]

    # a bad value: the shaper's own error line, nothing changed
    _, before, _ = lv.ctl("show", "config")
    submit(pg, ed + " [name=text]", "delay 10m")
    err = wait("the error line", lambda: text(pg, ed + " .err"), 10)
    _, after, _ = lv.ctl("show", "config")
    assert after == before
    rc, _, ctl_err = lv.ctl("update", "netem", "0", "delay", "10m")
    assert rc == 1 and err == ctl_err.strip(), (err, ctl_err)
    assert pg.errors() == []
    pg.shot(tmp_path / "firefox.png")

    # a phone-sized viewport: one column, nothing wider than the screen
    b.cmd("browsingContext.setViewport", context=pg.ctx,
          viewport={"width": 390, "height": 844})
    wait("one column", lambda: pg.js(
        "return document.documentElement.scrollWidth <= "
        "window.innerWidth"), 5)
    pg.shot(tmp_path / "firefox-phone.png")

    # the shaper stops: the page says so; started again: figures back
    lv.stop()
    wait("the notice of a stopped shaper", lambda: shown(pg, "#notice") and
         "does not answer" in text(pg, "#notice"), 5)
    lv2 = live(ARGS, file_prefix=lv.prefix)
    wait("the notice of a shaper back", lambda: "answers again" in
         text(pg, "#notice"), 10)
    pg.js("document.querySelectorAll('[data-fig]').forEach("
          "(e) => e.dataset.value = ''); return 1")
    wait("both ports' rates back", lambda: rates_up(pg), 5)
    assert pg.errors() == []
    print("screenshots in %s" % tmp_path)
    a.stop()
    lv2.stop()
