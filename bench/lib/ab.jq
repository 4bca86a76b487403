# bench/lib/ab.jq: two builds measured in the same rounds (EDGE2_BIN):
# per-round ratios on the cached page over HTTPS, edge2 ÷ edge and each ÷
# nginx when measured, then their medians. Input: results.jsonl (jq -s).
def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
def rps: .requests / .duration_us * 1e6;
def div(a; b): if a == null or b == null or b == 0 then null else a / b end;
[.[] | select(.workload == "page4k" and .proto == "https")] | group_by(.round)
| map(map({key: .server, value: .wrk}) | from_entries
    | {rps: div(.edge2 | rps; .edge | rps),
       p99: div(.edge2.p99; .edge.p99),
       onen: div(.edge.p99; .nginx.p99),
       twon: div(.edge2.p99; .nginx.p99),
       us: "\(.edge.p99) / \(.edge2.p99) / \(.nginx.p99 // "-")"})
| "| per round | edge2 ÷ edge req/s | edge2 ÷ edge p99 | edge ÷ nginx p99 | edge2 ÷ nginx p99 | p99 µs edge / edge2 / nginx |",
  "|---|---:|---:|---:|---:|---|",
  (to_entries[] | "| round \(.key + 1) | \(.value.rps | r2) | \(.value.p99 | r2) | \(.value.onen | r2) | \(.value.twon | r2) | \(.value.us) |"),
  "| **median** | \(map(.rps | select(. != null)) | med | r2) | \(map(.p99 | select(. != null)) | med | r2) | \(map(.onen | select(. != null)) | med | r2) | \(map(.twon | select(. != null)) | med | r2) | |"
