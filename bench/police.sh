#!/bin/bash
# usage: bench/police.sh BIN SECONDS ROUNDS: rtc -l 0-1, net_null copy=1, both ports;
# Mpps offered (egress_in) and sent, without a policer, with one that passes all, with one that drops nearly all;
# each round's ratio of police-pass's sent to none's (the ratio column of "The policer", git log -p docs/benchmarks.md)
BIN=$1 S=$2 R=$3
run() {
  st=/tmp/pb-$$.json
  $BIN -l 0-1 --no-huge -m 1024 --no-pci --file-prefix pb$$ --log-level '*:error' \
    --vdev net_null0,copy=1 --vdev net_null1,copy=1 -- "$@" --stats-file $st >/dev/null 2>&1 &
  pid=$!; sleep $((S+2)); kill -TERM $pid; wait $pid
  /usr/bin/python3 - $st <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); e=d["elapsed_s"]
inn=sum(p["egress_in"] for p in d["ports"].values()); tx=sum(p["tx_packets"] for p in d["ports"].values())
pol=sum(p["drops"].get("policed",0) for p in d["ports"].values())
print("in %.2f Mpps sent %.2f Mpps policed %.2f Mpps" % (inn/e/1e6, tx/e/1e6, pol/e/1e6))
PY
  rm -f $st
}
for i in $(seq 1 $R); do
  none=$(run); echo "none:        $none"
  pass=$(run --police 'rate 100gbit burst 10mb'); echo "police-pass: $pass"
  echo -n "police-drop: "; run --police 'rate 100mbit burst 64kb'
  # the policer's cost: what police-pass sent over what none sent
  awk -v a="$none" -v b="$pass" 'BEGIN { split(a, x); split(b, y)
    if (x[5] > 0) printf "ratio police-pass / none (sent): %.2f\n", y[5] / x[5] }'
done
