"""A client of a running dpdk-shaper's control socket (docs/control.md).

    from shaper_client import Shaper
    s = Shaper("shp1")                  # the shaper's --file-prefix
    s.set("netem", 0, "delay 50ms")     # the reply's text
    s.show("netem", 0)
    s.cmd("link down 1")
    s.clear("netem", "all")
    s.presets()                         # {"5g_urban": "3GPP ...", ...}
    s.set_preset(0, "5g_urban")         # a link preset (docs/presets.md)

Every method sends one command line of the CLI's grammar (docs/cli.md)
and returns the reply's text; a command the shaper refuses raises
Refused (its message is the shaper's one-line error; nothing changed);
no shaper at that prefix raises NoShaper. One connection is kept and
reused (the shaper closes it after 60 s idle; it is opened again).
Standard library only (Python 3.7+).
"""
import json
import os
import re
import socket

SOCK_NAME = "shaper_ctl.sock"
DEFAULT_PREFIX = "rte"   # DPDK's default --file-prefix
PRESET_RE = re.compile(r"^[a-z0-9_-]{1,63}$")   # a preset's name


class Refused(Exception):
    """The shaper refused the command (nothing changed)."""


class NoShaper(Exception):
    """No shaper answers at that prefix."""


def sock_path(prefix=DEFAULT_PREFIX, as_root=None):
    """Where DPDK 22.11 puts the runtime directory of PREFIX (root's own
    with as_root)."""
    if as_root is None:
        as_root = os.getuid() == 0
    if as_root:
        base = "/var/run"
    else:
        base = os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(base, "dpdk", prefix, SOCK_NAME)


class Shaper:
    def __init__(self, prefix=DEFAULT_PREFIX, path=None, timeout=120.0,
                 source=None):
        """source: where its changes say they come from in the shaper's
        event stream ("rest" for shaper-api; None: "ctl")."""
        self.path = path or sock_path(prefix)
        self._from = "from %s " % source if source else ""
        # a user other than root looks in root's runtime directory too
        # when its own has no such socket: a root shaper's --ctl-group
        # lets its members in there
        self._paths = [self.path]
        if path is None and os.getuid() != 0:
            self._paths.append(sock_path(prefix, as_root=True))
        self.timeout = timeout
        self._sock = None
        self._buf = b""

    # ---- transport ----
    def _connect(self):
        errors = []
        for path in self._paths:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(path)
            except OSError as e:
                s.close()
                errors.append("%s: %s" % (path, e.strerror or e))
                # our own has no shaper (or another user's /tmp/dpdk
                # shuts us out): root's next; a socket nobody listens on
                # is our own shaper's, gone
                if not isinstance(e, (FileNotFoundError, PermissionError,
                                      NotADirectoryError)):
                    break
                if len(errors) > 1 and isinstance(e, FileNotFoundError):
                    errors.pop()        # in neither: name our own
                continue
            self.path, self._sock, self._buf = path, s, b""
            return
        raise NoShaper("no shaper answers at " +
                       "; nor at ".join(errors)) from None

    def close(self):
        if self._sock is not None:
            self._sock.close()
        self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _readline(self):
        while b"\n" not in self._buf:
            d = self._sock.recv(65536)
            if not d:
                raise ConnectionError("the shaper closed the connection")
            self._buf += d
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def _exchange(self, line, json_form):
        self._sock.sendall((("json " if json_form else "") + self._from +
                            line + "\n").encode())
        if json_form:
            return json.loads(self._readline())
        status = self._readline()
        text = []
        while True:
            l = self._readline()
            if l == ".":
                break
            text.append(l[1:] if l.startswith(".") else l)
        out = "".join(t + "\n" for t in text)
        return {"status": status, "command": line, "output": out}

    def request(self, line):
        """The reply to LINE as a dict: status ("ok" or "error"),
        command, output. Never raises Refused."""
        if "\n" in line or "\r" in line:
            raise ValueError("one command per line")
        for attempt in (0, 1):
            if self._sock is None:
                self._connect()
            try:
                return self._exchange(line, True)
            except (ConnectionError, BrokenPipeError):
                # closed while idle: once more on a new connection (a
                # command is run only once its whole line arrived)
                self.close()
                if attempt:
                    raise

    def cmd(self, line):
        """Run LINE; its output, or Refused with the shaper's error."""
        r = self.request(line)
        if r["status"] != "ok":
            raise Refused(r["output"].strip())
        return r["output"]

    def atomic(self, lines):
        """Apply the stage changes LINES (set, update, clear KEY all|P) in
        one publish, or none of them: the output, or Refused with the
        shaper's error (nothing changed)."""
        lines = list(lines)
        if not lines or any("\n" in l or "\r" in l for l in lines):
            raise ValueError("one or more lines, one command each")
        block = ("json %satomic %d\n" % (self._from, len(lines)) +
                 "".join(l + "\n" for l in lines)).encode()
        for attempt in (0, 1):
            if self._sock is None:
                self._connect()
            try:
                self._sock.sendall(block)
                r = json.loads(self._readline())
                break
            except (ConnectionError, BrokenPipeError):
                # closed while idle: once more on a new connection (a
                # block is applied only once its last line arrived)
                self.close()
                if attempt:
                    raise
        if r["status"] != "ok":
            raise Refused(r["output"].strip())
        return r["output"]

    # ---- the commands ----
    def set(self, key, port, words):
        return self.cmd("set %s %s %s" % (key, port, words))

    def update(self, key, port, words):
        return self.cmd("update %s %s %s" % (key, port, words))

    def clear(self, key, port):
        return self.cmd("clear %s %s" % (key, port))

    def show(self, key, port="all"):
        return self.cmd("show %s %s" % (key, port))

    def link(self, port, up):
        return self.cmd("link %s %s" % ("up" if up else "down", port))

    def start(self):
        return self.cmd("start")

    def stop(self):
        return self.cmd("stop")

    def clear_stats(self):
        return self.cmd("clear stats")

    def presets(self):
        """{name: summary} of the link presets the shaper has."""
        return parse_presets(self.cmd("show presets"))

    def set_preset(self, port, name):
        """Port (or "all") takes preset name's whole profile at once."""
        if not PRESET_RE.match(str(name)):
            raise Refused("error: set preset: a preset's name is 1 to 63 "
                          "of a-z, 0-9, '_' and '-' (nothing changed)")
        return self.cmd("set preset %s %s" % (port, name))


def parse_presets(text):
    """`show presets`'s lines as {name: summary}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z0-9_-]{1,63}) +(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out
