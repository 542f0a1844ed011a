#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang with ASan + UBSan) into
# build-fuzz/ and runs each one: first over its committed corpus
# (fuzz/corpus/NAME/, a regression run: every file once), then fuzzing for
# SECONDS (default 30) from that corpus with its dictionary (fuzz/dict/).
#
# Usage: scripts/fuzz.sh [SECONDS] [NAME...]    (SECONDS 0: corpus only)
#
# New inputs go to build-fuzz/corpus/NAME/ (kept between runs, so longer
# runs build on earlier ones; copy the interesting ones to fuzz/corpus/ by
# hand), crashes to build-fuzz/artifacts/. Prints one line per harness
# and exits non-zero if any harness found something.
#
# The harnesses that run commands on a shaper (cli, ctl_body) run in two
# shapes: ports of one queue, and links of two shards (SHP_FUZZ_QUEUES=2,
# fuzz/fuzz_shaper.h): the corpus in each, and SECONDS split between them,
# so a harness takes the same time. (kinds and schedule check two shards
# on every input.)
#
# SHP_FUZZ_ROUNDTRIP=1 makes the print-and-reparse checks of the netem,
# tbf and unit printers fatal (the default; 0: reported once per run as a
# note).
# Extra libFuzzer flags: SHP_FUZZ_FLAGS, e.g. "-jobs=4 -workers=4";
# SHP_FUZZ_JOBS harnesses run at once (default: nproc).
set -uo pipefail
cd "$(dirname "$0")/.."

secs=${1:-30}
shift || true
case "$secs" in
''|*[!0-9]*) echo "usage: $0 [SECONDS] [NAME...]" >&2; exit 2 ;;
esac
all=(netem_parse tbf_parse units config dist pcap classify cli kinds schedule
     ctl_line ctl_body)
names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")

if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true \
		-Db_sanitize=address,undefined -Db_lundef=false \
		>/tmp/fuzz-setup.$$ 2>&1 ||
		{ echo "fuzz: meson setup failed:"; tail -20 /tmp/fuzz-setup.$$;
		  rm -f /tmp/fuzz-setup.$$; exit 1; }
	rm -f /tmp/fuzz-setup.$$
fi
targets=()
for n in "${names[@]}"; do targets+=("fuzz/fuzz_$n"); done
mkdir -p build-fuzz/logs
ninja -C build-fuzz "${targets[@]}" >build-fuzz/logs/build.log 2>&1 ||
	{ echo "fuzz: the harnesses do not build:";
	  grep -E 'error|undefined' build-fuzz/logs/build.log | head -20; exit 1; }

# UBSan errors are fatal (no suppressions); leaks are errors.
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export SHP_FUZZ_ROUNDTRIP=${SHP_FUZZ_ROUNDTRIP:-1}

# The classifier, CLI and schedule harnesses start an EAL (fuzz_cls_PID,
# fuzz_cli_PID, fuzz_sched_PID): remove the run directories of those that are gone.
forget_eal_dirs() {
	local d
	for d in /var/run/dpdk/fuzz_cls_[0-9]* /var/run/dpdk/fuzz_cli_[0-9]* \
		 /var/run/dpdk/fuzz_sched_[0-9]*; do
		if [ -d "$d" ] && [ ! -d "/proc/${d##*_}" ]; then
			rm -rf "$d"
		fi
	done
}

mkdir -p build-fuzz/artifacts build-fuzz/logs
# The shapes harness n runs in (SHP_FUZZ_QUEUES): "-" for one only.
shapes_of() {
	case $1 in
	cli|ctl_body) echo "1 2" ;;
	*) echo "-" ;;
	esac
}

# One harness: its summary line(s) to build-fuzz/logs/NAME.result; exits
# non-zero if it found something.
fuzz_one() {
	local n=$1 bin=build-fuzz/fuzz/fuzz_$1 seeds=fuzz/corpus/$1
	local work=build-fuzz/corpus/$1 log=build-fuzz/logs/$1.log rc runs
	local common=(-artifact_prefix="build-fuzz/artifacts/$n-" -timeout=20
		      -rss_limit_mb=2560 -print_final_stats=1)
	local shapes qs t total=0 each=() how shape
	read -ra shapes <<<"$(shapes_of "$n")"
	mkdir -p "$work"
	: >"$log"
	[ -f "fuzz/dict/$n.dict" ] && common+=(-dict="fuzz/dict/$n.dict")

	# regression: each committed input once, in each shape
	for qs in "${shapes[@]}"; do
		how=${qs/#-/}
		shape=${how:+ with SHP_FUZZ_QUEUES=$how}
		echo "== corpus$shape" >>"$log"
		SHP_FUZZ_QUEUES=${how:-1} "$bin" "${common[@]}" "$seeds"/* \
			>>"$log" 2>&1
		rc=$?
		forget_eal_dirs
		if [ $rc -ne 0 ]; then
			echo "fuzz $n: FAILED on its corpus$shape (log: $log)"
			grep -m3 -E "ERROR|runtime error|SUMMARY|round-trip" \
				"$log"
			return 1
		fi
	done
	if [ "$secs" -eq 0 ]; then
		echo "fuzz $n: corpus ok ($(ls "$seeds" | wc -l) inputs)"
		return 0
	fi
	# fuzzing: new inputs into the work corpus, seeds read from git's;
	# the time split between the shapes
	t=$((secs / ${#shapes[@]}))
	[ "$t" -ge 1 ] || t=1
	for qs in "${shapes[@]}"; do
		how=${qs/#-/}
		shape=${how:+ with SHP_FUZZ_QUEUES=$how}
		echo "== fuzzing ${t}s$shape" >>"$log"
		# shellcheck disable=SC2086
		SHP_FUZZ_QUEUES=${how:-1} "$bin" "${common[@]}" \
			-max_total_time="$t" ${SHP_FUZZ_FLAGS:-} \
			"$work" "$seeds" >>"$log" 2>&1
		rc=$?
		forget_eal_dirs
		runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' \
		       "$log" | tail -1 | grep -o '[0-9]*$')
		if [ $rc -ne 0 ]; then
			echo "fuzz $n: FAILED after ${runs:-?} runs$shape" \
			     "(log: $log)"
			grep -m3 -E "ERROR|runtime error|SUMMARY|round-trip" \
				"$log"
			ls -t build-fuzz/artifacts/"$n"-* 2>/dev/null | head -1
			return 1
		fi
		total=$((total + ${runs:-0}))
		[ -z "$how" ] || each+=("$how queue(s): ${runs:-?}")
	done
	shape=
	[ ${#each[@]} -eq 0 ] || shape=" (${each[0]}, ${each[1]})"
	echo "fuzz $n: ok, corpus and $total runs in ${secs}s$shape" \
	     "$(grep -m1 -o 'note: .* does not round-trip' "$log")"
}

# SHP_FUZZ_JOBS harnesses at once (default: one a CPU): each is one
# process, so a 2-CPU machine runs the twelve in half the time, each for
# its full SECONDS.
jobs=${SHP_FUZZ_JOBS:-$(nproc)}
running=0
for n in "${names[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	{ fuzz_one "$n" >"build-fuzz/logs/$n.result" 2>&1
	  echo $? >"build-fuzz/logs/$n.rc"; } &
	running=$((running + 1))
done
wait
status=0
for n in "${names[@]}"; do
	cat "build-fuzz/logs/$n.result"
	[ "$(cat "build-fuzz/logs/$n.rc" 2>/dev/null)" = 0 ] || status=1
	rm -f "build-fuzz/logs/$n.result" "build-fuzz/logs/$n.rc"
done
exit $status
