-- bench/timeline.lua: a wrk script that counts responses per 20 ms from
-- the first one, to see the dips a run's p99 comes from (the tail of a
-- 3-s run is a few 40-100 ms stretches at a fraction of the rate, not the
-- body of the distribution: docs/notes/2026-11-23-bench-noise.md). One thread
-- (wrk -t1). Prints the first TIMELINE_BUCKETS (150) counts, the
-- CLOCK_MONOTONIC time of the first response in ms (t0: to line the
-- buckets up with `perf record -k CLOCK_MONOTONIC`), p99 and max.
--
--   taskset -c 1 wrk -t1 -c64 -d3s -s bench/timeline.lua -H 'Host: ...' https://127.0.0.1:17443/
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } timespec;
int clock_gettime(int clk_id, timespec *tp);
]]
local ts = ffi.new("timespec")
local function now() -- CLOCK_MONOTONIC, ms
	ffi.C.clock_gettime(1, ts)
	return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

-- Globals of the thread's state, read back by done() through thread:get.
t0 = nil
buckets = {}
local threads = {}

setup = function(thread) table.insert(threads, thread) end

response = function(status, headers, body)
	local t = now()
	if not t0 then t0 = t end
	local b = math.floor((t - t0) / 20)
	buckets[b] = (buckets[b] or 0) + 1
end

done = function(summary, latency, requests)
	local bk = threads[1]:get("buckets")
	local n = tonumber(os.getenv("TIMELINE_BUCKETS") or "150")
	local out = {}
	for b = 0, n - 1 do out[#out + 1] = tostring(bk[b] or 0) end
	io.write(string.format("t0 %.3f\n", threads[1]:get("t0")))
	io.write("per 20ms: " .. table.concat(out, " ") .. "\n")
	io.write(string.format("p99 %.2f max %.1f\n", latency:percentile(99) / 1000, latency.max / 1000))
end
