# shellcheck shell=bash
# The edge: `platform serve` (control plane and edge in one process) on a
# fresh data directory, pinned to $SERVER_CPU with GOMAXPROCS=1 (or, with
# EDGE_MODE=edge, `platform edge` alone there; see start_edge); then the
# content pushed and deployed through the API exactly as a user would, and
# the Shield settings of workload 1 saved with PUT /api/services/shield.

# A key in the platform's format, chosen so the scripts know it.
BENCH_KEY=svc_benchbench01_0123456789abcdefghijklmnopqrstuvwxyzABCD
EDGE_SITE_HOST="" EDGE_APP_HOST=""

api() {
	local method=$1 path=$2
	shift 2
	curl -sS --fail-with-body -X "$method" -H "Authorization: Bearer $BENCH_KEY" \
		-H 'Content-Type: application/json' "$@" "http://127.0.0.1:$EDGE_API$path"
}

# EDGE_MODE=serve (default): `platform serve`, control plane and edge in one
# process on $SERVER_CPU. EDGE_MODE=edge: `platform edge` alone on
# $SERVER_CPU, configured from a `platform controlplane` on $CLIENT_CPU (wrk's
# core; idle while the page is served from the edge's cache), so the core
# under test holds the edge and nothing else.
start_edge() {
	local bin=${EDGE_BIN:-$ROOT/bin/platform} name=${EDGE_NAME:-edge} data=${EDGE_DATA:-$WORK/data}
	if [[ ${EDGE_MODE:-serve} == edge ]]; then
		log "starting $bin controlplane (CPU $CLIENT_CPU) and $bin edge (GOMAXPROCS=1, CPU $SERVER_CPU), data $data"
		start "$name-controlplane" "$CLIENT_CPU" env GOMAXPROCS=1 "$bin" controlplane \
			--data "$data" --api-addr "127.0.0.1:$EDGE_API" --admin-addr "127.0.0.1:$EDGE_CP_ADMIN" \
			--apps-domain localhost --bootstrap-key "$BENCH_KEY" --log-level warn \
			--allow-private-networks --rtmp-addr ""
		wait_port "$EDGE_API" "$name-controlplane"
		local token
		token=$("$bin" edge-token create --data "$data" --name bench | sed -n 2p)
		[[ $token == svc_edge_* ]] || die "edge-token create printed no token"
		start "$name" "$SERVER_CPU" env GOMAXPROCS=1 "$bin" edge \
			--data "$data-edge" --controlplane "http://127.0.0.1:$EDGE_API" --edge-token "$token" \
			--admin-addr "127.0.0.1:$EDGE_ADMIN" \
			--http-addr "127.0.0.1:$EDGE_HTTP" --https-addr "127.0.0.1:$EDGE_HTTPS" \
			--apps-domain localhost --geoip "$GEOIP" --trusted-proxies 127.0.0.1/32 \
			--log-level warn --allow-private-networks
		wait_port "$EDGE_HTTPS" "$name"
		return
	fi
	log "starting $bin serve (GOMAXPROCS=1, CPU $SERVER_CPU), data $data"
	start "$name" "$SERVER_CPU" env GOMAXPROCS=1 "$bin" serve \
		--data "$data" \
		--api-addr "127.0.0.1:$EDGE_API" --admin-addr "127.0.0.1:$EDGE_ADMIN" \
		--http-addr "127.0.0.1:$EDGE_HTTP" --https-addr "127.0.0.1:$EDGE_HTTPS" \
		--apps-domain localhost --geoip "$GEOIP" --trusted-proxies 127.0.0.1/32 \
		--bootstrap-key "$BENCH_KEY" --log-level warn \
		--allow-private-networks --rtmp-addr ""
	wait_port "$EDGE_API" "$name"
	wait_port "$EDGE_HTTPS" "$name"
}

# start_edge2: with EDGE2_BIN set, a second edge of that build (another
# before/after candidate), on its own ports and data directory, set up the
# same way; it is the server "edge2" in the cells, so both builds are
# measured in the same rounds, seconds apart (run.sh prints edge2 ÷ edge).
start_edge2() {
	[[ -n ${EDGE2_BIN:-} ]] || return 0
	local save_bin=${EDGE_BIN:-} save=("$EDGE_API" "$EDGE_HTTP" "$EDGE_HTTPS" "$EDGE_ADMIN" "$EDGE_CP_ADMIN")
	EDGE_API=$EDGE2_API EDGE_HTTP=$EDGE2_HTTP EDGE_HTTPS=$EDGE2_HTTPS EDGE_ADMIN=$EDGE2_ADMIN EDGE_CP_ADMIN=$EDGE2_CP_ADMIN
	EDGE_BIN=$EDGE2_BIN EDGE_NAME=edge2 EDGE_DATA=$WORK/data2 start_edge
	setup_edge
	EDGE_BIN=$save_bin
	EDGE_API=${save[0]} EDGE_HTTP=${save[1]} EDGE_HTTPS=${save[2]} EDGE_ADMIN=${save[3]} EDGE_CP_ADMIN=${save[4]}
}

# deploy PROJECT_NAME REPO_NAME COMMIT_JSON: creates the project and the
# repo, pushes the commit, deploys it, waits until it is live, and prints
# the project's host name.
deploy() {
	local name=$1 repo_name=$2 body=$3 prj slug repo state
	prj=$(api POST /api/projects -d "{\"name\":\"$name\"}") || die "create project $name: $prj"
	slug=$(jq -r .project.slug <<<"$prj")
	prj=$(jq -r .project.id <<<"$prj")
	repo=$(api POST /api/repos -d "{\"name\":\"$repo_name\"}" | jq -r .repo.id) || die "create repo $repo_name"
	api POST "/api/repos/$repo/commits" --data-binary "@$body" >/dev/null || die "push $body"
	api POST "/api/repos/$repo/deploy" -d "{\"projectId\":\"$prj\",\"commit\":1}" >/dev/null || die "deploy $name"
	for _ in $(seq 100); do
		state=$(api GET "/api/projects/$prj" | jq -r .serving.state)
		[[ $state == live ]] && break
		[[ $state == failed ]] && die "deploy of $name failed: $(api GET "/api/projects/$prj")"
		sleep 0.2
	done
	[[ $state == live ]] || die "deploy of $name not live after 20 s (state $state)"
	echo "$slug.localhost"
}

setup_edge() {
	EDGE_SITE_HOST=$(deploy bench bench-site "$WORK/content/commit-site.json")
	EDGE_APP_HOST=$(deploy benchapp bench-app "$WORK/content/commit-app.json")
	api PUT /api/services/shield --data-binary "@$WORK/shield/shield.json" >"$WORK/logs/shield-put.json" ||
		die "PUT /api/services/shield: $(cat "$WORK/logs/shield-put.json")"
	# The edge has the new configuration when the deny list refuses.
	local code
	for _ in $(seq 100); do
		code=$(curl -sk -o /dev/null -w '%{http_code}' -H "Host: $EDGE_SITE_HOST" -H "X-Forwarded-For: $DENY_IP" \
			"https://127.0.0.1:$EDGE_HTTPS/")
		[[ $code == 403 ]] && break
		sleep 0.2
	done
	[[ $code == 403 ]] || die "the edge does not apply the Shield settings after 20 s (got $code)"
	log "edge: site https://$EDGE_SITE_HOST:$EDGE_HTTPS, app https://$EDGE_APP_HOST:$EDGE_HTTPS, Shield on"
}
