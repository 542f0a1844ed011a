#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the C unit tests
# (meson test, cmocka), the replay tests and the end-to-end tests (pytest).
# Prints each runner's summary and a closing "N passed, N failed" line;
# exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test || exit 1
scripts/build.sh || exit 1

py=/usr/bin/python3   # Debian's, with python3-pytest and python3-scapy
status=0

meson test -C build --print-errorlogs --num-processes 2 "$@"
[ $? -eq 0 ] || status=1
unit_ok=$($py -c "import json;print(sum(1 for l in open('build/meson-logs/testlog.json') if json.loads(l)['result']=='OK'))")
unit_total=$($py -c "print(sum(1 for l in open('build/meson-logs/testlog.json')))")

junit=build/pytest-junit.xml
$py -m pytest test/replay test/e2e -q -rs --junitxml="$junit"
rc=$?
[ $rc -eq 0 ] || status=1
read -r py_total py_fail py_skip < <($py - "$junit" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
t = int(s.get("tests")); f = int(s.get("failures")) + int(s.get("errors"))
k = int(s.get("skipped"))
print(t, f, k)
PYEOF
)
passed=$((unit_ok + py_total - py_fail - py_skip))
failed=$((unit_total - unit_ok + py_fail))
echo
echo "all tests: $passed passed, $failed failed, $py_skip skipped"
exit $status
