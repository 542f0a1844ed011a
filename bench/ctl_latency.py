"""What a change costs through the control socket, dpdk-shaper-ctl and
shaper-api (docs/control.md, Cost). Against a running shaper and API:

    bench/ctl_latency.py PREFIX API_PORT [TOKEN_FILE]   (from the top)

TOKEN_FILE: the API's --token-file, else the token it made beside the
control socket.
"""
import sys, time, subprocess, json, http.client, os, socket
sys.path.insert(0, "scripts")
from shaper_client import Shaper, sock_path
pre = sys.argv[1]
c = Shaper(pre)
c.cmd("show config")
n = 300
t0 = time.monotonic()
for i in range(n):
    c.update("netem", 0, "loss %d%%" % (i % 10 + 1))
dt = (time.monotonic() - t0) / n
print("socket update (persistent connection): %.2f ms per command" % (dt * 1e3))
t0 = time.monotonic()
for i in range(n):
    c.show("netem", 0)
print("socket show: %.2f ms" % ((time.monotonic() - t0) / n * 1e3))
t0 = time.monotonic()
for i in range(50):
    subprocess.run(["build/tools/dpdk-shaper-ctl", "-f", pre, "update", "netem", "0", "loss", "2%"], stdout=subprocess.DEVNULL, check=True)
print("dpdk-shaper-ctl update (a process each): %.2f ms" % ((time.monotonic() - t0) / 50 * 1e3))
port = int(sys.argv[2])
tf = sys.argv[3] if len(sys.argv) > 3 else \
    os.path.join(os.path.dirname(sock_path(pre)), "api-token")
with open(tf) as f:
    auth = {"Authorization": "Bearer " + f.read().strip()}
t0 = time.monotonic()
for i in range(100):
    h = http.client.HTTPConnection("127.0.0.1", port)
    h.request("PATCH", "/v1/ports/0/netem", body=json.dumps({"text": "loss 3%"}),
              headers=auth)
    r = h.getresponse(); r.read(); assert r.status == 200
    h.close()
print("REST PATCH: %.2f ms" % ((time.monotonic() - t0) / 100 * 1e3))
