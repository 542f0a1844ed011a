#!/usr/bin/env bash
# Packets per second through dpdk-shaper with 0, 1, 16, 256 and 4096
# classes (issue 13: "thousands of classes must cost a bounded number of
# cycles per packet"), alternating in every round so that a noisy
# neighbour hits all; prints every round, the medians and each count's
# ratio to no classes. Figures only: this is never a test.
#
# Usage: scripts/bench-classes.sh [SECONDS [ROUNDS]] [-- shaper options]
#   (defaults: 10 s, 3 rounds; memory as scripts/bench-forward.sh:
#   hugepages as root, else --no-huge)
# Traffic: net_null cannot make IPv4 frames, so both ports are net_pcap
# vdevs looping a capture in memory (infinite_rx=1, copying each frame
# into a new mbuf as net_null copy=1 does) and dropping what they send
# (no tx_pcap); 64-byte IPv4/UDP frames whose destinations cycle over the
# classes' /24s (random, distinct: the rules of docs/benchmarks.md's class
# lookup), so every class gets its share. With 0 classes the same frames
# go to /24s no class matches (the default chain, as without classes).
# Each class has a tbf of its own that never throttles,
#   SHP_BENCH_CLASS_TBF='rate 100gbit burst 1mb limit 10mb' (the default;
#   empty: classes with no stage of their own, only their queue);
# SHP_BENCH_COUNTS="0 1 16 256 4096" chooses the counts;
# SHP_BENCH_ACTIVE=N sends to the first N classes only (the others idle:
# what merely having thousands of classes costs).
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a counts <<<"${SHP_BENCH_COUNTS:-0 1 16 256 4096}"
tbf=${SHP_BENCH_CLASS_TBF-rate 100gbit burst 1mb limit 10mb}
. scripts/bench-lib.sh
bench_args "$@"
bench_publish_begin "Classes: the whole program (bench-classes)" "$@"
bench_mem
mem_s=("${MEM_SHAPER[@]}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /var/run/dpdk/bc$$; bench_mem_restore' EXIT

# per count: c$N.ini (the classes) and c$N.pcap (frames to them)
/usr/bin/python3 - "$tmp" "$tbf" "${SHP_BENCH_ACTIVE:-4096}" "${counts[@]}" <<'PY'
import os, random, struct, sys
sys.path.insert(0, "test")
import pcaplib
tmp, tbf, active = sys.argv[1], sys.argv[2], int(sys.argv[3])
counts = [int(c) for c in sys.argv[4:]]
rnd = random.Random(13)
nets, seen = [], set()
while len(nets) < 2 * 4096:
    a = (rnd.randrange(1, 224), rnd.randrange(256), rnd.randrange(256))
    if a[0] not in (10, 127) and a not in seen:
        seen.add(a)
        nets.append(a)
def frame(dst, seq):
    f = bytearray(pcaplib.eth_ipv4(0, 64, seq))
    f[30:34] = bytes(dst)
    f[24:26] = b"\0\0"
    f[24:26] = struct.pack("!H", pcaplib._csum(bytes(f[14:34])))
    return bytes(f)
for n in counts:
    with open(os.path.join(tmp, "c%d.ini" % n), "w") as f:
        for i in range(n):
            f.write("[class c%d]\nmatch = dst_ip %d.%d.%d.0/24\n"
                    % (i, *nets[i]))
            if tbf:
                f.write("tbf = %s\n" % tbf)
    # 4096 frames (at least two a class), over the classes or, with
    # none, over /24s that no count's classes use
    dsts = nets[:min(n, active)] if n else nets[4096:]
    k = max(4096, 2 * n)
    frames = [frame(dsts[i % len(dsts)] + (1 + i % 250,), i)
              for i in range(k)]
    pcaplib.write(os.path.join(tmp, "c%d.pcap" % n), frames,
                  [i * 1000 for i in range(k)])
PY

shaper_run() {
	# packets sent / time forwarding ran, from --stats-file
	local n=$1 p="$tmp/c$1.pcap"
	rm -f "$tmp/s.json"
	timeout -s INT "$secs" ./build/app/dpdk-shaper -l 0-1 --no-pci \
		--log-level '*:error' "${mem_s[@]}" --file-prefix bc$$ \
		--vdev "net_pcap0,rx_pcap=$p,infinite_rx=1" \
		--vdev "net_pcap1,rx_pcap=$p,infinite_rx=1" \
		-- --stats-file "$tmp/s.json" --config "$tmp/c$n.ini" \
		"${extra[@]}" >"$tmp/shaper.log" 2>&1 || true
	/usr/bin/python3 - "$tmp/s.json" "$n" <<'PY' || { cat "$tmp/shaper.log" >&2; echo 0; }
import json, sys
s = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
for p in s["ports"].values():
    # the classes were there and took their traffic
    assert len(p.get("classes", {})) == n, "classes missing"
    if n:
        assert sum(c["packets"] for c in p["classes"].values()) > 0
tx = sum(p["tx_packets"] for p in s["ports"].values())
print(tx / s["elapsed_s"])
PY
}

echo "net_pcap infinite_rx (in memory), 64 B IPv4/UDP, lcores 0-1" \
	"(main + 1 worker), ${secs} s per run"
if [ -n "$tbf" ]; then
	echo "each class: its queue and tbf '$tbf'"
else
	echo "each class: its queue only"
fi
if [ -n "${SHP_BENCH_ACTIVE:-}" ]; then
	echo "traffic to the first $SHP_BENCH_ACTIVE classes (the others idle)"
else
	echo "traffic spread over every class"
fi
echo "dpdk-shaper options: ${extra[*]}"
for r in $(seq "$rounds"); do
	printf "round %d:" "$r"
	for n in "${counts[@]}"; do
		v=$(shaper_run "$n")
		echo "$v" >>"$tmp/res_$n"
		printf " %d classes %.2f Mpps;" "$n" \
			"$(echo "$v / 1000000" | bc -l)"
	done
	echo
done
/usr/bin/python3 - "$tmp" "${counts[@]}" <<'PY'
import statistics, sys
tmp, counts = sys.argv[1], sys.argv[2:]
med = {n: statistics.median(float(x) for x in open("%s/res_%s" % (tmp, n)))
       for n in counts}
base = med.get("0")
for n in counts:
    print("median: %5s classes %.2f Mpps%s" % (
        n, med[n] / 1e6,
        ", ratio to no classes %.2f" % (med[n] / base) if base else ""))
PY
bench_publish_end
