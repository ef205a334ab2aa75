-- wrk script for the toolseal Envoy benchmark: POSTs one MCP JSON-RPC body (read from the
-- file named by BENCH_BODY) with the headers a Streamable HTTP client sends (the MCP ones,
-- one "Name: value" per line, from the file named by BENCH_HEADERS: a 2025 session or a
-- 2026-07-28 request), and prints one machine-readable summary line that
-- envoy/bench/run.py parses.
local path = os.getenv("BENCH_BODY")
local file = assert(io.open(path, "rb"), "BENCH_BODY must name a readable file")
local body = file:read("*a")
file:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
local headers = assert(io.open(os.getenv("BENCH_HEADERS") or "", "rb"),
  "BENCH_HEADERS must name a readable file")
for line in headers:lines() do
  local name, value = line:match("^([^:]+): (.*)$")
  if name then
    wrk.headers[name] = value
  end
end
headers:close()

done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("BENCH requests=%d errors=%d non2xx=%d p50_us=%d p99_us=%d duration_us=%d\n",
    summary.requests, errors, summary.errors.status,
    latency:percentile(50), latency:percentile(99), summary.duration))
end
