#!/usr/bin/env bash
# bench/jobs.sh: background jobs beside River. The platform's runner
# (controlplane/jobs) and River (github.com/riverqueue/river, built in the
# nested module bench/jobs so that it never enters the product's go.mod)
# on the same engine: SQLite files with the same settings, and PostgreSQL
# (Debian's postgresql, started for the run) when installed. See
# bench/README.md, "Background jobs".
#
#   bash bench/jobs.sh            # crash check, then 3 rounds of 10,000 empty jobs (a few minutes on 2 cores)
#   QUICK=1 bash bench/jobs.sh    # 2,000 jobs, one round: a smoke test, not a result
#
# Settings (environment): QUICK, JOBS_N (jobs a run; default 10000, QUICK
# 2000), JOBS_ROUNDS (3; QUICK 1), JOBS_WORKERS (8, both libraries),
# JOBS_ENGINES (sqlite,postgres), JOBS_CRASH (1: run the crash check first;
# 0 to skip), JOBS_KILLS (SIGKILLs of the crash check's child; 4), GO.
# Results: the run's output, and bench/out/jobs-<UTC time>/ (crash.md,
# bench.md; bench/out is git-ignored). The ratios platform ÷ River are
# printed last.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
QUICK=${QUICK:-}
if [[ -n $QUICK ]]; then
	JOBS_N=${JOBS_N:-2000} JOBS_ROUNDS=${JOBS_ROUNDS:-1}
fi
JOBS_N=${JOBS_N:-10000}
JOBS_ROUNDS=${JOBS_ROUNDS:-3}
JOBS_WORKERS=${JOBS_WORKERS:-8}
JOBS_ENGINES=${JOBS_ENGINES:-sqlite,postgres}
JOBS_CRASH=${JOBS_CRASH:-1}
JOBS_KILLS=${JOBS_KILLS:-4}

OUT=$BENCH/out/jobs-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
echo "building bench/jobs (River v0.51.2 in its own module) ..." >&2
(cd "$BENCH/jobs" && "$GO" build -o "$OUT/benchjobs" .)

echo "machine: $(nproc) cores, $(uname -sr); load: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ $JOBS_CRASH == 1 ]]; then
	"$OUT/benchjobs" -crash -engines "$JOBS_ENGINES" -workers "$JOBS_WORKERS" -kills "$JOBS_KILLS" -dir "$OUT/scratch-crash" | tee "$OUT/crash.md"
	echo
fi
"$OUT/benchjobs" -n "$JOBS_N" -rounds "$JOBS_ROUNDS" -workers "$JOBS_WORKERS" -engines "$JOBS_ENGINES" -dir "$OUT/scratch" | tee "$OUT/bench.md"
rm -rf "$OUT/scratch" "$OUT/scratch-crash" "$OUT/benchjobs"
