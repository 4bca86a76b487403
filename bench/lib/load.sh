# shellcheck shell=bash
# The cells of the comparison and how one is loaded: wrk on $CLIENT_CPU,
# one thread, $CONNS keep-alive connections, the same headers for every
# server, a warm-up run, then the measured run with the busy share of both
# cores read from /proc/stat around it.

# A browser's user agent: the AI-crawler rule scans all of it.
BENCH_UA='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36'

# cells prints one line per (workload proto server): the URL, the Host
# header, the X-Forwarded-For client, and whether answers are "ok" (2xx or
# 3xx) or "refused" (403). Order within a workload is the round order.
cells() {
	local s=$EDGE_SITE_HOST a=$EDGE_APP_HOST
	cat <<CELLS
page4k https edge https://127.0.0.1:$EDGE_HTTPS/ $s $ALLOW_IP ok
page4k https edge2 https://127.0.0.1:$EDGE2_HTTPS/ $s $ALLOW_IP ok
page4k https nginx https://127.0.0.1:$NGINX_HTTPS/ $s $ALLOW_IP ok
page4k https nginx+rules https://127.0.0.1:$NGINX_RULES_HTTPS/ $s $ALLOW_IP ok
page4k https varnish https://127.0.0.1:$HITCH_HTTPS/ $s $ALLOW_IP ok
page4k https caddy https://127.0.0.1:$CADDY_HTTPS/ $s $ALLOW_IP ok
page4k http nginx http://127.0.0.1:$NGINX_HTTP/ $s $ALLOW_IP ok
page4k http nginx+rules http://127.0.0.1:$NGINX_RULES_HTTP/ $s $ALLOW_IP ok
page4k http varnish http://127.0.0.1:$VARNISH_HTTP/ $s $ALLOW_IP ok
page4k http caddy http://127.0.0.1:$CADDY_HTTP/ $s $ALLOW_IP ok
file1m https edge https://127.0.0.1:$EDGE_HTTPS/big.bin $s $ALLOW_IP ok
file1m https nginx https://127.0.0.1:$NGINX_HTTPS/big.bin $s $ALLOW_IP ok
file1m https varnish https://127.0.0.1:$HITCH_HTTPS/big.bin $s $ALLOW_IP ok
file1m https caddy https://127.0.0.1:$CADDY_HTTPS/big.bin $s $ALLOW_IP ok
file1m http nginx http://127.0.0.1:$NGINX_HTTP/big.bin $s $ALLOW_IP ok
file1m http varnish http://127.0.0.1:$VARNISH_HTTP/big.bin $s $ALLOW_IP ok
file1m http caddy http://127.0.0.1:$CADDY_HTTP/big.bin $s $ALLOW_IP ok
deny https edge https://127.0.0.1:$EDGE_HTTPS/ $s $DENY_IP refused
deny https nginx+rules https://127.0.0.1:$NGINX_RULES_HTTPS/ $s $DENY_IP refused
deny https caddy https://127.0.0.1:$CADDY_RULES_HTTPS/ $s $DENY_IP refused
deny http nginx+rules http://127.0.0.1:$NGINX_RULES_HTTP/ $s $DENY_IP refused
deny http caddy http://127.0.0.1:$CADDY_RULES_HTTP/ $s $DENY_IP refused
country https edge https://127.0.0.1:$EDGE_HTTPS/ $s $COUNTRY_IP refused
country https nginx+rules https://127.0.0.1:$NGINX_RULES_HTTPS/ $s $COUNTRY_IP refused
country http nginx+rules http://127.0.0.1:$NGINX_RULES_HTTP/ $s $COUNTRY_IP refused
page4k h2 edge https://127.0.0.1:$EDGE_HTTPS/ $s $ALLOW_IP ok
page4k h2 nginx https://127.0.0.1:$NGINX_HTTPS/ $s $ALLOW_IP ok
page4k h2 caddy https://127.0.0.1:$CADDY_HTTPS/ $s $ALLOW_IP ok
page4k h3 edge https://127.0.0.1:$EDGE_HTTPS/ $s $ALLOW_IP ok
page4k h3 caddy https://127.0.0.1:$CADDY_HTTPS/ $s $ALLOW_IP ok
page4k h2load edge https://127.0.0.1:$EDGE_HTTPS/ $s $ALLOW_IP ok
page4k h2load nginx https://127.0.0.1:$NGINX_HTTPS/ $s $ALLOW_IP ok
page4k h2load caddy https://127.0.0.1:$CADDY_HTTPS/ $s $ALLOW_IP ok
page4k h2load-h1 edge https://127.0.0.1:$EDGE_HTTPS/ $s $ALLOW_IP ok
proxy https edge https://127.0.0.1:$EDGE_HTTPS/api/items $a $ALLOW_IP ok
proxy https nginx https://127.0.0.1:$NGINX_PROXY_HTTPS/api/items $a $ALLOW_IP ok
proxy https nginx+rules https://127.0.0.1:$NGINX_RULES_HTTPS/api/items $a $ALLOW_IP ok
proxy https caddy https://127.0.0.1:$CADDY_PROXY_HTTPS/api/items $a $ALLOW_IP ok
proxy h2 edge https://127.0.0.1:$EDGE_HTTPS/api/items $a $ALLOW_IP ok
proxy h2 nginx https://127.0.0.1:$NGINX_PROXY_HTTPS/api/items $a $ALLOW_IP ok
proxy h2 caddy https://127.0.0.1:$CADDY_PROXY_HTTPS/api/items $a $ALLOW_IP ok
proxy h3 edge https://127.0.0.1:$EDGE_HTTPS/api/items $a $ALLOW_IP ok
proxy h3 caddy https://127.0.0.1:$CADDY_PROXY_HTTPS/api/items $a $ALLOW_IP ok
proxy http nginx http://127.0.0.1:$NGINX_PROXY_HTTP/api/items $a $ALLOW_IP ok
proxy http caddy http://127.0.0.1:$CADDY_PROXY_HTTP/api/items $a $ALLOW_IP ok
redirect http edge http://127.0.0.1:$EDGE_HTTP/ $s $ALLOW_IP ok
redirect http nginx http://127.0.0.1:$NGINX_REDIRECT/ $s $ALLOW_IP ok
redirect http caddy http://127.0.0.1:$CADDY_REDIRECT/ $s $ALLOW_IP ok
CELLS
}

# selected_cells applies ONLY (workloads), PROTOS (https http h2 h3 h2load
# h2load-h1) and SERVERS (servers) filters.
selected_cells() {
	local w p s rest
	cells | while read -r w p s rest; do
		[[ -n ${ONLY:-} && " ${ONLY//,/ } " != *" $w "* ]] && continue
		[[ -n ${PROTOS:-} && " ${PROTOS//,/ } " != *" $p "* ]] && continue
		[[ -n ${SERVERS:-} && " ${SERVERS//,/ } " != *" $s "* ]] && continue
		[[ $s == edge2 && -z ${EDGE2_BIN:-} ]] && continue
		echo "$w $p $s $rest"
	done
}

# check_cell W P S URL HOST XFF EXPECT: one request with curl, checked for
# the status and size this workload must answer, so that no run measures
# an error page.
check_cell() {
	local w=$1 p=$2 s=$3 url=$4 host=$5 xff=$6 out code size want_code want_size=""
	case $p in
	h2 | h3) # curl has no HTTP/3 in Debian: the load generator checks both
		out=$("$WORK/loadgen" -proto "$p" -check -H "Host: $host" -H "X-Forwarded-For: $xff" \
			-H "User-Agent: $BENCH_UA" "$url" 2>&1) || die "$w $p $s: $url does not answer over $p: $out" ;;
	h2load | h2load-h1) # the protocol h2load negotiates is checked too
		out=$(h2load_check "$p" "$url" "$host" "$xff" 2>&1) || die "$w $p $s: $url does not answer h2load: $out" ;;
	*)
		out=$(curl -sk -o /dev/null -w '%{http_code} %{size_download}' -H "Host: $host" -H "X-Forwarded-For: $xff" \
			-A "$BENCH_UA" "$url") || die "$w $p $s: $url does not answer" ;;
	esac
	code=${out% *} size=${out#* }
	case $w in
	page4k) want_code=200 want_size=4096 ;;
	file1m) want_code=200 want_size=1048576 ;;
	deny | country) want_code=403 ;;
	proxy) want_code=200 want_size=$ORIGIN_BODY_BYTES ;;
	redirect) want_code=301 ;;
	esac
	[[ $code == "$want_code" ]] || die "$w $p $s: $url answered $code, want $want_code"
	[[ -z $want_size || $size == "$want_size" ]] || die "$w $p $s: $url answered $size bytes, want $want_size"
}

# cpu_ticks prints "busy total steal" ticks of CPU $1 from /proc/stat
# (steal: time the hypervisor gave this virtual CPU's host core to others).
cpu_ticks() {
	awk -v c="cpu$1" '$1 == c { print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9, $9 }' /proc/stat
}

# share TICKS BEFORE AFTER: TICKS (of some threads) in percent of the
# interval between the server core's two cpu_ticks readings.
share() {
	awk -v f="$1" -v a="$2" -v b="$3" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]; printf "%.1f", (t > 0 ? 100 * f / t : 0) }'
}

pct() { # FIELD(1 busy, 3 steal) BEFORE AFTER: share of the interval in percent
	awk -v f="$1" -v a="$2" -v b="$3" 'BEGIN { split(a, x, " "); split(b, y, " ");
		t = y[2] - x[2]; printf "%.1f", (t > 0 ? 100 * (y[f] - x[f]) / t : 0) }'
}

# bench_pids sets BENCH_PIDS: this script, every process it started and
# their children (nginx workers, Varnish's child, hitch's workers).
bench_pids() {
	local entry pid kids
	BENCH_PIDS="$$"
	for entry in "${PIDS[@]}"; do
		pid=${entry%%:*}
		kids=$(pgrep -P "$pid" | tr '\n' ' ' || true)
		BENCH_PIDS+=" $pid $kids"
	done
}

# foreign_ticks prints the CPU ticks (user and system, with reaped
# children) used so far by the user processes the bench did not start:
# other work on the machine that competes with the run.
foreign_ticks() {
	# (a process that exits between the glob and the read makes cat fail,
	# which pipefail and set -e would turn into the end of the whole run)
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v excl=" $BENCH_PIDS " '{
		s = $0; pid = $1; sub(/^.*\) /, "", s); split(s, a, " ")
		if (a[2] == 2 || pid == 2 || index(excl, " " pid " ")) next
		t += a[12] + a[13] + a[14] + a[15] } END { print t + 0 }'
}

# mm_ticks prints the CPU ticks used so far by the kernel's memory-management
# threads: kdamond (DAMON, which this VM runs: bursts of 20-50 ms on either
# core), kswapd, kcompactd and khugepaged. None of them is the servers'
# work (ksoftirqd and the kworkers, which carry the load's network and disk
# work, are not counted).
mm_ticks() {
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk '{
		s = $0; comm = s; sub(/^[^(]*\(/, "", comm); sub(/\).*$/, "", comm); sub(/^.*\) /, "", s); split(s, a, " ")
		if (a[2] == 2 && comm ~ /^(kdamond|kswapd|kcompactd|khugepaged)/) t += a[12] + a[13] } END { print t + 0 }'
}

# server_pids SERVER prints the PIDs of SERVER's processes: the one the
# bench started and its children (nginx's worker, Varnish's child, hitch's
# workers). nginx+rules is a server block of the nginx process.
server_pids() {
	local n pid names=$1
	case $1 in
	nginx+rules) names=nginx ;;
	varnish) names="varnish hitch" ;;
	esac
	for n in $names; do
		pid=$(pid_of "$n") || continue
		echo "$pid"
		pgrep -P "$pid" || true
	done
}

# server_ticks PID... prints the CPU ticks (user and system, every thread)
# the processes have used so far.
server_ticks() {
	local p
	for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null || true; done |
		awk '{ s = $0; sub(/^.*\) /, "", s); split(s, a, " "); t += a[12] + a[13] } END { print t + 0 }'
}

# gc_count SERVER prints how many GC cycles the edge (or edge2) has
# completed (its admin listener's go_gc_duration_seconds_count), or -1 for
# another server.
gc_count() {
	local port
	case $1 in
	edge) port=$EDGE_ADMIN ;;
	edge2) port=$EDGE2_ADMIN ;;
	*) echo -1 && return ;;
	esac
	curl -s --max-time 2 "http://127.0.0.1:$port/metrics" | awk '$1 == "go_gc_duration_seconds_count" { n = $2 } END { print (n == "" ? -1 : n) }'
}

wrk_run() { # DURATION URL HOST XFF
	taskset -c "$CLIENT_CPU" wrk -t1 -c"$CONNS" -d"$1s" --timeout 10s -s "$BENCH/wrk.lua" \
		-H "Host: $3" -H "X-Forwarded-For: $4" -H "User-Agent: $BENCH_UA" -H 'Accept: */*' "$2"
}

# loadgen_run PROTO DURATION URL HOST XFF: HTTP/2 or HTTP/3 with
# bench/cmd/loadgen (wrk speaks HTTP/1.1 only): $CONNS requests in flight
# over $H_CONNS connections, one core like wrk, the same headers; it prints
# the same BENCHJSON line as wrk.lua.
loadgen_run() {
	taskset -c "$CLIENT_CPU" env GOMAXPROCS=1 "$WORK/loadgen" -proto "$1" -c "$CONNS" -conns "$H_CONNS" -d "$2s" -timeout 10s \
		-H "Host: $4" -H "X-Forwarded-For: $5" -H "User-Agent: $BENCH_UA" -H 'Accept: */*' "$3"
}

# h2load_args PROTO HOST XFF [CONNS STREAMS] prints h2load's arguments for
# the h2load cells, one a line: HTTP/2 with $H2LOAD_CONNS connections of
# $H2LOAD_STREAMS streams each; h2load-h1: HTTP/1.1 over TLS (--h1), one
# request at a time on each connection (browsers do not pipeline), on as
# many connections as that makes requests in flight. One thread; the same
# headers as wrk's (h2load sends no Accept-Encoding unless told).
h2load_args() {
	local c=${4:-$H2LOAD_CONNS} m=${5:-$H2LOAD_STREAMS}
	if [[ $1 == h2load-h1 ]]; then
		printf '%s\n' --h1
		c=$((c * m)) m=1
	fi
	printf '%s\n' -t1 -c"$c" -m"$m" -H ":authority: $2" -H "X-Forwarded-For: $3" -H "User-Agent: $BENCH_UA" -H 'Accept: */*'
}

# h2load_alpn PROTO: the protocol h2load must negotiate for PROTO.
h2load_alpn() {
	if [[ $1 == h2load-h1 ]]; then echo http/1.1; else echo h2; fi
}

# h2load_run PROTO DURATION URL HOST XFF: one h2load run: its connections
# opened and WARMUP seconds of load sent before the DURATION it counts
# (--warm-up-time; run_cell reads the CPU counters once the warm-up is
# over), printed as the BENCHJSON line of wrk.lua (benchkit h2load, the
# percentiles from h2load's per-request log).
h2load_run() {
	local out args
	mapfile -t args < <(h2load_args "$1" "$4" "$5")
	rm -f "$WORK/h2load.log" # h2load appends to it
	out=$(taskset -c "$CLIENT_CPU" h2load "${args[@]}" --warm-up-time="${WARMUP}s" -D"$2s" \
		--log-file="$WORK/h2load.log" "$3" 2>&1) || { printf '%s\n' "$out" && return 1; }
	printf '%s\n' "$out"
	"$WORK/benchkit" h2load -proto "$(h2load_alpn "$1")" -log "$WORK/h2load.log" <<<"$out"
}

# h2load_check PROTO URL HOST XFF: one request with h2load; prints "status
# bytes" once the protocol negotiated is checked.
h2load_check() {
	local out args
	mapfile -t args < <(h2load_args "$1" "$3" "$4" 1 1)
	rm -f "$WORK/h2load-check.log"
	out=$(h2load "${args[@]}" -n1 --log-file="$WORK/h2load-check.log" "$2" 2>&1) || { printf '%s\n' "$out" && return 1; }
	"$WORK/benchkit" h2load -check -proto "$(h2load_alpn "$1")" -log "$WORK/h2load-check.log" <<<"$out"
}

load_run() { # PROTO DURATION URL HOST XFF
	case $1 in
	h2 | h3) loadgen_run "$@" ;;
	h2load | h2load-h1) h2load_run "$@" ;;
	*) wrk_run "${@:2}" ;;
	esac
}

# wait_quiet: with QUIET=PCT, waits (at most QUIET_WAIT seconds, default 30)
# until both cores were less than PCT % busy over one second: on a machine
# shared with other work, each run then starts while nothing else runs (the
# runs' foreign_cpu still says whether something started meanwhile).
wait_quiet() {
	[[ -n ${QUIET:-} ]] || return 0
	local a b i
	for ((i = 0; i < ${QUIET_WAIT:-30}; i++)); do
		a=$(awk '$1 == "cpu" { print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat)
		sleep 1
		b=$(awk '$1 == "cpu" { print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat)
		awk -v a="$a" -v b="$b" -v q="$QUIET" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2];
			exit !(t > 0 && 100 * (y[1] - x[1]) / t < q) }' && return 0
	done
	log "QUIET=$QUIET: the machine stayed busy for ${QUIET_WAIT:-30} s; running anyway"
}

# damon_wait prints how long (ms) it waited for the end of a burst of the
# kernel's DAMON (benchkit damon-wait: this VM's kdamond takes 10-50 ms of
# CPU at once every ~5.1 s, on either core), so that the run started next
# has a whole period to itself; -1 with DAMON_ALIGN=0 or without kdamond
# threads, -2 when no burst came within 12 s.
damon_wait() {
	local w
	[[ ${DAMON_ALIGN:-1} == 1 ]] || { echo -1 && return; }
	w=$(taskset -c "$CLIENT_CPU" "$WORK/benchkit" damon-wait) || die "benchkit damon-wait failed"
	[[ $w == none ]] && w=-2
	echo "$w"
}

# run_cell ROUND W P S URL HOST XFF EXPECT appends one line to results.jsonl.
# The counters (the cores', the server's processes', the machine's other
# processes') are read around the measured run; for h2load, which warms
# up within its run, from the end of its warm-up.
run_cell() {
	local round=$1 w=$2 p=$3 s=$4 url=$5 host=$6 xff=$7 expect=$8 s0 s1 c0 c1 f0 f1 t0 t1 out json srv_pids lp
	local tick_ms
	tick_ms=$(awk -v t="$(getconf CLK_TCK)" 'BEGIN { print 1000 / t }')
	mapfile -t srv_pids < <(server_pids "$s")
	((${#srv_pids[@]} > 0)) || die "no process of $s to measure"
	wait_quiet
	case $p in
	h2load*) ;; # its warm-up is part of its run
	*) load_run "$p" "$WARMUP" "$url" "$host" "$xff" >/dev/null 2>&1 || true ;;
	esac
	# A run during which the hypervisor took more than STEAL_MAX % of either
	# core (steal: the host ran another guest there), or the kernel's
	# memory-management threads more than MM_MAX % of a core (mm_ticks),
	# measured the machine, not the server: it is run again, at most
	# STEAL_RETRIES times, whatever its result; the last run is kept and
	# says how many runs it took.
	local tries=0 steal mm m0 m1 g0 g1 damon
	while :; do
		damon=$(damon_wait)
		g0=$(gc_count "$s")
		lp=""
		case $p in
		h2load*)
			load_run "$p" "$DURATION" "$url" "$host" "$xff" >"$WORK/run.out" 2>&1 &
			lp=$!
			sleep "$WARMUP"
			;;
		esac
		f0=$(foreign_ticks) m0=$(mm_ticks)
		s0=$(cpu_ticks "$SERVER_CPU") c0=$(cpu_ticks "$CLIENT_CPU") t0=$(server_ticks "${srv_pids[@]}")
		if [[ -n $lp ]]; then
			wait "$lp" || die "the load generator failed on $w $p $s: $(cat "$WORK/run.out")"
			out=$(cat "$WORK/run.out")
		else
			out=$(load_run "$p" "$DURATION" "$url" "$host" "$xff" 2>&1) || die "the load generator failed on $w $p $s: $out"
		fi
		t1=$(server_ticks "${srv_pids[@]}") s1=$(cpu_ticks "$SERVER_CPU") c1=$(cpu_ticks "$CLIENT_CPU")
		f1=$(foreign_ticks) m1=$(mm_ticks)
		g1=$(gc_count "$s")
		steal=$(awk -v a="$(pct 3 "$s0" "$s1")" -v b="$(pct 3 "$c0" "$c1")" 'BEGIN { print (a > b ? a : b) }')
		mm=$(share "$((m1 - m0))" "$s0" "$s1")
		if ((tries >= ${STEAL_RETRIES:-1})) ||
			awk -v x="$steal" -v m="${STEAL_MAX:-10}" -v y="$mm" -v n="${MM_MAX:-0.8}" 'BEGIN { exit !(x <= m && y <= n) }'; then
			break
		fi
		tries=$((tries + 1))
		log "round $round  $w $p $s: steal $steal % (STEAL_MAX=${STEAL_MAX:-10}), memory-management threads $mm % (MM_MAX=${MM_MAX:-0.8}): run again ($tries of ${STEAL_RETRIES:-1})"
	done
	json=$(grep '^BENCHJSON ' <<<"$out" | cut -d' ' -f2-)
	[[ -n $json ]] || die "no result from the load generator on $w $p $s: $out"
	printf '{"round":%d,"workload":"%s","proto":"%s","server":"%s","expect":"%s","cpu_server":%s,"cpu_server_ms":%s,"cpu_client":%s,"steal_server":%s,"steal_client":%s,"steal_retries":%d,"mm_cpu":%s,"damon_wait_ms":%d,"gc_cycles":%d,"foreign_cpu":%s,"wrk":%s}\n' \
		"$round" "$w" "$p" "$s" "$expect" "$(pct 1 "$s0" "$s1")" "$(awk -v t="$((t1 - t0))" -v m="$tick_ms" 'BEGIN { print t * m }')" \
		"$(pct 1 "$c0" "$c1")" "$(pct 3 "$s0" "$s1")" "$(pct 3 "$c0" "$c1")" "$tries" "$mm" "$damon" \
		"$(awk -v a="$g0" -v b="$g1" 'BEGIN { print (a < 0 || b < 0 ? -1 : b - a) }')" \
		"$(share "$((f1 - f0))" "$s0" "$s1")" "$json" >>"$OUT/results.jsonl"
	printf '%s\n' "$out" >>"$OUT/wrk.log"
	log "round $round  $w $p $s: $(jq -r --argjson ms "$(awk -v t="$((t1 - t0))" -v m="$tick_ms" 'BEGIN { print t * m }')" \
		'"\(.requests / (.duration_us / 1e6) | floor) req/s  \($ms * 1000 / .requests * 10 | round / 10) µs CPU/req  p50 \(.p50) µs  p99 \(.p99) µs"' <<<"$json")"
}
