-- Cross-check of POST /action with wrk (a C load generator, much cheaper per request than
-- autocannon), rotating over audience tokens and a mix of control types. See bench/README.md.
--   TOKENS=/path/to/tokens.txt wrk -t1 -c100 -d10s -s bench/wrk-action.lua http://127.0.0.1:8080
local tokens = {}
for line in io.lines(os.getenv("TOKENS") or "tokens.txt") do tokens[#tokens + 1] = line end
local bodies = {
  '{"layoutId":"demo-show","lid":2,"type":"Slider","value":0.5}',
  '{"layoutId":"demo-show","lid":6,"type":"XYPad","value":[0.2,0.7]}',
  '{"layoutId":"demo-show","lid":1,"type":"Button"}',
  '{"layoutId":"demo-show","lid":3,"type":"Toggle","value":true}',
}
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/action", {
    ["content-type"] = "application/json",
    ["authorization"] = "Bearer " .. tokens[(n % #tokens) + 1],
  }, bodies[(n % #bodies) + 1])
end
