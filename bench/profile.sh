#!/usr/bin/env bash
# bench/profile.sh: where the edge's time goes under workload 1 (the cached
# 4 KB page over HTTPS, Shield on), on the same setup as bench/run.sh.
#
#   bash bench/profile.sh            # about 2 minutes
#
# It measures (the latency trace of the same load is bench/trace.sh):
#   1. req/s of the edge under variants of the request that switch parts of
#      the hot path off (user agent, X-Forwarded-For, Shield), alternating;
#   2. system calls per request of the edge, nginx and Caddy (perf stat on
#      the syscall tracepoints of the serving process);
#   3. a CPU profile of the running edge under the load, by perf (sampling
#      the whole process, kernel included, with Go's frame pointers);
#   4. a pprof CPU profile of the running edge under the same load, from the
#      admin listener's /debug/pprof/profile (Go frames only, no kernel);
#   5. a pprof CPU profile of the hot path's Go benchmark beside the code
#      (edge: BenchmarkStaticHitSerial, every Shield rule on, no network, no TLS).
# Results: bench/out/profile-<UTC time>/summary.md and the raw profiles.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
for f in common install edge peers load record prepare; do
	# shellcheck disable=SC1090
	. "$BENCH/lib/$f.sh"
done

DURATION=${DURATION:-4} WARMUP=${WARMUP:-1} ROUNDS=${ROUNDS:-4} CONNS=${CONNS:-64}
PERF_SECONDS=${PERF_SECONDS:-8}
SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
WORK=${BENCH_WORK:-/tmp/platform-bench}
# shellcheck disable=SC2034 # read by the lib/ files
GEOIP=$ROOT/data/geo/country.mmdb
GO=${GO:-go}

prepare profile
install_perf
trap 'stop_all; cp -r "$WORK/logs" "$OUT/logs" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
start_origin
start_edge
setup_edge
start_peers
EDGE_PID=$(pid_of edge)
URL=https://127.0.0.1:$EDGE_HTTPS/

# load DURATION HEADER...: one wrk run of the cached page at $URL; prints
# "req/s p99_us status_errors requests".
load() {
	local d=$1 args=() h out
	shift
	for h in "$@"; do args+=(-H "$h"); done
	out=$(taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"${d}s" --timeout 10s -s "$BENCH/wrk.lua" "${args[@]}" "$URL")
	grep '^BENCHJSON ' <<<"$out" | cut -d' ' -f2- | jq -r '"\(.requests / (.duration_us / 1e6) | floor) \(.p99) \(.status) \(.requests)"'
}

# syscalls NAME PID PORT: system calls per request of PID serving workload 1
# over HTTPS on PORT, counted by perf stat over one wrk run.
syscalls() {
	local name=$1 pid=$2 port=$3 hs out reqs
	mapfile -t hs < <(variant_headers a)
	URL=https://127.0.0.1:$port/ load "$WARMUP" "${hs[@]}" >/dev/null
	perf stat -x, -o "$OUT/syscalls-$name.csv" -p "$pid" \
		-e syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendfile64,syscalls:sys_enter_sendto \
		-e syscalls:sys_enter_read,syscalls:sys_enter_recvfrom \
		-e syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep \
		-- sleep "$DURATION" &
	local perfpid=$!
	out=$(URL=https://127.0.0.1:$port/ load "$DURATION" "${hs[@]}")
	wait "$perfpid"
	reqs=${out##* }
	awk -F, -v n="$name" -v r="$reqs" -v rps="${out%% *}" '
		$3 ~ /sys_enter_(write|writev|sendfile64|sendto)$/ { w += $1 }
		$3 ~ /sys_enter_(read|recvfrom)$/ { rd += $1 }
		$3 ~ /sys_enter_(epoll_wait|epoll_pwait)$/ { e += $1 }
		$3 ~ /sys_enter_(futex|nanosleep)$/ { f += $1 }
		END { printf "| %s | %s | %.2f | %.2f | %.3f | %.3f |\n", n, rps, w / r, rd / r, e / r, f / r }' "$OUT/syscalls-$name.csv" >>"$OUT/syscalls.md"
}

FULL=("Host: $EDGE_SITE_HOST" "X-Forwarded-For: $ALLOW_IP" "User-Agent: $BENCH_UA" "Accept: */*")
declare -A VARIANT=(
	[a]="as bench/run.sh sends it: Host, X-Forwarded-For (allowed, US), 101-byte User-Agent, Accept"
	[b]="no User-Agent (the AI-crawler scan has nothing to read)"
	[c]="no X-Forwarded-For (client 127.0.0.1: no header walk; loopback is XX without a database lookup)"
	[d]="only Host"
)
variant_headers() {
	case $1 in
	a) printf '%s\n' "${FULL[@]}" ;;
	b) printf '%s\n' "${FULL[0]}" "${FULL[1]}" "${FULL[3]}" ;;
	c) printf '%s\n' "${FULL[0]}" "${FULL[2]}" "${FULL[3]}" ;;
	d) printf '%s\n' "${FULL[0]}" ;;
	esac
}

measure_variants() { # SHIELD-LABEL
	local round v hs out
	for ((round = 1; round <= ROUNDS; round++)); do
		for v in a b c d; do
			mapfile -t hs < <(variant_headers "$v")
			load "$WARMUP" "${hs[@]}" >/dev/null
			out=$(load "$DURATION" "${hs[@]}")
			echo "$1 $v $round $out" >>"$OUT/variants.txt"
			log "shield $1, variant $v, round $round: $out (req/s p99_us status_errors)"
		done
	done
}

: >"$OUT/variants.txt"
measure_variants on

log "system calls per request: edge, nginx, Caddy"
: >"$OUT/syscalls.md"
syscalls edge "$EDGE_PID" "$EDGE_HTTPS"
syscalls nginx "$(pgrep -P "$(pid_of nginx)" | head -1)" "$NGINX_HTTPS"
syscalls caddy "$(pid_of caddy)" "$CADDY_HTTPS"

log "perf: sampling the edge (PID $EDGE_PID) for $PERF_SECONDS s under variant a"
mapfile -t hs < <(variant_headers a)
load $((PERF_SECONDS + 3)) "${hs[@]}" >"$OUT/perf-load.txt" &
loadpid=$!
sleep 1
perf record -F 1999 -g -p "$EDGE_PID" -o "$OUT/perf.data" -- sleep "$PERF_SECONDS" 2>"$OUT/perf-record.log" >/dev/null
wait "$loadpid"

log "pprof: the running edge's CPU profile for $PERF_SECONDS s under variant a (admin /debug/pprof/profile)"
load $((PERF_SECONDS + 3)) "${hs[@]}" >"$OUT/pprof-load.txt" &
loadpid=$!
sleep 1
curl -sS --fail -o "$OUT/edge-live.cpu.prof" "http://127.0.0.1:$EDGE_ADMIN/debug/pprof/profile?seconds=$PERF_SECONDS"
wait "$loadpid"

log "Shield off (PUT /api/services/shield {\"enabled\":false}), variants again"
api PUT /api/services/shield -d '{"enabled":false}' >/dev/null
for _ in $(seq 100); do
	code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Host: $EDGE_SITE_HOST" -H "X-Forwarded-For: $DENY_IP" "$URL")
	[[ $code == 200 ]] && break
	sleep 0.2
done
[[ $code == 200 ]] || die "Shield still on after 20 s"
measure_variants off
stop_all

log "pprof: BenchmarkStaticHitSerial (edge/bench_test.go) with -cpuprofile"
"$GO" test -c -o "$OUT/edge.test" "$ROOT/edge"
(cd "$ROOT/edge" && GOMAXPROCS=1 "$OUT/edge.test" -test.run '^$' -test.bench '^BenchmarkStaticHitSerial$' \
	-test.benchmem -test.benchtime 5s -test.cpu 1 -test.cpuprofile "$OUT/edge-bench.cpu.prof") >"$OUT/edge-bench.txt"

# The stages of a request shown with their inclusive share of the samples.
STAGES='fasthttp\.\(\*Server\)\.serveConnCounted|bufio\.\(\*Writer\)\.Flush|crypto/tls\.\(\*Conn\)\.Write|crypto/tls\.\(\*Conn\)\.Read'
STAGES+='|crypto/tls\.\(\*halfConn\)\.(encrypt|decrypt)|internal/poll\.\(\*FD\)\.(Read|Write)|entry_SYSCALL_64_after_hwframe|net_rx_action'
STAGES+='|fasthttp\.writeResponse|fasthttp\.\(\*RequestHeader\)\.parse|github\.com/svcplatform/platform/edge\.\(\*Edge\)\.(serve|serveStatic|serveFile)'
STAGES+='|github\.com/svcplatform/platform/rules\.\(\*Ruleset\)\.Evaluate|github\.com/svcplatform/platform/rules\.MatchCrawler'
STAGES+='|github\.com/svcplatform/platform/geodata\.\(\*DB\)\.Country|github\.com/svcplatform/platform/edge\.clientAddr'
STAGES+='|github\.com/svcplatform/platform/edge\.\(\*metrics\)\.request|github\.com/svcplatform/platform/cache\.\(\*Cache\)\.GetStatic'
STAGES+='|internal/poll\.setDeadlineImpl|runtime\.schedule|runtime\.findRunnable|runtime\.netpoll|runtime\.gcBgMarkWorker|runtime\.mallocgc'
{
	echo "# Profile of the edge under workload 1 (HTTPS, cached 4 KB page, Shield on)"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), platform $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), \`bash bench/profile.sh\`; edge pinned to CPU $SERVER_CPU with GOMAXPROCS=1, wrk on CPU $CLIENT_CPU, -c$CONNS, ${DURATION} s runs, $ROUNDS rounds."
	echo
	echo "## req/s by request variant (median of $ROUNDS rounds, min-max)"
	echo
	echo "| variant | Shield on | Shield off |"
	echo "|---|---:|---:|"
	spread() { # SHIELD VARIANT: "median (min-max)" of req/s over the rounds
		awk -v s="$1" -v v="$2" '$1 == s && $2 == v { print $4 }' "$OUT/variants.txt" | sort -n |
			awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2); printf "%d (%d-%d)", m, a[1], a[NR] }'
	}
	for v in a b c d; do
		echo "| $v: ${VARIANT[$v]} | $(spread on "$v") | $(spread off "$v") |"
	done
	echo
	echo "Rounds alternate the variants; on a noisy machine the spread (min-max) can exceed the differences between variants."
	echo
	echo "## System calls per request (workload 1, HTTPS; one wrk run of ${DURATION} s under perf stat)"
	echo
	echo "| server | req/s (under perf stat) | writes | reads | epoll waits | futex + nanosleep |"
	echo "|---|---:|---:|---:|---:|---:|"
	cat "$OUT/syscalls.md"
	echo
	echo "## perf: the running edge, self time by symbol (top 40)"
	echo
	echo '```'
	perf report -i "$OUT/perf.data" --no-children --sort symbol --percent-limit 0.7 --stdio -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -40
	echo '```'
	echo
	echo "## perf: inclusive time of the main stages"
	echo
	echo '```'
	perf report -i "$OUT/perf.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^#' |
		grep -E "\] [^ ]*($STAGES) +-" | sed -E 's/ +- +- *$//'
	echo '```'
	echo
	echo "## pprof: the running edge under the load (admin /debug/pprof/profile), top 30 by cumulative time"
	echo
	echo '```'
	"$GO" tool pprof -top -cum -nodecount 30 "$OUT/edge-live.cpu.prof" 2>/dev/null
	echo '```'
	echo
	echo "## pprof: BenchmarkStaticHitSerial (no network, no TLS), top 30 by flat time"
	echo
	echo '```'
	grep -E '^Benchmark' "$OUT/edge-bench.txt"
	"$GO" tool pprof -top -nodecount 30 "$OUT/edge.test" "$OUT/edge-bench.cpu.prof" 2>/dev/null
	echo '```'
} >"$OUT/summary.md"
cat "$OUT/summary.md"
log "profile in ${OUT#"$ROOT"/}"
