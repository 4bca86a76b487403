#!/usr/bin/env bash
# ab-proxy.sh OLD NEW OUTDIR [ROUNDS]: workload 4 (forwarding, HTTPS) for two builds of the
# platform and nginx in the same rounds, alternating order, with CPU per request from
# /proc/PID/stat. Starts everything with bench/run.sh HOLD=1 (EDGE_BIN=OLD, EDGE2_BIN=NEW);
# results in OUTDIR/res, one line per run: round, server, req/s, CPU µs per request, wrk's p99.
# WORKLOAD=page4k measures workload 1 (the cached page) instead.
# Stop the held harness afterwards: pkill -f bench/run.sh
set -u
OLD=$1 NEW=$2 OUTD=$3 R=${4:-5}
mkdir -p $OUTD; : > $OUTD/res
cd /work/main
WL=${WORKLOAD:-proxy}
EDGE_BIN=$OLD EDGE2_BIN=$NEW ONLY=$WL SERVERS=edge,nginx HOLD=1 bash bench/run.sh > $OUTD/hold.log 2>&1 &
HP=$!
for i in $(seq 400); do grep -q 'HOLD=1' $OUTD/hold.log && break; sleep 0.5; done
grep -q 'HOLD=1' $OUTD/hold.log || { echo "no hold"; tail $OUTD/hold.log; kill $HP; exit 1; }
UA='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
HOST=benchapp.localhost XFF=2.0.1.1
declare -A U=([old]=https://127.0.0.1:17443/api/items [new]=https://127.0.0.1:17543/api/items [nginx]=https://127.0.0.1:18085/api/items)
if [[ $WL == page4k ]]; then
 . "${BENCH_WORK:-/tmp/platform-bench}/shield/addrs.env"
 HOST=bench.localhost XFF=$ALLOW_IP
 U=([old]=https://127.0.0.1:17443/ [new]=https://127.0.0.1:17543/ [nginx]=https://127.0.0.1:18081/)
fi
w() { taskset -c 1 wrk -t1 -c64 -d${2}s --timeout 10s --latency -H "Host: $HOST" -H "X-Forwarded-For: $XFF" -H "User-Agent: $UA" -H 'Accept: */*' "$1"; }
PORT=${U[nginx]#https://127.0.0.1:}; PORT=${PORT%%/*}
EP=$(ss -ltnpH "sport = :17443" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
E2P=$(ss -ltnpH "sport = :17543" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
NPIDS=$(ss -ltnpH "sport = :$PORT" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
NP=""
for p in $NPIDS; do pp=$(ps -o ppid= -p $p | tr -d ' '); for q in $NPIDS; do [ "$pp" = "$q" ] && NP=$p; done; done
declare -A P=([old]=$EP [new]=$E2P [nginx]=$NP)
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
for s in old new nginx; do curl -sk -o /dev/null -w "$s %{http_code} %{size_download}\n" -H "Host: $HOST" -H "X-Forwarded-For: $XFF" ${U[$s]} >> $OUTD/res; w ${U[$s]} 1 > /dev/null; done
for r in $(seq $R); do
 if ((r % 2)); then order="old new nginx"; else order="nginx new old"; fi
 for s in $order; do
  t0=$(ticks ${P[$s]}); out=$(w ${U[$s]} 3); t1=$(ticks ${P[$s]})
  req=$(grep -o '[0-9]* requests in' <<<"$out" | awk '{print $1}')
  echo "$r $s $(grep Requests/sec <<<"$out" | awk '{print $2}') cpu_us_per_req=$(awk -v a=$t0 -v b=$t1 -v n=$req 'BEGIN{printf "%.1f", (b-a)*10000/n}') p99=$(awk '$1=="99%"{print $2}' <<<"$out") $(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ')" >> $OUTD/res
 done
done
cat /proc/loadavg >> $OUTD/res
kill $HP; wait $HP
