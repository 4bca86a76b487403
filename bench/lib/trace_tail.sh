# shellcheck shell=bash
# trace_tail TRACE: what the requests in a runtime/trace of the edge waited
# on, from `go tool trace -d=parsed` (the goroutine state transitions):
#   - server time of a request: from netpoll making the connection's
#     goroutine runnable (Waiting->Runnable) to it blocking on the network
#     again (Running->Waiting "network") once the answer is written; split
#     into the time runnable but not running (scheduler wait) and the rest;
#   - the same for requests made runnable while a GC cycle was marking;
#   - how many goroutines were runnable when a connection was readied (the
#     queue on the one P);
#   - the longest stretches one goroutine ran without blocking (a GC mark
#     worker, or the OS taking the thread away);
#   - GC cycles in the trace.
# Prints a markdown summary. Needs go, awk, sort.
trace_tail() {
	local trace=$1 tmp
	tmp=$(mktemp -d)
	"${GO:-go}" tool trace -d=parsed "$trace" 2>/dev/null | awk -v dir="$tmp" '
		/ RangeBegin .*Name="GC concurrent mark phase"/ { gc = 1; gcs++; match($0, /Time=[0-9]+/); gcb = substr($0, RSTART + 5, RLENGTH - 5) + 0; next }
		/ RangeEnd .*Name="GC concurrent mark phase"/ { if (gc) { match($0, /Time=[0-9]+/); gcms += (substr($0, RSTART + 5, RLENGTH - 5) - gcb) / 1e6 }; gc = 0; next }
		/ StateTransition .*GoID=/ {
			match($0, /Time=[0-9]+/); t = substr($0, RSTART + 5, RLENGTH - 5) + 0
			match($0, /GoID=[0-9]+/); g = substr($0, RSTART + 5, RLENGTH - 5)
			match($0, /[A-Za-z]+->[A-Za-z]+/); split(substr($0, RSTART, RLENGTH), ab, "->"); a = ab[1]; b = ab[2]
			if (b == "Runnable" && a != "Runnable") { nrun++; rsince[g] = t; if (a == "Waiting") { woke[g] = t; wgc[g] = gc; print nrun > (dir "/queue") } }
			if (a == "Runnable" && b != "Runnable") {
				nrun--
				if (b == "Running" && (g in woke) && rsince[g] == woke[g]) sched[g] = t - woke[g]
				delete rsince[g]
			}
			if (a == "Runnable" && b == "Running") { start[g] = t }
			if (a == "Running" && (b == "Waiting" || b == "Runnable" || b == "NotExist") && (g in start)) {
				d = t - start[g]; delete start[g]
				print d, g > (dir "/spans")
			}
			if (a == "Running" && b == "Waiting" && index($0, "Reason=\"network\"") && (g in woke)) {
				print t - woke[g] > (dir (wgc[g] ? "/served-gc" : "/served"))
				if (g in sched) print sched[g] > (dir "/sched")
				delete woke[g]; delete sched[g]
			}
		}
		END { printf "%d %.1f\n", gcs, gcms > (dir "/gc") }'
	pcts() { # FILE SCALE UNIT
		sort -n "$1" | awk -v s="$2" -v u="$3" '{ v[NR] = $1 } END {
			if (NR == 0) { print "none"; exit }
			n = split("50 90 99 99.9", p, " "); out = "n=" NR
			for (i = 1; i <= n; i++) { k = int(NR * p[i] / 100); if (k < 1) k = 1; out = out sprintf(", p%s %.0f%s", p[i], v[k] / s, u) }
			print out sprintf(", max %.0f%s", v[NR] / s, u) }'
	}
	local gcn gcms
	read -r gcn gcms <"$tmp/gc"
	echo "| what | distribution |"
	echo "|---|---|"
	echo "| server time of a request (readied by netpoll -> blocked on the next read) | $(pcts "$tmp/served" 1000 ' µs') |"
	echo "| of which runnable, waiting for the P | $(pcts "$tmp/sched" 1000 ' µs') |"
	[[ -s $tmp/served-gc ]] && echo "| server time, readied while a GC cycle was marking | $(pcts "$tmp/served-gc" 1000 ' µs') |"
	echo "| goroutines runnable when a connection is readied | $(pcts "$tmp/queue" 1 '') |"
	echo "| one goroutine running without blocking | $(pcts "$tmp/spans" 1000 ' µs') |"
	echo "| GC cycles (mark phases begun in the trace) | $gcn, $gcms ms marking in all |"
	echo
	echo "Longest runs without blocking (µs, goroutine): $(sort -rn "$tmp/spans" | head -8 | awk '{ printf "%s%.0f (g%s)", (NR > 1 ? ", " : ""), $1 / 1000, $2 }')"
	rm -rf "$tmp"
}
