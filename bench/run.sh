#!/usr/bin/env bash
# bench/run.sh: the edge (`platform serve`) against nginx, Varnish and Caddy,
# measured side by side on loopback. See bench/README.md.
#
#   make bench               # 5 alternating rounds (11 of the target cells), 3 s a run: about 22 minutes
#   make bench QUICK=1       # 1 round, 3 s a run: about 5 minutes
#   ONLY=page4k,proxy SERVERS=edge,nginx bash bench/run.sh
#
# Settings (environment): ROUNDS, DURATION and WARMUP (seconds a run), CONNS
# (wrk connections; requests in flight over HTTP/2 and HTTP/3), H_CONNS (their
# connections), H2LOAD_CONNS and H2LOAD_STREAMS (h2load's -c and -m),
# SERVER_CPU and CLIENT_CPU, ONLY (workloads: page4k
# file1m deny country proxy redirect), SERVERS (edge nginx nginx+rules varnish
# caddy), PROTOS (https http h2 h3 h2load h2load-h1), QUIET (wait for idle cores before each run), BENCH_WORK (scratch directory, emptied; default /tmp/platform-bench),
# HOLD=1 (start and check everything, then wait to be stopped, for poking at it),
# EDGE_BIN (the platform binary to measure; default bin/platform, built first),
# EDGE2_BIN (a second build measured in the same rounds as the server
# "edge2", on the cached page over HTTPS: before/after a change, seconds
# apart; table.md ends with the per-round ratios edge2 ÷ edge), EDGE_MODE
# (serve, or edge: `platform edge` alone on the server's core).
# Results: bench/out/run-<UTC time>/ (settings.md, results.jsonl, table.md,
# wrk.log, logs/), bench/out/latest-run pointing at the last one.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
. "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/install.sh
. "$BENCH/lib/install.sh"
# shellcheck source=bench/lib/edge.sh
. "$BENCH/lib/edge.sh"
# shellcheck source=bench/lib/peers.sh
. "$BENCH/lib/peers.sh"
# shellcheck source=bench/lib/load.sh
. "$BENCH/lib/load.sh"
# shellcheck source=bench/lib/record.sh
. "$BENCH/lib/record.sh"
# shellcheck source=bench/lib/prepare.sh
. "$BENCH/lib/prepare.sh"

BENCH_CMD=$(bench_command) # before the defaults below are filled in
if [[ ${QUICK:-} == 1 ]]; then
	ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-3} WARMUP=${WARMUP:-1}
else
	ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-3} WARMUP=${WARMUP:-1}
fi
TARGET_ROUNDS=${TARGET_ROUNDS:-$((${QUICK:-0} == 1 ? ROUNDS : ROUNDS + 6))}
CONNS=${CONNS:-64}
H_CONNS=${H_CONNS:-8} # HTTP/2 and HTTP/3 connections carrying the $CONNS requests in flight
# h2load: connections and streams on each (h2load -c -m); h2load-h1 keeps
# as many requests in flight over HTTP/1.1, one per connection.
H2LOAD_CONNS=${H2LOAD_CONNS:-64} H2LOAD_STREAMS=${H2LOAD_STREAMS:-10}
SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
WORK=${BENCH_WORK:-/tmp/platform-bench}
GEOIP=$ROOT/data/geo/country.mmdb
GO=${GO:-go}

prepare run

trap 'stop_all; cp -r "$WORK/logs" "$OUT/logs" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
start_origin
start_edge
setup_edge
start_edge2
start_peers
bench_pids

mapfile -t CELLS < <(selected_cells)
((${#CELLS[@]} > 0)) || die "no cell selected (ONLY=${ONLY:-} SERVERS=${SERVERS:-})"
for c in "${CELLS[@]}"; do
	# shellcheck disable=SC2086
	check_cell $c
done
# Varnish and the edge fill their caches here, before any measured run.
record_settings >"$OUT/settings.md"
if [[ ${HOLD:-} == 1 ]]; then
	log "HOLD=1: every server is up (cells below); stop with Ctrl-C or kill $$"
	printf '  %s\n' "${CELLS[@]}" >&2
	while :; do sleep 1; done
fi

# The cells the speed targets compare (the cached page and forwarding over
# HTTPS, the cached page over HTTP/2 by h2load, edge and nginx, and the
# edge's HTTP/1.1 by h2load; bench/README.md) run on alone after the full
# rounds, up to TARGET_ROUNDS: a p99 or a req/s ratio taken from five 3-s
# runs moves by tens of percent with the host, and the extra rounds narrow
# their medians.
mapfile -t TCELLS < <(printf '%s\n' "${CELLS[@]}" | awk '(($1 == "page4k" || $1 == "proxy") && $2 == "https" || $1 == "page4k" && $2 == "h2load") && ($3 == "edge" || $3 == "nginx") ||
	$1 == "page4k" && $2 == "h2load-h1" && $3 == "edge"')
((TARGET_ROUNDS > ROUNDS && ${#TCELLS[@]} > 0)) || TARGET_ROUNDS=$ROUNDS
runs=$((${#CELLS[@]} * ROUNDS + ${#TCELLS[@]} * (TARGET_ROUNDS - ROUNDS)))
# Aligned to DAMON (load.sh, damon_wait), a run takes one of its ~5.2-s
# periods, 5.5 s with the bookkeeping (239 runs took 21.9 minutes).
per10=$(((WARMUP + DURATION) * 21 / 2)) # tenths of a second
if [[ ${DAMON_ALIGN:-1} == 1 ]] && pgrep '^kdamond' >/dev/null && ((per10 < 55)); then per10=55; fi
log "${#CELLS[@]} cells x $ROUNDS rounds + ${#TCELLS[@]} target cells x $((TARGET_ROUNDS - ROUNDS)) more rounds = $runs runs of ${WARMUP}+${DURATION} s: about $((runs * per10 / 600 + 1)) minutes"
: >"$OUT/results.jsonl"
for ((round = 1; round <= TARGET_ROUNDS; round++)); do
	# Every round runs each server once per (workload, proto); even rounds in
	# reverse order, so drift over a round falls on every server alike.
	if ((round <= ROUNDS)); then
		cur=("${CELLS[@]}")
	else
		cur=("${TCELLS[@]}")
	fi
	if ((round % 2 == 0)); then
		mapfile -t order < <(printf '%s\n' "${cur[@]}" | tac)
	else
		order=("${cur[@]}")
	fi
	for c in "${order[@]}"; do
		# shellcheck disable=SC2086
		run_cell "$round" $c
	done
done

"$WORK/benchkit" table -in "$OUT/results.jsonl" >"$OUT/table.md"
if [[ -n ${EDGE2_BIN:-} ]]; then
	# Two builds in the same rounds: per-round ratios of the cached page over
	# HTTPS, edge2 ÷ edge and each ÷ nginx (when measured), and their medians.
	jq -rs -f "$BENCH/lib/ab.jq" "$OUT/results.jsonl" >"$OUT/ab.md"
	printf '\nedge: %s\nedge2: %s\n' "${EDGE_BIN:-bin/platform}" "$EDGE2_BIN" >>"$OUT/ab.md"
	cat "$OUT/ab.md" >>"$OUT/table.md"
fi
echo
cat "$OUT/settings.md"
echo
cat "$OUT/table.md"
echo
log "results in ${OUT#"$ROOT"/}"
