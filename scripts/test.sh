#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the C unit tests
# (meson test, cmocka), the replay tests and the end-to-end tests (pytest),
# then the unit and replay tests on a sanitizer build and the fuzzers.
# Prints each runner's summary and a closing "N passed, N failed" line;
# exits non-zero if anything failed. Arguments go to `meson test`.
#
# SHP_TEST_SUITES="replay cli" limits the pytest suites (default: all of
# replay cli e2e), e.g. on a machine where the e2e network namespaces
# would collide with another run. SHP_TEST_JOBS: the workers of the
# parallel tests (default: two a CPU).
set -uo pipefail
cd "$(dirname "$0")/.."
# each step's line says when it began (seconds since the start)
step() { echo "== $* (at ${SECONDS}s)"; }
step "dependencies"
scripts/deps.sh --test || exit 1
step "build"
# (build.sh configures build/ again if the dependencies found changed,
# e.g. cmocka just installed by deps.sh)
scripts/build.sh || exit 1
# The sanitizer build (AddressSanitizer + UBSan, build-san/), its program
# first: the reconfiguration-under-load tests run it among the CLI tests
# (test_reconfig_load.py, test_ctl.py); the rest of it is built for the
# sanitizer runs below. (One sanitizer build, not two: a second one, of
# ASan alone, took another minute of every run.)
scripts/build.sh --dir build-san --setup "-Db_sanitize=address,undefined \
	-Db_lundef=false -Dbuildtype=debugoptimized \
	-Dc_args=-fno-sanitize-recover=undefined" app/dpdk-shaper \
	>/dev/null || exit 1

step "unit tests"
py=/usr/bin/python3   # Debian's, with python3-pytest and python3-scapy
status=0
# a test that passed only on a retry writes a line here (test/retries.py)
export SHP_TEST_RETRIED=$PWD/build/test-retried.txt
rm -f "$SHP_TEST_RETRIED"

meson test -C build --print-errorlogs --num-processes 2 "$@"
[ $? -eq 0 ] || status=1
# the unit tests' EAL run directories (t_NAME_PID), once their process is gone
for d in /var/run/dpdk/t_*_[0-9]*; do
	if [ -d "$d" ] && [ ! -d "/proc/${d##*_}" ]; then rm -rf "$d"; fi
done
log=build/meson-logs/testlog.json
unit_ok=$($py -c "import json;print(sum(1 for l in open('$log') if json.loads(l)['result']=='OK'))")
unit_total=$($py -c "print(sum(1 for l in open('$log')))")

# One pytest run per suite: each has its own conftest helpers.
# tests, failures (errors included) and skips of a pytest junit file
junit_counts() {
	$py - "$1" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1, 0); sys.exit()
s = r if r.tag == "testsuite" else r.find("testsuite")
print(int(s.get("tests")),
      int(s.get("failures")) + int(s.get("errors")), int(s.get("skipped")))
PYEOF
}

py_total=0 py_fail=0 py_skip=0
# One pytest run: JUNIT, then pytest's arguments; its counts are added to
# the totals. (Exit 5: it selected no test, e.g. a suite without parallel
# tests.)
run_pytest() {
	local junit=$1 rc t f k
	shift
	$py -m pytest "$@" -q -rs -p no:cacheprovider --junitxml="$junit"
	rc=$?
	[ $rc -eq 5 ] && return 0
	[ $rc -eq 0 ] || status=1
	read -r t f k < <(junit_counts "$junit")
	py_total=$((py_total + t)); py_fail=$((py_fail + f)); py_skip=$((py_skip + k))
}
# A suite: the tests its conftest.py marks `parallel` (on a virtual clock,
# nothing timed) side by side on SHP_TEST_JOBS workers (pytest-xdist; two
# a CPU: an EAL start can sleep 100 ms timing the TSC, and a worker
# waiting leaves its CPU to another), then all the others one at a time,
# alone on the machine.
jobs=${SHP_TEST_JOBS:-$((2 * $(nproc)))}
run_suite() {   # DIR JUNIT-STEM
	run_pytest "$2-parallel.xml" "$1" -m parallel -n "$jobs"
	run_pytest "$2.xml" "$1" -m "not parallel"
}
for suite in ${SHP_TEST_SUITES:-replay cli e2e}; do
	step "pytest test/$suite"
	run_suite "test/$suite" "build/pytest-$suite"
done
# ---- sanitizers and fuzzing (issue 15) --------------------------------
# The unit and replay tests again on an AddressSanitizer + UBSan build
# (build-san/; UBSan errors fatal, no suppressions; leaks fail the run),
# then every libFuzzer harness over its corpus and for SHP_CI_FUZZ_SECONDS
# (default 15) seconds each (scripts/fuzz.sh, clang, build-fuzz/).
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
san_ok=0 san_total=1 fz_ok=0 fz_total=0
# What the sanitizer runs use: the unit tests, the program and the replay
# tool (bench/ is compiled, and so checked, in build/).
san_unit_tests() {
	ninja -C build-san -t targets all |
		sed -n 's,^\(test/unit/test_[a-z0-9_]*\): .*,\1,p'
}
step "sanitizers: build-san (address,undefined)"
if { [ -f build-san/build.ninja ] ||
     meson setup build-san -Db_sanitize=address,undefined \
	-Db_lundef=false -Dbuildtype=debugoptimized \
	-Dc_args=-fno-sanitize-recover=undefined >/dev/null; } &&
   ninja -C build-san app/dpdk-shaper tools/dpdk-shaper-replay \
	$(san_unit_tests) >/dev/null; then
	meson test -C build-san --no-rebuild --print-errorlogs \
		--num-processes 2 "$@"
	[ $? -eq 0 ] || status=1
	for d in /var/run/dpdk/t_*_[0-9]*; do
		if [ -d "$d" ] && [ ! -d "/proc/${d##*_}" ]; then rm -rf "$d"; fi
	done
	read -r san_ok san_total < <($py - build-san/meson-logs/testlog.json <<'PYEOF'
import json, sys
r = [json.loads(l)["result"] for l in open(sys.argv[1])]
print(sum(x == "OK" for x in r), len(r))
PYEOF
)
	step "pytest test/replay on build-san"
	SHP_SANITIZED=1 SHAPER_BUILD="$PWD/build-san" \
		run_suite test/replay build-san/pytest-replay
else
	echo "sanitizer build failed"
	status=1
fi
step "fuzz: each harness over its corpus, then ${SHP_CI_FUZZ_SECONDS:-15}s"
fz_log=$(mktemp)
scripts/fuzz.sh "${SHP_CI_FUZZ_SECONDS:-15}" | tee "$fz_log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fz_total=$(grep -c '^fuzz [a-z_]*: ' "$fz_log")
fz_ok=$(grep -c '^fuzz [a-z_]*: ok' "$fz_log")
[ "$fz_total" -gt 0 ] || { fz_total=1; status=1; }
rm -f "$fz_log"
unit_ok=$((unit_ok + san_ok + fz_ok))
unit_total=$((unit_total + san_total + fz_total))
# ---- end of sanitizers and fuzzing -------------------------------------

passed=$((unit_ok + py_total - py_fail - py_skip))
failed=$((unit_total - unit_ok + py_fail))
retried=0
[ -f "$SHP_TEST_RETRIED" ] && retried=$(wc -l <"$SHP_TEST_RETRIED")
echo
step "end"
echo "all tests: $passed passed, $failed failed, $py_skip skipped, $retried retried"
exit $status
