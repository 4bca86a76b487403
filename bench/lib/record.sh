# shellcheck shell=bash
# record_settings prints, in markdown, what a result depends on: the
# machine, every version, the pinning and server settings, the client's
# settings, and the TLS each HTTPS server negotiated with an OpenSSL client
# (the library wrk uses).

tls_of() { # PORT
	echo | openssl s_client -connect "127.0.0.1:$1" -servername "$EDGE_SITE_HOST" 2>/dev/null |
		awk '/^New, /{ sub(/^New, /, ""); print; exit }'
}

# bench_command prints the command of this run with the settings given in
# the environment.
bench_command() {
	local v cmd=""
	for v in QUICK ROUNDS TARGET_ROUNDS DURATION WARMUP CONNS H_CONNS H2LOAD_CONNS H2LOAD_STREAMS ONLY PROTOS SERVERS EDGE_BIN EDGE2_BIN EDGE_MODE QUIET DAMON_ALIGN STEAL_MAX MM_MAX STEAL_RETRIES SERVER_CPU CLIENT_CPU; do
		[[ -n ${!v:-} ]] || continue
		cmd+="$v=${!v} "
	done
	echo "$cmd${BENCH_COMMAND:-bash bench/run.sh}"
}

# netpoll_order BIN: epoll when BIN was built by make build with
# build/netpollfifo's runtime patch (its -X setting), else runtime.
netpoll_order() {
	if "$GO" version -m "$1" 2>/dev/null | grep -q 'edge.netpollOrder=epoll'; then
		echo epoll
	else
		echo "runtime (Go's own: newest first)"
	fi
}

# damon_settings describes the kernel's DAMON (kdamond) contexts, whose
# bursts runs are aligned to (load.sh, damon_wait).
damon_settings() {
	local d=/sys/kernel/mm/damon/admin/kdamonds k c desc=""
	for k in "$d"/[0-9]*; do
		[[ -r $k/state ]] || continue
		desc+="kdamond ${k##*/} $(cat "$k/state")"
		for c in "$k"/contexts/[0-9]*; do
			[[ -d $c ]] || continue
			desc+=" ($(cat "$c/operations" 2>/dev/null), sampling every $(($(cat "$c/monitoring_attrs/intervals/sample_us" 2>/dev/null || echo 0) / 1000)) ms, aggregating every $(($(cat "$c/monitoring_attrs/intervals/aggr_us" 2>/dev/null || echo 0) / 1000)) ms, schemes: $(cat "$c"/schemes/[0-9]*/action 2>/dev/null | tr '\n' ' ' | sed 's/ $//'))"
		done
		desc+="; "
	done
	if [[ -z $desc ]]; then
		echo "none (no kdamond: runs start without waiting)"
	elif [[ ${DAMON_ALIGN:-1} == 1 ]]; then
		echo "${desc}each run starts as a kdamond burst ends (DAMON_ALIGN=1, damon_wait_ms in results.jsonl)"
	else
		echo "${desc}runs start without waiting for it (DAMON_ALIGN=0)"
	fi
}

record_settings() {
	local commit dirty=""
	commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[[ -n $(git -C "$ROOT" status --porcelain -- . ':!bench' ':!Makefile' 2>/dev/null) ]] && dirty=" (uncommitted changes outside bench/)"
	cat <<MD
## Machine and versions

- date: $(date -u '+%Y-%m-%d %H:%M UTC'); command: \`$BENCH_CMD\`
- machine: $(nproc) cores, $(lscpu | awk -F: '/^Model name/{gsub(/^ +/, "", $2); print $2; exit}'), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(lscpu | awk -F: '/^Hypervisor vendor/{gsub(/^ +/, "", $2); print "virtualised (" $2 ")"; exit}'); $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)
- load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)
- DAMON: $(damon_settings)
- edge: ${EDGE_BIN:+$EDGE_BIN, not bin/platform; }platform $commit$dirty, $("$GO" version | cut -d' ' -f3), fasthttp $(awk '/valyala\/fasthttp /{print $2}' "$ROOT/go.mod"), netpoll order $(netpoll_order "${EDGE_BIN:-$ROOT/bin/platform}")${EDGE2_BIN:+ (edge2: $(netpoll_order "$EDGE2_BIN"))}
- nginx $(nginx -v 2>&1 | cut -d/ -f2) ($(nginx -V 2>&1 | awk '/built with OpenSSL/{print "OpenSSL " $4}')), $("$VARNISHD" -V 2>&1 | head -1 | cut -d' ' -f1 | tr -d '(' ) $("$VARNISHD" -V 2>&1 | head -1 | awk '{print $2}' | tr -d '(' ), hitch $(hitch --version 2>&1 | awk '{print $2}'), Caddy $(caddy version | cut -d' ' -f1), wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), h2load $(h2load --version | awk -F/ '{print $2}'), $(openssl version | cut -d' ' -f1-2)

## Settings

- server under test on CPU $SERVER_CPU (taskset), one at a time under load, all started once and idle otherwise;
  wrk on CPU $CLIENT_CPU (taskset), \`wrk -t1 -c$CONNS -d${DURATION}s --timeout 10s\`, keep-alive, after a ${WARMUP} s warm-up run;
  HTTP/2 and HTTP/3 rows: \`bench/cmd/loadgen -c $CONNS -conns $H_CONNS\` (Go's HTTP/2 client, quic-go's HTTP/3 client) with GOMAXPROCS=1 on CPU $CLIENT_CPU;
  "HTTP/2, h2load" rows: \`h2load -t1 -c$H2LOAD_CONNS -m$H2LOAD_STREAMS --warm-up-time=${WARMUP}s -D${DURATION}s\`, "HTTPS, h2load --h1" rows:
  \`h2load --h1 -t1 -c$((H2LOAD_CONNS * H2LOAD_STREAMS)) -m1\` (as many requests in flight, one per connection), on CPU $CLIENT_CPU,
  the counters read from the end of the warm-up; CPU per request: the server's processes' CPU time (/proc/PID/stat) ÷ requests;
  $ROUNDS round(s), each running every cell once, even rounds in reverse order; then rounds $((ROUNDS + 1))-$TARGET_ROUNDS
  of the cells the speed targets compare only (workloads 1 and 4 over HTTPS, edge and nginx), when TARGET_ROUNDS > ROUNDS
- edge: \`GOMAXPROCS=1 platform serve --trusted-proxies 127.0.0.1/32 --geoip data/geo/country.mmdb --log-level warn\`
  (control plane, background workers and edge in one process, all on that core); HTTPS via its local CA
- nginx: worker_processes 1, sendfile, tcp_nopush, open_file_cache, access_log off, keepalive_requests 1000000,
  upstream keepalive 128 (proxy); nginx+rules adds realip from X-Forwarded-For, geo with the $DENY_COUNT deny ranges,
  geoip2 country map of the $BLOCKED_COUNT countries (same database), an AI-crawler regex, a dotfile 404
- Varnish: \`-s malloc,512m -p thread_pools=1 -p thread_pool_min=100 -p thread_pool_max=1000\`, TTL 1 h, backend the nginx
  above; HTTPS through hitch (workers = 1, PROXY v2 to Varnish) on the same core
- Caddy: GOMAXPROCS=1, file_server, reverse_proxy (default transport), remote_ip forwarded with the $DENY_COUNT ranges (workload 3)
- origin (workload 4): nginx, worker_processes 1, on CPU $CLIENT_CPU with wrk, a $ORIGIN_BODY_BYTES-byte JSON answer with \`Cache-Control: no-store\`
- TLS: nginx and hitch limited to TLS_AES_128_GCM_SHA256 (the suite the Go servers pick); peers share one self-signed P-256 certificate
- every request: \`Host: $EDGE_SITE_HOST\` (workload 4: \`$EDGE_APP_HOST\`), a ${#BENCH_UA}-byte browser User-Agent,
  \`X-Forwarded-For\`: $ALLOW_IP ($ALLOW_CC, allowed) or, in workload 3, $DENY_IP (in deny range $DENY_RANGE) and $COUNTRY_IP ($COUNTRY_CC, blocked)
- Shield (edge): enabled, $BLOCKED_COUNT blocked countries, $DENY_COUNT deny ranges (9 in 10 IPv4), blockAiCrawlers on, file guard (always on)

## TLS negotiated (OpenSSL client)

| server | port | negotiated |
|---|---|---|
| edge | $EDGE_HTTPS | $(tls_of "$EDGE_HTTPS") |
| nginx | $NGINX_HTTPS | $(tls_of "$NGINX_HTTPS") |
| hitch (Varnish) | $HITCH_HTTPS | $(tls_of "$HITCH_HTTPS") |
| Caddy | $CADDY_HTTPS | $(tls_of "$CADDY_HTTPS") |
MD
}
