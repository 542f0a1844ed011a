"""The control socket against hostile and careless clients (issue 58): slow
senders and clients that never read their replies lose their slots by the
documented deadlines; text that is not well-formed UTF-8 is refused and
never echoed; --ctl-group lets its members (and nobody else) reach a root
shaper's socket; the Python client reconnects after the idle close."""
import grp
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO
from test_ctl import CTL, live, recv_reply  # noqa: F401 (a fixture)

sys.path.insert(0, os.path.join(REPO, "scripts"))
from shaper_client import Shaper  # noqa: E402

SLOTS = 16          # CTL_MAX_CLIENTS
HALF_LINE_S = 5     # CTL_HALF_LINE_MS
IDLE_S = 6          # --ctl-idle (default 60 s, CTL_IDLE_MS)


def test_slow_senders_lose_their_slots(live):
    """16 clients each sending a byte of a line every second: each is
    closed 5 s after its line's first byte (not 5 s after its last), so a
    new client is served within seconds, not never."""
    lv = live(["--netem", "delay 10ms"])
    before = lv.ctl("show", "config")[1]
    socks = []
    for _ in range(SLOTS):
        s = socket.socket(socket.AF_UNIX)
        s.connect(lv.path)
        socks.append(s)
    t0 = time.monotonic()
    closed_at = {}
    served = None
    while time.monotonic() - t0 < 3 * HALF_LINE_S:
        for i, s in enumerate(socks):
            if i in closed_at:
                continue
            try:
                s.sendall(b"s")
            except OSError:          # closed by the shaper
                closed_at[i] = time.monotonic() - t0
        if served is None and time.monotonic() - t0 > HALF_LINE_S + 1:
            rc, out, err = lv.ctl("show", "netem", "0")
            if rc == 0:
                served = time.monotonic() - t0
                assert "delay 10ms" in out
        if served is not None and len(closed_at) == SLOTS:
            break
        time.sleep(1)
    assert served is not None, "no client served for %d s" % (3 * HALF_LINE_S)
    assert len(closed_at) == SLOTS, closed_at
    # the error, then the close (each was told why)
    for s in socks:
        s.settimeout(5)
        st, lines = recv_reply(s)
        assert st == "error" and "half a line" in lines[0], lines
        s.close()
    assert max(closed_at.values()) < HALF_LINE_S + 4, closed_at
    assert lv.ctl("show", "config")[1] == before
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


def test_unread_replies_and_idle_close(live):
    """Clients that send commands and never read the replies hold no slot
    past the idle deadline (their unsent replies are dropped); the Python
    client's atomic() opens a new connection after the idle close, as
    cmd() does."""
    lv = live(["--netem", "delay 10ms", "--ctl-idle", "%ds" % IDLE_S])
    c = Shaper(path=lv.path)
    assert "delay 10ms" in c.show("netem", 0)   # its connection kept
    hogs = []
    for _ in range(SLOTS - 1):
        s = socket.socket(socket.AF_UNIX)
        s.connect(lv.path)
        s.setblocking(False)
        try:
            while True:                  # until neither side takes more
                s.send(b"show netem 0\n" * 64)
        except BlockingIOError:
            pass
        hogs.append(s)
    rc, _, err = lv.ctl("show", "netem", "0")
    assert rc != 0 and "too many control clients" in err, (rc, err)
    time.sleep(IDLE_S + 3)
    # the Python client's connection was closed while idle: a new one
    out = c.atomic(["set netem 0 delay 20ms"])
    assert "applied at once" in out, out
    # the hogs' slots are free: a client besides c is served
    rc, out, err = lv.ctl("show", "netem", "0")
    assert rc == 0 and "delay 20ms" in out, (rc, out, err)
    for s in hogs:                       # closed: EOF after what was sent
        s.setblocking(True)
        s.settimeout(5)
        while True:
            try:
                d = s.recv(1 << 20)
            except ConnectionResetError:
                d = b""
            if not d:
                break
        s.close()
    c.close()
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


BAD_UTF8 = [
    b"\xc0\xaf",             # '/' in two bytes (overlong)
    b"\xe0\x80\xaf",         # '/' in three
    b"\xf0\x80\x80\xaf",     # '/' in four
    b"\xed\xa0\x80",         # U+D800, a surrogate
    b"\xed\xbf\xbf",         # U+DFFF
    b"\xf4\x90\x80\x80",     # U+110000
    b"\xf7\xbf\xbf\xbf",     # U+1FFFFF
]


def test_utf8_ill_formed_refused(live):
    """Overlong forms, surrogates and code points above U+10FFFF are
    refused like any bytes that are not text: one error line, nothing run,
    nothing echoed raw (every JSON reply decodes as UTF-8)."""
    lv = live(["--netem", "delay 10ms"])
    before = lv.ctl("show", "config")[1]
    s = socket.socket(socket.AF_UNIX)
    s.connect(lv.path)
    s.settimeout(15)
    f = s.makefile("rb")
    for bad in BAD_UTF8:
        s.sendall(b"json show netem " + bad + b"\n")
        line = f.readline()
        r = json.loads(line.decode("utf-8"))     # strict: no raw bytes
        assert r["status"] == "error" and "not text" in r["output"], r
        assert r["output"].count("\n") == 1, r
        s.sendall(b"set netem 0 delay 20ms # " + bad + b"\n")
        assert f.readline() == b"error\n"
        err = f.readline()
        assert b"not text" in err and bad not in err, err
        assert f.readline() == b".\n"
        # in an atomic block: the block is refused whole
        s.sendall(b"json atomic 2\nset netem 0 delay 30ms\n"
                  b"set netem 1 delay 30ms " + bad + b"\n")
        r = json.loads(f.readline().decode("utf-8"))
        assert r["status"] == "error" and "not text" in r["output"], r
    # well-formed text beyond ASCII is no error of the socket's
    s.sendall("json show netem 0 d\u00e9lai \U0001F600\n".encode())
    r = json.loads(f.readline().decode("utf-8"))
    assert "not text" not in r["output"], r
    s.sendall(b"show netem 0\n")
    assert f.readline() == b"ok\n"
    f.close()
    s.close()
    assert lv.ctl("show", "config")[1] == before
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


# ---- --ctl-group: a member connects to a root shaper; others cannot ----

GROUP = "shp58ctl"
MEMBER = "shp58member"
OTHER = "shp58other"


def _run(*cmd):
    cmd = (shutil.which(cmd[0], path=SBIN),) + cmd[1:]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


SBIN = "/usr/sbin:/sbin:/usr/bin:/bin"
RUN_DPDK = "/var/run/dpdk"


@pytest.fixture
def ctl_users():
    """A system group, a user in it and one not, and copies of the clients
    they can run (the checkout may not be theirs to read); removed after."""
    if os.geteuid() != 0 or shutil.which("groupadd", path=SBIN) is None:
        if os.environ.get("CI") == "true":
            pytest.fail("--ctl-group needs root and groupadd under CI")
        pytest.skip("creating a group and users needs root and groupadd")
    for u in (MEMBER, OTHER):
        subprocess.run([shutil.which("userdel", path=SBIN), u],
                       stderr=subprocess.DEVNULL)
    subprocess.run([shutil.which("groupdel", path=SBIN), GROUP],
                   stderr=subprocess.DEVNULL)
    _run("groupadd", "-r", GROUP)
    _run("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", "-G", GROUP,
         MEMBER)
    _run("useradd", "-r", "-M", "-s", "/usr/sbin/nologin", OTHER)
    # --ctl-group gives the shared run directory to the group: as it was
    # after (a group deleted leaves its gid there for the next one made)
    was = os.stat(RUN_DPDK) if os.path.isdir(RUN_DPDK) else None
    tools = tempfile.mkdtemp(prefix="shp58-")    # pytest's tmp is 0700
    os.chmod(tools, 0o755)
    shutil.copy(CTL, os.path.join(tools, "dpdk-shaper-ctl"))
    shutil.copy(os.path.join(REPO, "scripts", "shaper_client.py"), tools)
    try:
        yield tools
    finally:
        shutil.rmtree(tools)
        if was is not None:
            os.chown(RUN_DPDK, was.st_uid, was.st_gid)
            os.chmod(RUN_DPDK, stat.S_IMODE(was.st_mode))
        for u in (MEMBER, OTHER):
            subprocess.run([shutil.which("userdel", path=SBIN), u],
                       stderr=subprocess.DEVNULL)
        subprocess.run([shutil.which("groupdel", path=SBIN), GROUP],
                   stderr=subprocess.DEVNULL)


def _as(user, argv):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/"}   # no XDG_RUNTIME_DIR
    return subprocess.run([shutil.which("runuser", path=SBIN), "-u", user,
                           "--"] + argv, env=env,
                          cwd="/", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_ctl_group_member_connects(live, ctl_users):
    lv = live(["--netem", "delay 10ms", "--ctl-group", GROUP])
    ctl = os.path.join(ctl_users, "dpdk-shaper-ctl")
    py = ("import sys; sys.path.insert(0, %r); "
          "from shaper_client import Shaper; "
          "print(Shaper(%r).show('netem', 0))" % (ctl_users, lv.prefix))
    p = _as(MEMBER, [ctl, "-f", lv.prefix, "show", "netem", "0"])
    assert p.returncode == 0 and "delay 10ms" in p.stdout, p
    p = _as(MEMBER, ["python3", "-c", py])
    assert p.returncode == 0 and "delay 10ms" in p.stdout, p
    # not in the group: refused, at the directory or the socket
    p = _as(OTHER, [ctl, "-f", lv.prefix, "show", "netem", "0"])
    assert p.returncode == 3 and "ermission denied" in p.stderr, p
    p = _as(OTHER, ["python3", "-c", py])
    assert p.returncode != 0 and "ermission denied" in p.stderr, p
    # the group may pass through, not list or write; others nothing
    run = os.path.dirname(lv.path)
    gid = grp.getgrnam(GROUP).gr_gid
    for d in (run, os.path.dirname(run)):
        st = os.stat(d)
        assert st.st_mode & 0o077 == 0o010, (d, oct(st.st_mode))
        assert st.st_gid == gid, (d, st.st_gid)
    lv.stop()
    assert lv.proc.returncode == 0, lv.out


@pytest.mark.parametrize("value", ["4s", "2h", "60", "soon"])
def test_ctl_idle_refused(value):
    """--ctl-idle out of 5 s..1 h, or not a time: one line, exit 2, before
    the EAL starts."""
    from conftest import BIN
    p = subprocess.run([BIN, "--no-huge", "--", "--ctl-idle", value],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "--ctl-idle %s" % value in p.stderr, p.stderr
