# shellcheck shell=bash
# The edge: `platform serve` (control plane and edge in one process) on a
# fresh data directory, pinned to $SERVER_CPU with GOMAXPROCS=1; then the
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

start_edge() {
	log "starting ${EDGE_BIN:-bin/platform} serve (GOMAXPROCS=1, CPU $SERVER_CPU), data $WORK/data"
	start edge "$SERVER_CPU" env GOMAXPROCS=1 "${EDGE_BIN:-$ROOT/bin/platform}" serve \
		--data "$WORK/data" \
		--api-addr "127.0.0.1:$EDGE_API" --admin-addr "127.0.0.1:$EDGE_ADMIN" \
		--http-addr "127.0.0.1:$EDGE_HTTP" --https-addr "127.0.0.1:$EDGE_HTTPS" \
		--apps-domain localhost --geoip "$GEOIP" --trusted-proxies 127.0.0.1/32 \
		--bootstrap-key "$BENCH_KEY" --log-level warn \
		--allow-private-networks --rtmp-addr ""
	wait_port "$EDGE_API" edge
	wait_port "$EDGE_HTTPS" edge
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
