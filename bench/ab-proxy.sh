#!/usr/bin/env bash
# ab-proxy.sh OLD NEW OUTDIR [ROUNDS] [SECS]: workload 4 (forwarding, HTTPS) for two builds of the
# platform and nginx in the same rounds, alternating order. Starts everything with bench/run.sh
# HOLD=1 (EDGE_BIN=OLD, EDGE2_BIN=NEW); results in OUTDIR/res, one line per run: round, server,
# req/s, CPU per request from /proc/PID/stat (user, system, both, in µs), system calls per request
# (perf stat on raw_syscalls:sys_enter, when perf is installed), the server core's steal ticks over
# the run, wrk's p99. The last lines are each server's means over the rounds.
# WORKLOAD=page4k measures workload 1 (the cached page) instead.
set -u
OLD=$1 NEW=$2 OUTD=$3 R=${4:-5} S=${5:-3}
mkdir -p "$OUTD"
: >"$OUTD/res"
cd "$(dirname "$0")/.."
WL=${WORKLOAD:-proxy}
EDGE_BIN=$OLD EDGE2_BIN=$NEW ONLY=$WL SERVERS=edge,nginx HOLD=1 bash bench/run.sh >"$OUTD/hold.log" 2>&1 &
HP=$!
for _ in $(seq 400); do grep -q 'HOLD=1' "$OUTD/hold.log" && break; sleep 0.5; done
grep -q 'HOLD=1' "$OUTD/hold.log" || { echo "no hold"; tail "$OUTD/hold.log"; kill $HP; exit 1; }
UA='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'
HOST=benchapp.localhost XFF=2.0.1.1
declare -A U=([old]=https://127.0.0.1:17443/api/items [new]=https://127.0.0.1:17543/api/items [nginx]=https://127.0.0.1:18085/api/items)
if [[ $WL == page4k ]]; then
	# shellcheck disable=SC1091
	. "${BENCH_WORK:-/tmp/platform-bench}/shield/addrs.env"
	HOST=bench.localhost XFF=$ALLOW_IP
	U=([old]=https://127.0.0.1:17443/ [new]=https://127.0.0.1:17543/ [nginx]=https://127.0.0.1:18081/)
fi
w() { taskset -c 1 wrk -t1 -c64 -d"${2}s" --timeout 10s --latency -H "Host: $HOST" -H "X-Forwarded-For: $XFF" -H "User-Agent: $UA" -H 'Accept: */*' "$1"; }
PORT=${U[nginx]#https://127.0.0.1:}
PORT=${PORT%%/*}
pid() { ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
NPIDS=$(ss -ltnpH "sport = :$PORT" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u)
NP=""
for p in $NPIDS; do
	pp=$(ps -o ppid= -p "$p" | tr -d ' ')
	for q in $NPIDS; do [ "$pp" = "$q" ] && NP=$p; done
done
declare -A P=([old]=$(pid 17443) [new]=$(pid 17543) [nginx]=$NP)
for s in old new nginx; do
	curl -sk -o /dev/null -w "$s %{http_code} %{size_download}\n" -H "Host: $HOST" -H "X-Forwarded-For: $XFF" "${U[$s]}" >>"$OUTD/res"
	w "${U[$s]}" 1 >/dev/null
done
for r in $(seq "$R"); do
	if ((r % 2)); then order="old new nginx"; else order="nginx new old"; fi
	for s in $order; do
		read -r u0 y0 < <(awk '{print $14, $15}' "/proc/${P[$s]}/stat")
		st0=$(awk '/^cpu0 /{print $9}' /proc/stat)
		pp=""
		if command -v perf >/dev/null; then
			perf stat -x, -e raw_syscalls:sys_enter -p "${P[$s]}" -o "$OUTD/perf.txt" -- sleep "$((S + 1))" 2>/dev/null &
			pp=$!
		fi
		out=$(w "${U[$s]}" "$S")
		read -r u1 y1 < <(awk '{print $14, $15}' "/proc/${P[$s]}/stat")
		st1=$(awk '/^cpu0 /{print $9}' /proc/stat)
		sc=0
		if [[ -n $pp ]]; then
			wait "$pp"
			sc=$(grep raw_syscalls "$OUTD/perf.txt" | cut -d, -f1)
		fi
		n=$(grep -o '[0-9]* requests in' <<<"$out" | awk '{print $1}')
		awk -v r="$r" -v s="$s" -v n="$n" -v u="$((u1 - u0))" -v y="$((y1 - y0))" -v st="$((st1 - st0))" -v sc="${sc:-0}" \
			-v rps="$(grep Requests/sec <<<"$out" | awk '{print $2}')" -v p99="$(awk '$1=="99%"{print $2}' <<<"$out")" \
			-v err="$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr '\n' ' ')" \
			'BEGIN { printf "%d %s %.0f req/s user %.1f sys %.1f cpu %.1f us/req syscalls %.2f/req steal %d p99 %s %s\n",
				r, s, rps, u * 1e4 / n, y * 1e4 / n, (u + y) * 1e4 / n, sc / n, st, p99, err }' >>"$OUTD/res"
	done
done
awk '$4 == "req/s" { n[$2]++; q[$2] += $3; c[$2] += $10; y[$2] += $13 }
	END { for (s in n) printf "mean %s %.0f req/s cpu %.1f us/req syscalls %.2f/req\n", s, q[s] / n[s], c[s] / n[s], y[s] / n[s] }' "$OUTD/res" | sort >>"$OUTD/res"
cat /proc/loadavg >>"$OUTD/res"
kill $HP
wait $HP
