#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the C unit tests
# (meson test, cmocka), the replay tests and the end-to-end tests (pytest).
# Prints each runner's summary and a closing "N passed, N failed" line;
# exits non-zero if anything failed. Arguments go to `meson test`.
#
# SHP_TEST_SUITES="replay cli" limits the pytest suites (default: all of
# replay cli e2e), e.g. on a machine where the e2e network namespaces
# would collide with another run.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test || exit 1
# (build.sh configures build/ again if the dependencies found changed,
# e.g. cmocka just installed by deps.sh)
scripts/build.sh || exit 1
# An AddressSanitizer build of the program for the reconfiguration-under-
# load test (test/cli/test_reconfig_load.py).
scripts/build.sh --dir build-asan --setup "-Db_sanitize=address \
	-Db_lundef=false -Dbuildtype=debugoptimized" app/dpdk-shaper \
	>/dev/null || exit 1

py=/usr/bin/python3   # Debian's, with python3-pytest and python3-scapy
status=0

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
py_total=0 py_fail=0 py_skip=0
for suite in ${SHP_TEST_SUITES:-replay cli e2e}; do
	junit=build/pytest-$suite.xml
	echo "== pytest test/$suite"
	$py -m pytest "test/$suite" -q -rs -p no:cacheprovider \
		--junitxml="$junit"
	[ $? -eq 0 ] || status=1
	read -r t f k < <($py - "$junit" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1, 0); sys.exit()
s = r if r.tag == "testsuite" else r.find("testsuite")
t = int(s.get("tests")); f = int(s.get("failures")) + int(s.get("errors"))
k = int(s.get("skipped"))
print(t, f, k)
PYEOF
)
	py_total=$((py_total + t)); py_fail=$((py_fail + f)); py_skip=$((py_skip + k))
done
passed=$((unit_ok + py_total - py_fail - py_skip))
failed=$((unit_total - unit_ok + py_fail))
echo
echo "all tests: $passed passed, $failed failed, $py_skip skipped"
exit $status
