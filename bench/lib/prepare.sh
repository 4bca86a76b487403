# shellcheck shell=bash
# prepare: what every script needs before starting servers: the tools, the
# binaries, a fresh work directory, the content and the Shield settings
# (their addresses are exported from addrs.env), and the output directory
# $OUT under bench/out/ with bench/out/latest pointing at it.
prepare() {
	local kind=$1
	(($(nproc) >= 2)) || die "needs 2 cores: one for the server under test, one for wrk"
	install_tools
	# shellcheck disable=SC2034 # read by lib/peers.sh and lib/record.sh
	VARNISHD=$(command -v varnishd || echo /usr/sbin/varnishd)
	check_ports
	if [[ -n ${EDGE_BIN:-} ]]; then # the platform measured is given: build nothing of it
		log "measuring $EDGE_BIN; building bench/cmd/benchkit and bench/cmd/loadgen; fetching the country database when missing"
		make -s -C "$ROOT" geodata GO="$GO" >/dev/null
	else
		log "building bin/platform, bench/cmd/benchkit and bench/cmd/loadgen; fetching the country database when missing"
		make -s -C "$ROOT" build geodata GO="$GO" >/dev/null
	fi
	fresh_workdir
	"$GO" build -o "$WORK/benchkit" "$ROOT/bench/cmd/benchkit"
	"$GO" build -o "$WORK/loadgen" "$ROOT/bench/cmd/loadgen"
	OUT=$ROOT/bench/out/$kind-$(date -u +%Y%m%dT%H%M%SZ)
	mkdir -p "$OUT"
	ln -sfn "$(basename "$OUT")" "$ROOT/bench/out/latest${kind:+-$kind}"
	"$WORK/benchkit" content -out "$WORK/content" -origin "http://127.0.0.1:$ORIGIN"
	"$WORK/benchkit" shield -geoip "$GEOIP" -out "$WORK/shield" -ranges 10000
	# shellcheck disable=SC1091
	. "$WORK/shield/addrs.env"
}
