-- wrk script: the wrk harness's sealed flow with every state replayed once. Each round 1
-- (`test_input_required_result_request_state` on the anonymous `conformance` tenant) returns
-- a freshly sealed requestState; each round 2 sends back one of those not sent before, with
-- its answer, so every state the server seals is also opened, once, under load. The
-- harness's own script (../shared/bench/peers/mrtr_sealed.lua) replays one state a thread for
-- a whole run, so a state it captured wrongly, or one the server could not open, fails every
-- round 2 of that run; this one tells a state that fails from a run that does. Round 2's body
-- is built by concatenation, not by pattern substitution, so no state is rewritten.
--
-- Prints `FRESH refused=N completed=N` at the end, and the first answer that is not 200.
--
-- usage: HARNESS=../shared/bench/peers wrk -t1 -c32 -d60s -s bench/wrk-fresh-states.lua \
--          http://127.0.0.1:PORT/t/conformance/mcp          (against `roundtrip serve`)
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a"):gsub("%s+$", "")
  f:close()
  return s
end

local headers = {
  ["Content-Type"] = "application/json",
  ["Accept"] = "application/json, text/event-stream",
  ["MCP-Protocol-Version"] = "2026-07-28",
  ["Mcp-Method"] = "tools/call",
  ["Mcp-Name"] = "test_input_required_result_request_state",
}
local harness = os.getenv("HARNESS") or "../shared/bench/peers"
local round1, before_state, after_state
local states, sent = {}, 0
refused, completed, shown = 0, 0, false

local threads = {}
setup = function(thread) table.insert(threads, thread) end

init = function()
  round1 = wrk.format("POST", nil, headers, slurp(harness .. "/body_mrtr_state_round1.json"))
  local body = slurp(harness .. "/body_mrtr_state_round2.json"):gsub("KEY", "confirm")
  local at = assert(body:find("STATE", 1, true), "round 2's body has no STATE placeholder")
  before_state, after_state = body:sub(1, at - 1), body:sub(at + #"STATE")
end

request = function()
  sent = sent + 1
  if sent % 2 == 0 and #states > 0 then
    return wrk.format("POST", nil, headers, before_state .. table.remove(states) .. after_state)
  end
  return round1
end

response = function(status, _, body)
  if status ~= 200 then
    refused = refused + 1
    if not shown then
      shown = true
      io.write("first refusal: ", status, " ", body, "\n")
    end
    return
  end
  local state = body:match('"requestState":"([^"]+)"')
  if state then
    table.insert(states, state)
  else
    completed = completed + 1
  end
end

done = function()
  local r, c = 0, 0
  for _, thread in ipairs(threads) do
    r = r + thread:get("refused")
    c = c + thread:get("completed")
  end
  io.write(string.format("FRESH refused=%d completed=%d\n", r, c))
end
