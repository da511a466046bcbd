-- wrk script for the bench harness (bench/harness.ts, wrkLoad). wrk is a C load generator, far
-- cheaper per request than autocannon, so it can saturate the server under test from one core.
--   REQUESTS=<file>  one request a line: METHOD<TAB>PATH<TAB>BODY<TAB>Header: value<TAB>...
--                    (bodies are JSON, so never hold a tab or newline); absent: wrk's default GET
--   IDEMPOTENCY=1    every request also carries a fresh Idempotency-Key (formatted per request)
-- done() prints one line, "WRK_RESULT {json}", that the harness parses; latencies are in µs.
local requests = {}
local specs = {}
local idempotent = os.getenv("IDEMPOTENCY") == "1"
local run = tostring(os.time())

function init(args)
  local file = os.getenv("REQUESTS")
  if not file then return end
  for line in io.lines(file) do
    local fields = {}
    for field in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = field end
    local headers = {}
    for i = 4, #fields do
      local name, value = fields[i]:match("^([^:]+):%s*(.*)$")
      if name then headers[name] = value end
    end
    local body = fields[3] ~= "" and fields[3] or nil
    requests[#requests + 1] = wrk.format(fields[1], fields[2], headers, body)
    specs[#specs + 1] = { method = fields[1], path = fields[2], headers = headers, body = body }
  end
end

local n = 0
function request()
  if #requests == 0 then return wrk.request() end
  n = n + 1
  if idempotent then
    local s = specs[(n % #specs) + 1]
    s.headers["Idempotency-Key"] = run .. "-" .. n
    return wrk.format(s.method, s.path, s.headers, s.body)
  end
  return requests[(n % #requests) + 1]
end

function done(summary, latency, _)
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"durationUs":%d,"non2xx":%d,"errors":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d}\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
