# shellcheck shell=bash
# Shared by bench/run.sh and bench/profile.sh: logging, process bookkeeping
# (every process the bench starts is recorded by PID and stopped by PID),
# waiting for ports, and the loopback ports of every server.

log() { printf '%s bench: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Ports, all on 127.0.0.1.
EDGE_API=17070 EDGE_HTTP=17080 EDGE_HTTPS=17443 EDGE_ADMIN=17090
EDGE_CP_ADMIN=17091 # the control plane's admin with EDGE_MODE=edge
EDGE2_API=17170 EDGE2_HTTP=17180 EDGE2_HTTPS=17543 EDGE2_ADMIN=17190 EDGE2_CP_ADMIN=17191 # EDGE2_BIN
NGINX_HTTP=18080 NGINX_HTTPS=18081           # files
NGINX_RULES_HTTP=18082 NGINX_RULES_HTTPS=18083 # files behind Shield-like rules
NGINX_PROXY_HTTP=18084 NGINX_PROXY_HTTPS=18085 # reverse proxy to the origin
NGINX_REDIRECT=18086                          # plain HTTP -> HTTPS redirect
VARNISH_HTTP=18180 VARNISH_PROXY=18181 HITCH_HTTPS=18182
CADDY_HTTP=18280 CADDY_HTTPS=18281
CADDY_RULES_HTTP=18282 CADDY_RULES_HTTPS=18283
CADDY_PROXY_HTTP=18284 CADDY_PROXY_HTTPS=18285
CADDY_REDIRECT=18286
ORIGIN=18380
ALL_PORTS="$EDGE_API $EDGE_HTTP $EDGE_HTTPS $EDGE_ADMIN $EDGE_CP_ADMIN
$EDGE2_API $EDGE2_HTTP $EDGE2_HTTPS $EDGE2_ADMIN $EDGE2_CP_ADMIN $NGINX_HTTP $NGINX_HTTPS $NGINX_RULES_HTTP
$NGINX_RULES_HTTPS $NGINX_PROXY_HTTP $NGINX_PROXY_HTTPS $NGINX_REDIRECT $VARNISH_HTTP $VARNISH_PROXY
$HITCH_HTTPS $CADDY_HTTP $CADDY_HTTPS $CADDY_RULES_HTTP $CADDY_RULES_HTTPS $CADDY_PROXY_HTTP
$CADDY_PROXY_HTTPS $CADDY_REDIRECT $ORIGIN"

# check_ports fails when a port the bench needs is taken (by something the
# bench did not start: it never stops what it did not start).
check_ports() {
	local p
	for p in $ALL_PORTS; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			die "127.0.0.1:$p is in use; stop what listens there (a previous run?) and retry"
		fi
	done
}

# start NAME CPU CMD...: runs CMD in the background pinned to CPU, output to
# $WORK/logs/NAME.log, and records its PID.
PIDS=()
start() {
	local name=$1 cpu=$2
	shift 2
	taskset -c "$cpu" "$@" >"$WORK/logs/$name.log" 2>&1 &
	PIDS+=("$!:$name")
}

# stop_all stops every process start recorded, newest first, by PID.
stop_all() {
	local i entry pid
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		entry=${PIDS[i]} pid=${entry%%:*}
		kill -TERM "$pid" 2>/dev/null || true
	done
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		entry=${PIDS[i]} pid=${entry%%:*}
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	done
	PIDS=()
}

# pid_of NAME prints the PID start recorded for NAME.
pid_of() {
	local entry
	for entry in "${PIDS[@]}"; do
		[[ ${entry#*:} == "$1" ]] && echo "${entry%%:*}" && return 0
	done
	return 1
}

# wait_port PORT NAME: until 127.0.0.1:PORT accepts, at most 30 s.
wait_port() {
	local i
	for i in $(seq 300); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		if ! kill -0 "$(pid_of "$2")" 2>/dev/null; then
			tail -20 "$WORK/logs/$2.log" >&2
			die "$2 exited before listening on $1"
		fi
		sleep 0.1
	done
	tail -20 "$WORK/logs/$2.log" >&2
	die "$2 does not listen on 127.0.0.1:$1 after 30 s"
}

# fresh_workdir empties $WORK, refusing a directory the bench did not make.
fresh_workdir() {
	if [[ -e $WORK && ! -e $WORK/.platform-bench ]]; then
		die "$WORK exists and is not a bench work directory; set BENCH_WORK to another path"
	fi
	rm -rf "$WORK"
	mkdir -p "$WORK/logs"
	touch "$WORK/.platform-bench"
	chmod 755 "$WORK"
}
