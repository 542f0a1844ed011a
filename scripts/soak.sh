#!/usr/bin/env bash
# Soak: live forwarding for SECONDS between two net_null ports (no
# hugepages, no NIC) with a lossy, duplicating, reordering profile that a
# command stream on the prompt changes every few seconds, then checks:
#  - exit status 0: the program itself checks that every mbuf is back in
#    the pool at exit (else it says "mbuf leak" and exits 3);
#  - conservation from the stats file, per egress port: egress_in +
#    duplicated = tx_packets + drops (every cause) + queued, queued 0,
#    and egress_in = rx_packets of the peer; the impairments happened
#    (losses, duplicates, reorders) and traffic left;
#  - no command of the stream failed;
#  - RSS flat: VmRSS sampled every second; after the warm-up (the first
#    quarter, at least 10 s) it grows by at most SOAK_RSS_BOUND_KB
#    (default 8192 KiB) over its value at the end of the warm-up.
#
# Usage: scripts/soak.sh SECONDS
# SHAPER_BUILD picks the build directory (default build/; build-san/ runs
# it under ASan + UBSan). Prints the figures; exits non-zero on a failed
# check. Keeps its files in a temporary directory it names on failure.
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-}
case "$secs" in
''|*[!0-9]*) echo "usage: $0 SECONDS" >&2; exit 2 ;;
esac
build=${SHAPER_BUILD:-build}
bin=$build/app/dpdk-shaper
bound_kb=${SOAK_RSS_BOUND_KB:-8192}
py=/usr/bin/python3
if [ ! -x "$bin" ]; then
	[ "$build" = build ] && scripts/build.sh >/dev/null || exit 1
fi

dir=$(mktemp -d /tmp/soak.XXXXXX)
prefix=soak_$$
stats=$dir/stats.json
mkfifo "$dir/cmd"

netem='delay 2ms 1ms 25% loss 2% duplicate 1% reorder 10% 50% gap 5'
tbf='rate 800mbit burst 64kb limit 512kb'
# The command stream: one every 2 s, round and round. Every one must
# succeed; each keeps some loss, duplication or reordering going.
cmds=(
	"set netem all delay 1ms 500us distribution normal loss 5% 25% duplicate 2% reorder 20% gap 3"
	"set tbf all rate 200mbit burst 32kb latency 20ms"
	"show port stats all"
	"set netem 0 delay 5ms 2ms loss gemodel 1% 10% duplicate 1% corrupt 0.1% reorder 5%"
	"set classify dscp"
	"set tbf 1 off"
	"stop"
	"show drops"
	"start"
	"set netem all limit 2000 delay 3ms 3ms loss state 1% 30% duplicate 3% reorder 25% 50% gap 2 rate 400mbit"
	"set priomap 0,0,1,1,2,2,0,1,2,0,1,2,0,1,2,0"
	"set tbf all $tbf"
	"show netem all"
	"set classify tos"
	"set netem all $netem"
)

"$bin" -l 0-1 --no-huge -m 512 --no-pci --file-prefix "$prefix" \
	--log-level '*:error' \
	--vdev net_null0,copy=1 --vdev net_null1,copy=1 -- \
	-i --netem "$netem" --tbf "$tbf" --stats-file "$stats" \
	<"$dir/cmd" >"$dir/out" 2>"$dir/err" &
pid=$!
exec 3>"$dir/cmd"
cleanup() {
	exec 3>&- 2>/dev/null
	if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
	rm -rf "/var/run/dpdk/$prefix"
}
trap cleanup EXIT

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null; }

# wait for the forwarding to start
for _ in $(seq 1 300); do
	grep -q "workers" "$dir/out" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q "workers" "$dir/out"; then
	echo "soak: the shaper did not start (files in $dir)"
	cat "$dir/err"
	trap - EXIT; cleanup; exit 1
fi

warm=$(( secs / 4 > 10 ? secs / 4 : 10 ))
rss_first=$(rss) rss_warm="" rss_max=0 rss_last=0 samples=0 k=0
for ((t = 1; t <= secs; t++)); do
	sleep 1
	kill -0 "$pid" 2>/dev/null || break
	r=$(rss)
	[ -n "$r" ] || break
	samples=$((samples + 1)) rss_last=$r
	if [ "$t" -eq "$warm" ] || { [ -z "$rss_warm" ] && [ "$t" -eq "$secs" ]; }; then
		rss_warm=$r
	fi
	if [ -n "$rss_warm" ] && [ "$r" -gt "$rss_max" ]; then rss_max=$r; fi
	if [ $((t % 2)) -eq 0 ]; then
		echo "${cmds[k % ${#cmds[@]}]}" >&3
		k=$((k + 1))
	fi
done
echo "quit" >&3
exec 3>&-
rc=""
for _ in $(seq 1 600); do
	if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
	sleep 0.1
done
trap - EXIT
cleanup
fail=0
if [ -z "$rc" ]; then
	echo "soak: FAIL: still running 60 s after quit (killed)"
	fail=1
elif [ "$rc" -ne 0 ]; then
	echo "soak: FAIL: exit status $rc (3: mbufs missing from the pool)"
	fail=1
fi
if grep -E "mbuf leak|ERROR: [A-Za-z]*Sanitizer|runtime error" "$dir/err"; then
	echo "soak: FAIL: see above"
	fail=1
fi
nerr=$(grep -c "^error: " "$dir/out")
if [ "$nerr" -ne 0 ]; then
	echo "soak: FAIL: $nerr commands failed:"
	grep "^error: " "$dir/out" | sort | uniq -c | head
	fail=1
fi
echo "soak: ${secs}s, $k commands, exit status ${rc:-none}"
$py - "$stats" <<'PYEOF' || fail=1
import json, sys
try:
    st = json.load(open(sys.argv[1]))["ports"]
except Exception as e:
    print("soak: FAIL: no stats file: %s" % e)
    sys.exit(1)
peer = {"0": "1", "1": "0"}
bad = []
for p, s in sorted(st.items()):
    drops = sum(s["drops"].values())
    lhs = s["egress_in"] + s.get("duplicated", 0)
    rhs = s["tx_packets"] + drops + s["queued"]
    print("port %s: rx %d egress_in %d tx %d duplicated %d reordered %d "
          "queued %d drops %d (%s)" % (
              p, s["rx_packets"], s["egress_in"], s["tx_packets"],
              s.get("duplicated", 0), s.get("reordered", 0), s["queued"],
              drops, ", ".join("%s %d" % kv for kv in s["drops"].items()
                               if kv[1])))
    if lhs != rhs:
        bad.append("port %s: egress_in + duplicated %d != tx + drops + "
                   "queued %d" % (p, lhs, rhs))
    if s["queued"] != 0:
        bad.append("port %s: %d still queued at exit" % (p, s["queued"]))
    if st[peer[p]]["rx_packets"] != s["egress_in"]:
        bad.append("port %s: egress_in %d != rx of port %s %d" % (
            p, s["egress_in"], peer[p], st[peer[p]]["rx_packets"]))
    for what, v in (("tx_packets", s["tx_packets"]),
                    ("duplicated", s.get("duplicated", 0)),
                    ("reordered", s.get("reordered", 0)),
                    ("lost", s["drops"].get("lost", 0))):
        if v == 0:
            bad.append("port %s: no %s: the profile did not act" % (p, what))
for b in bad:
    print("soak: FAIL: " + b)
sys.exit(1 if bad else 0)
PYEOF
rss_warm=${rss_warm:-$rss_last}
growth=$((rss_max - rss_warm))
echo "soak: RSS KiB: start $rss_first, after ${warm}s warm-up $rss_warm," \
     "max after it $rss_max, end $rss_last ($samples samples);" \
     "growth $growth KiB, bound $bound_kb KiB"
if [ "$samples" -lt "$secs" ]; then
	echo "soak: FAIL: the shaper ended after $samples of $secs s"
	fail=1
fi
if [ "$growth" -gt "$bound_kb" ]; then
	echo "soak: FAIL: RSS grew by $growth KiB after the warm-up"
	fail=1
fi
if [ $fail -ne 0 ]; then
	echo "soak: FAILED (files in $dir)"
	exit 1
fi
rm -rf "$dir"
echo "soak: ok"
