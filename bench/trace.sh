#!/usr/bin/env bash
# bench/trace.sh: a runtime/trace of the edge under workload 1 (the cached
# 4 KB page over HTTPS, Shield on), on the same setup as bench/run.sh, to see
# what the slowest requests wait on.
#
#   bash bench/trace.sh                  # `platform serve`, about 1 minute
#   EDGE_MODE=edge bash bench/trace.sh   # `platform edge` alone on the core
#
# It loads the edge with wrk (--latency: per-request percentiles) and, in the
# middle of the run, takes TRACE_SECONDS (default 2) of runtime/trace from the
# admin listener's /debug/pprof/trace, then a wrk run without tracing for the
# latency the trace does not disturb. bench/lib/trace_tail.sh reads the
# goroutine state transitions: the server time of each request (netpoll
# readies the connection -> it blocks on the next read), the time it was
# runnable but not running, the run queue, GC cycles and the longest
# stretches without blocking. Then `go tool trace -pprof=...` turns
# the trace into profiles of where goroutines waited: sched (runnable, not
# running), net (blocked on the network), syscall and sync.
# It also takes a heap profile at both ends of TRACE_SECONDS of the
# untraced run: what the edge allocates per request, which sets how often GC runs.
# Results: bench/out/trace-<UTC time>/ (trace.out, wrk-*.txt, *.pprof,
# summary.md). Open the trace with `go tool trace trace.out`.
# Settings: EDGE_BIN, EDGE_MODE, CONNS, DURATION, TRACE_SECONDS, SERVER_CPU,
# CLIENT_CPU, BENCH_WORK (as bench/run.sh). Take /tmp/bench.lock around it on
# a shared machine: flock /tmp/bench.lock bash bench/trace.sh
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
for f in common install edge peers load record prepare trace_tail; do
	# shellcheck disable=SC1090
	. "$BENCH/lib/$f.sh"
done

DURATION=${DURATION:-6} WARMUP=${WARMUP:-1} CONNS=${CONNS:-64} TRACE_SECONDS=${TRACE_SECONDS:-2}
SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
WORK=${BENCH_WORK:-/tmp/platform-bench}
# shellcheck disable=SC2034 # read by the lib/ files
GEOIP=$ROOT/data/geo/country.mmdb
GO=${GO:-go}

prepare trace
trap 'stop_all; cp -r "$WORK/logs" "$OUT/logs" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
start_origin
start_edge
setup_edge
URL=https://127.0.0.1:$EDGE_HTTPS/

# wrk_latency SECONDS FILE: one wrk run of the cached page with per-request
# percentiles (--latency) and wrk.lua's JSON line, into FILE.
wrk_latency() {
	taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1s" --timeout 10s --latency -s "$BENCH/wrk.lua" \
		-H "Host: $EDGE_SITE_HOST" -H "X-Forwarded-For: $ALLOW_IP" -H "User-Agent: $BENCH_UA" -H 'Accept: */*' \
		"$URL" >"$2"
}

wrk_latency "$WARMUP" "$OUT/wrk-warmup.txt"
log "loading the edge for $DURATION s; tracing $TRACE_SECONDS s of it"
wrk_latency "$DURATION" "$OUT/wrk-traced.txt" &
wrkpid=$!
sleep 1
curl -sS --fail -o "$OUT/trace.out" "http://127.0.0.1:$EDGE_ADMIN/debug/pprof/trace?seconds=$TRACE_SECONDS"
wait "$wrkpid"
log "the same load without tracing; the allocations made meanwhile (delta heap profile)"
# (a heap profile is published at the end of a GC cycle: gc=1 forces one
# at both ends, and the difference is what the load allocated)
wrk_latency "$DURATION" "$OUT/wrk-untraced.txt" &
wrkpid=$!
sleep 1
curl -sS --fail -o "$OUT/heap-before.pprof" "http://127.0.0.1:$EDGE_ADMIN/debug/pprof/heap?gc=1"
sleep "$TRACE_SECONDS"
curl -sS --fail -o "$OUT/heap-after.pprof" "http://127.0.0.1:$EDGE_ADMIN/debug/pprof/heap?gc=1"
wait "$wrkpid"

for kind in sched net syscall sync; do
	"$GO" tool trace -pprof="$kind" "$OUT/trace.out" >"$OUT/$kind.pprof" 2>/dev/null || true
done
{
	echo "# trace of the edge (EDGE_MODE=${EDGE_MODE:-serve}) under workload 1, $(date -u +%FT%TZ)"
	echo
	echo "load: $(cat /proc/loadavg); CONNS=$CONNS; trace $TRACE_SECONDS s inside a $DURATION s wrk run"
	echo
	echo "## what the requests waited on (bench/lib/trace_tail.sh)"
	echo
	trace_tail "$OUT/trace.out"
	for f in traced untraced; do
		echo
		echo "## wrk ($f)"
		echo '```'
		sed -n '/Latency Distribution/,/Requests\/sec/p' "$OUT/wrk-$f.txt"
		echo '```'
	done
	echo
	echo "## allocations during $TRACE_SECONDS s of the untraced run (go tool pprof -sample_index=alloc_space -top)"
	echo '```'
	"$GO" tool pprof -sample_index=alloc_space -top -nodecount=25 -base "$OUT/heap-before.pprof" "$OUT/heap-after.pprof" 2>/dev/null | head -35 || true
	echo '```'
	for kind in sched net syscall sync; do
		echo
		echo "## go tool trace -pprof=$kind (top, cumulative wait)"
		echo '```'
		"$GO" tool pprof -top -nodecount=25 "$OUT/$kind.pprof" 2>/dev/null | head -35 || true
		echo '```'
	done
} >"$OUT/summary.md"
cat "$OUT/summary.md"
log "results in ${OUT#"$ROOT"/}; open the trace: go tool trace $OUT/trace.out"
