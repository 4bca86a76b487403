#!/usr/bin/env bash
# bench/build.sh: does a build slow what the edge serves? The edge's p99 on
# a cached 4 KB page over HTTP/2, with no build running and while a project
# builds, in alternating rounds of one run; the ratio (during / idle) is
# printed last. See bench/README.md, "A build beside the edge".
#
#   bash bench/build.sh                # 5 rounds of 10 s each way
#   QUICK=1 bash bench/build.sh        # 1 round of 3 s: a smoke test, not a result
#
# The whole platform (API, edge, and so the sandboxed build it starts) is
# pinned to SERVER_CPU, the load generator to CLIENT_CPU: the build and the
# edge share one core, the worst case for the edge. The build is a Node.js
# program keeping two threads busy for BURN seconds under the bwrap
# sandbox (the app sandbox of production; `none` when bwrap is missing,
# which the table says).
#
# Settings (environment): ROUNDS (5; QUICK 1), DURATION (10s; QUICK 3s),
# CONC (requests in flight, 16) over CONNS (4) connections, BURN (seconds a
# build runs, DURATION + 10), PLATFORM_BIN (default bin/platform, built
# first with make build), SERVER_CPU and CLIENT_CPU (0, 1),
# BENCH_BUILD_WORK (scratch, emptied; default /tmp/platform-bench-build).
# Results: bench/out/build-<UTC time>/ (rounds.jsonl, table.md, logs/).
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
. "$BENCH/lib/common.sh"

GO=${GO:-go}
QUICK=${QUICK:-}
if [[ -n $QUICK ]]; then
	ROUNDS=${ROUNDS:-1} DURATION=${DURATION:-3s}
fi
ROUNDS=${ROUNDS:-5} DURATION=${DURATION:-10s}
CONC=${CONC:-16} CONNS=${CONNS:-4}
secs=${DURATION%s}
BURN=${BURN:-$((secs + 10))}
SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
WORK=${BENCH_BUILD_WORK:-/tmp/platform-bench-build}
API=17702 ADMIN=17703 HTTP=17704 HTTPS=17705
KEY=svc_benchbuild01_0123456789abcdefghijklmnopqrstuvwxyzABCD

for tool in curl jq taskset node; do
	command -v "$tool" >/dev/null || die "$tool is missing (Debian: curl jq util-linux nodejs)"
done
fresh_workdir
trap 'stop_all' EXIT
trap 'exit 130' INT TERM
OUT=$ROOT/bench/out/build-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
ln -sfn "$(basename "$OUT")" "$ROOT/bench/out/latest-build"

BIN=${PLATFORM_BIN:-}
if [[ -z $BIN ]]; then
	log "building bin/platform (make build)"
	make -C "$ROOT" build >/dev/null
	BIN=$ROOT/bin/platform
fi
log "building the load generator"
"$GO" build -o "$WORK/loadgen" "$ROOT/bench/cmd/loadgen"

SANDBOX=bwrap
command -v bwrap >/dev/null || SANDBOX=none
start platform "$SERVER_CPU" env GOMAXPROCS=1 "$BIN" serve --data "$WORK/data" --runtime-dir "$WORK/runtime" \
	--api-addr "127.0.0.1:$API" --admin-addr "127.0.0.1:$ADMIN" --http-addr "127.0.0.1:$HTTP" \
	--https-addr "127.0.0.1:$HTTPS" --apps-domain localhost --bootstrap-key "$KEY" --log-level warn \
	--rtmp-addr "" --app-sandbox "$SANDBOX" --plan scale
wait_port "$API" platform

api() {
	local method=$1 path=$2
	shift 2
	curl -sS --fail-with-body -X "$method" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
		"http://127.0.0.1:$API$path" "$@"
}

# project NAME FILES-JSON: a project with a repo holding FILES as commit 1;
# prints "projectId repoId".
project() {
	local name=$1 files=$2 p r
	p=$(api POST /api/projects -d "{\"name\":\"$name\"}" | jq -r .project.id)
	r=$(api POST /api/repos -d "{\"name\":\"$name\"}" | jq -r .repo.id)
	api PATCH "/api/projects/$p" -d "{\"repoUrl\":\"http://127.0.0.1:$API/api/repos/$r\"}" >/dev/null
	api POST "/api/repos/$r/commits" -d "{\"message\":\"bench\",\"files\":$files}" >/dev/null
	echo "$p $r"
}

# deploy PROJECT REPO COMMIT: starts a deploy; prints the deployment id.
deploy() {
	api POST "/api/repos/$2/deploy" -d "{\"projectId\":\"$1\",\"commit\":$3}" | jq -r .deployment.id
}

# state DEPLOYMENT: prints its state.
state() { api GET "/api/deployments/$1" | jq -r .deployment.state; }

page=$(head -c 4000 /dev/zero | tr '\0' 'x')
read -r site_project site_repo < <(project bench "[{\"path\":\"index.html\",\"content\":\"<!doctype html><title>bench</title><p>$page</p>\"}]")
d=$(deploy "$site_project" "$site_repo" 1)
for _ in $(seq 300); do [[ $(state "$d") == live ]] && break; sleep 0.1; done
[[ $(state "$d") == live ]] || die "the bench site did not go live (see $WORK/logs/platform.log)"

burn=$(jq -Rs . <<JS
const { Worker, isMainThread } = require("node:worker_threads");
const end = Date.now() + ${BURN} * 1000;
const spin = () => { let x = 0; while (Date.now() < end) { for (let i = 0; i < 1e5; i++) x += i; } return x; };
if (isMainThread) { new Worker(__filename); spin(); require("node:fs").mkdirSync("dist", { recursive: true }); require("node:fs").writeFileSync("dist/index.html", "built"); } else { spin(); }
JS
)
read -r build_project build_repo < <(project builder "[{\"path\":\"package.json\",\"content\":$(jq -Rs . <<<'{"name":"builder","private":true,"scripts":{"build":"node burn.js"}}')},{\"path\":\"burn.js\",\"content\":$burn}]")

URL="https://127.0.0.1:$HTTPS/" HOSTHDR="Host: bench.localhost"
taskset -c "$CLIENT_CPU" "$WORK/loadgen" -proto h2 -check -H "$HOSTHDR" "$URL" >/dev/null || die "the edge does not serve $URL"

# measure LABEL ROUND: one load run; appends its BENCHJSON with the label.
measure() {
	taskset -c "$CLIENT_CPU" "$WORK/loadgen" -proto h2 -c "$CONC" -conns "$CONNS" -d "$DURATION" -H "$HOSTHDR" "$URL" |
		sed -n 's/^BENCHJSON //p' | jq -c --arg l "$1" --argjson r "$2" '. + {label: $l, round: $r}' >>"$OUT/rounds.jsonl"
}

log "edge p99 on $URL, $CONC in flight over $CONNS HTTP/2 connections, $DURATION each, $ROUNDS round(s); sandbox $SANDBOX"
for round in $(seq "$ROUNDS"); do
	measure idle "$round"
	d=$(deploy "$build_project" "$build_repo" 1)
	for _ in $(seq 300); do
		api GET "/api/projects/$build_project/logs?source=build&deployment=$d" |
			jq -e '.lines | length > 0' >/dev/null 2>&1 && break
		sleep 0.1
	done
	measure build "$round"
	for _ in $(seq 600); do
		s=$(state "$d")
		[[ $s == live || $s == failed ]] && break
		sleep 0.5
	done
	[[ $s == live ]] || die "the build deploy ended $s (see $WORK/logs/platform.log)"
	log "round $round: idle p99 $(jq -r "select(.label==\"idle\" and .round==$round) | .p99" "$OUT/rounds.jsonl") us, during a build $(jq -r "select(.label==\"build\" and .round==$round) | .p99" "$OUT/rounds.jsonl") us"
done

{
	echo "Edge p99 on a cached 4 KB page (HTTP/2, $CONC in flight), idle and during a build on the same core (sandbox $SANDBOX), $ROUNDS round(s) of $DURATION; $(nproc) cores, $(date -u +%Y-%m-%d)."
	echo
	jq -rs '
		def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
		(map(select(.label=="idle")) | sort_by(.round)) as $i | (map(select(.label=="build")) | sort_by(.round)) as $b |
		"| | idle | during a build | ratio (median of rounds) |",
		"|---|---|---|---|",
		"| p50 (us) | \($i | map(.p50) | median) | \($b | map(.p50) | median) | \([range($i|length)] | map($b[.].p50 / $i[.].p50) | median * 100 | round / 100)x |",
		"| p99 (us) | \($i | map(.p99) | median) | \($b | map(.p99) | median) | \([range($i|length)] | map($b[.].p99 / $i[.].p99) | median * 100 | round / 100)x |",
		"| req/s | \($i | map(.requests / .duration_us * 1e6 | round) | median) | \($b | map(.requests / .duration_us * 1e6 | round) | median) | \([range($i|length)] | map(($b[.].requests / $b[.].duration_us) / ($i[.].requests / $i[.].duration_us)) | median * 100 | round / 100)x |"
	' "$OUT/rounds.jsonl"
	echo
	echo "target: p99 during a build within 1.2x of idle"
} | tee "$OUT/table.md"
