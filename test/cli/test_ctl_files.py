"""Files named through the control socket (issue 58): `load` of a device
or a FIFO is refused at once, the shaper stays responsive and ends on
SIGTERM; an error names a file's line, never its content; a file is
opened as the client that named it, so one it could not read is refused."""
import grp
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO, shaper_cmd
from test_ctl import CTL, Live

SECRET = "s3cr3t-Hash-q9Z"
TRACE = os.path.join(REPO, "config", "traces", "const-12mbit.trace")


@pytest.fixture
def live(tmp_path):
    procs = []

    def start(app_args=()):
        lv = Live(tmp_path, app_args)
        procs.append(lv)
        return lv
    yield start
    for lv in procs:
        if lv.proc.poll() is None:
            lv.proc.kill()
            lv.proc.wait()


def ask(path, line, timeout=5.0):
    """One command on the socket at path: (status, text). A reply that
    does not come within timeout fails the test (the main lcore is
    stuck)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall(line.encode() + b"\n")
        buf = b""
        deadline = time.monotonic() + timeout
        while not done(buf):
            if time.monotonic() > deadline:
                break
            try:
                got = s.recv(65536)
            except socket.timeout:
                break
            if not got:
                break
            buf += got
    finally:
        s.close()
    assert done(buf), \
        "no reply to %r within %.0f s: %r" % (line, timeout, buf[:200])
    if buf.startswith(b"{"):
        r = json.loads(buf)
        return r["status"], r["output"]
    status, _, text = buf.decode(errors="replace").partition("\n")
    return status, text


def done(buf):
    """A whole reply: text (ends with a '.' line) or JSON (one line)."""
    return buf.endswith(b"\n.\n") or (buf.startswith(b"{") and
                                       buf.endswith(b"}\n"))


def ends_on_sigterm(lv):
    lv.proc.send_signal(signal.SIGTERM)
    try:
        lv.proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("SIGTERM ignored")
    assert lv.proc.returncode == 0


def test_load_dev_zero_refused(live):
    """/dev/zero was read as one endless line (gigabytes)."""
    lv = live()
    t0 = time.monotonic()
    st, text = ask(lv.path, "load /dev/zero")
    assert st == "error", text
    assert "load /dev/zero: not a regular file (a character device)" \
        in text, text
    assert time.monotonic() - t0 < 5
    st, text = ask(lv.path, "show netem 0")
    assert st == "ok", text
    ends_on_sigterm(lv)


def test_load_fifo_refused(live, tmp_path):
    """A FIFO without a writer blocked fopen(): the control plane stopped
    and SIGTERM was ignored."""
    fifo = tmp_path / "cmds.fifo"
    os.mkfifo(fifo)
    lv = live()
    st, text = ask(lv.path, "load %s" % fifo)
    assert st == "error", text
    assert "%s: not a regular file (a FIFO)" % fifo in text, text
    st, text = ask(lv.path, "set netem 0 delay 5ms")
    assert st == "ok", text
    ends_on_sigterm(lv)


def test_errors_name_the_line_not_the_content(live, tmp_path):
    """An error quoted a file's first bad line: through the socket this
    printed /etc/shadow's first line."""
    secret = tmp_path / "shadow"
    secret.write_text("# header\nroot:%s:19000:0:99999:7:::\n" % SECRET)
    os.chmod(secret, 0o600)
    lv = live(["--trace-port", "0", TRACE])
    for cmd in ("load %s" % secret,
                "set netem 1 delay 10ms 1ms distribution %s" % secret,
                "set trace 0 %s" % secret,
                "json load %s" % secret):
        st, text = ask(lv.path, cmd)
        assert "error" in st, (cmd, text)
        assert "%s:2:" % secret in text, (cmd, text)
        assert SECRET not in text and "root:" not in text, (cmd, text)
    # nothing changed
    st, text = ask(lv.path, "show netem 1")
    assert st == "ok" and "distribution" not in text, text
    ends_on_sigterm(lv)


def run_as(uid, gid, sock, line):
    """line on sock from a process of uid/gid without supplementary
    groups: (status, text). The run directories above the socket are
    root's: the client reaches it through a descriptor of its directory."""
    d = os.open(os.path.dirname(sock), os.O_PATH)
    try:
        code = ("import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX)\n"
                "s.settimeout(10)\n"
                "s.connect('/proc/self/fd/%d/%s')\n"
                "s.sendall(sys.argv[1].encode()+b'\\n')\n"
                "b=b''\n"
                "while not b.endswith(b'\\n.\\n'):\n"
                "  g=s.recv(65536)\n"
                "  if not g: break\n"
                "  b+=g\n"
                "sys.stdout.write(b.decode(errors='replace'))\n"
                % (d, os.path.basename(sock)))
        p = subprocess.run(["setpriv", "--reuid", str(uid), "--regid",
                            str(gid), "--clear-groups", sys.executable,
                            "-c", code, line], pass_fds=(d,),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
    finally:
        os.close(d)
    assert p.returncode == 0, p.stderr
    status, _, text = p.stdout.partition("\n")
    return status, text


def test_file_the_client_cannot_read_is_refused(live):
    """A client of another uid (a --ctl-group member) names a root-only
    file: refused as the client could not read it, not read by root."""
    if os.geteuid() != 0:
        why = "needs root: a client of another uid (setpriv)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    gid = 1
    group = grp.getgrgid(gid).gr_name
    top = tempfile.mkdtemp(prefix="shp_ctl_files_")
    try:
        os.chmod(top, 0o755)
        secret = os.path.join(top, "root-only.cmd")
        with open(secret, "w") as f:
            f.write("set netem 0 delay 77ms\n")
        os.chmod(secret, 0o600)
        public = os.path.join(top, "public.cmd")
        with open(public, "w") as f:
            f.write("set netem 1 delay 33ms\n")
        os.chmod(public, 0o644)
        lv = live(["--ctl-group", group])
        # the socket's own directory only: searchable by its group
        os.chmod(os.path.dirname(lv.path), 0o710)
        os.chown(os.path.dirname(lv.path), 0, gid)
        assert stat.S_IMODE(os.stat(lv.path).st_mode) == 0o660
        st, text = run_as(65534, gid, lv.path, "load %s" % secret)
        assert st == "error", text
        assert "load %s: Permission denied (as the client)" % secret \
            in text, text
        st, text = run_as(65534, gid, lv.path, "load %s" % public)
        assert st == "ok", text
        # root, the shaper's own user, reads what it may
        st, text = ask(lv.path, "show netem all")
        assert "delay 33ms" in text and "delay 77ms" not in text, text
        st, text = ask(lv.path, "load %s" % secret)
        assert st == "ok", text
        ends_on_sigterm(lv)
    finally:
        for n in ("root-only.cmd", "public.cmd"):
            try:
                os.unlink(os.path.join(top, n))
            except OSError:
                pass
        os.rmdir(top)


def test_ctl_atomic_file_not_regular_refused(live, tmp_path):
    """dpdk-shaper-ctl --atomic FILE reads FILE as the shaper reads its
    files: a FIFO blocked the tool in fopen(), /dev/zero grew it without
    end. Both are refused at once, and nothing is sent."""
    fifo = tmp_path / "batch.fifo"
    os.mkfifo(fifo)
    lv = live()
    for path, what in ((str(fifo), "not a regular file (a FIFO)"),
                       ("/dev/zero", "not a regular file (a character "
                        "device)")):
        t0 = time.monotonic()
        try:
            p = subprocess.run([CTL, "-f", lv.prefix, "--atomic", path],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               timeout=10)
        except subprocess.TimeoutExpired:
            raise AssertionError("--atomic %s: no end" % path)
        rc, out, err = p.returncode, p.stdout, p.stderr
        assert rc == 2 and "--atomic %s: %s" % (path, what) in err, \
            (rc, out, err)
        assert time.monotonic() - t0 < 10
    st, text = ask(lv.path, "show netem 0")
    assert st == "ok", text
    ends_on_sigterm(lv)


@pytest.mark.parametrize("kind", ["fifo", "cmdline", "config"])
def test_start_up_files_not_regular_refused(tmp_path, kind):
    """The files options name are read as the control plane's: an
    rx_pcap FIFO waited for a writer in the start-up check (then would
    have been drained by it), a --cmdline-file or --config FIFO blocked
    fopen(). Refused at once, exit status 2."""
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    vdevs = ["net_null0", "net_null1"]
    args = []
    if kind == "fifo":
        vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (fifo,
                                                    tmp_path / "o.pcap")]
    else:
        args = ["--%s-file" % kind if kind == "cmdline" else "--config",
                str(fifo)]
    try:
        p = subprocess.run(shaper_cmd(vdevs, args), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError("%s FIFO: waited for a writer" % kind)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert "%s: not a regular file (a FIFO)" % fifo in out, out
