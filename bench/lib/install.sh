# shellcheck shell=bash
# install_tools installs, from Debian's packages and only when missing, the
# peers and the load generator: nginx (with the GeoIP2 module for the
# country rule of its Shield-like server), Varnish, hitch (Varnish's TLS
# terminator), Caddy, the load generators wrk and h2load (nghttp2-client),
# and the small tools the scripts use.
# Idempotent: with everything present it installs nothing and runs no apt.
install_tools() {
	local need=() pair cmd deb
	for pair in nginx:nginx varnishd:varnish hitch:hitch caddy:caddy wrk:wrk h2load:nghttp2-client \
		curl:curl jq:jq openssl:openssl taskset:util-linux \
		/usr/lib/nginx/modules/ngx_http_geoip2_module.so:libnginx-mod-http-geoip2; do
		cmd=${pair%%:*} deb=${pair##*:}
		if [[ $cmd == /* ]]; then
			[[ -e $cmd ]] && continue
		else
			command -v "$cmd" >/dev/null 2>&1 && continue
			# Debian keeps varnishd in /usr/sbin, which a non-root PATH may lack.
			[[ -x /usr/sbin/$cmd ]] && continue
		fi
		need+=("$deb")
	done
	if ((${#need[@]} == 0)); then
		return 0
	fi
	local sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "missing packages ${need[*]} and not root (no sudo): install them first"
		sudo=(sudo)
	fi
	log "installing from Debian: ${need[*]}"
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# install_perf installs linux-perf when missing (bench/profile.sh only).
install_perf() {
	command -v perf >/dev/null 2>&1 && return 0
	local sudo=()
	[[ $(id -u) == 0 ]] || sudo=(sudo)
	log "installing from Debian: linux-perf"
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends linux-perf >/dev/null
}

# install_area_peers installs what bench/peers.sh's areas compare with, only
# when missing: from Debian, hnswlib and FAISS for Python (python3-hnswlib,
# python3-faiss, python3-numpy) and Node.js; from npm, the packages of
# bench/peers/package-lock.json (Portkey's gateway, miniflare) with `npm ci`
# into bench/peers/node_modules (git-ignored). Idempotent.
install_area_peers() {
	local need=() sudo=()
	[[ $(id -u) == 0 ]] || sudo=(sudo)
	/usr/bin/python3 -c 'import hnswlib' 2>/dev/null || need+=(python3-hnswlib)
	/usr/bin/python3 -c 'import faiss' 2>/dev/null || need+=(python3-faiss)
	/usr/bin/python3 -c 'import numpy' 2>/dev/null || need+=(python3-numpy)
	command -v node >/dev/null 2>&1 || need+=(nodejs)
	command -v npm >/dev/null 2>&1 || need+=(npm)
	command -v curl >/dev/null 2>&1 || need+=(curl)
	command -v jq >/dev/null 2>&1 || need+=(jq)
	command -v taskset >/dev/null 2>&1 || need+=(util-linux)
	if ((${#need[@]} > 0)); then
		log "installing from Debian: ${need[*]}"
		"${sudo[@]}" apt-get update -qq
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	fi
	local peers=$1
	if [[ ! -e $peers/node_modules/.package-lock.json || $peers/package-lock.json -nt $peers/node_modules/.package-lock.json ]]; then
		log "installing from npm: $(jq -r '.dependencies | keys | join(", ")' "$peers/package.json") (npm ci in $peers)"
		(cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
}
