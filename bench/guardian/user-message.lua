-- wrk script: a steps/userMessage with a unique request_id per request.
-- SESSION (env): the session id (default a fixed one); http-load.sh gives
-- each run and each instance its own, so replays of an earlier run into a
-- database that outlives it (PostgreSQL) never collide. INSTANCE (env, 0-9999):
-- a second field of the request id, for several wrk processes on one session.
local n = 0
local threads = 0
local session = os.getenv("SESSION") or "7c9e6679-7425-40de-944b-e07fc1f90ae7"
local instance = tonumber(os.getenv("INSTANCE") or "0") or 0
-- SESSIONS (env, 1-100): requests cycle over that many sessions, the
-- second group of SESSION's id (the instance, 0000, 0001, …) times 100 plus
-- 0 … SESSIONS-1 (a team server deciding several agents' sessions at once).
local sessions = tonumber(os.getenv("SESSIONS") or "1") or 1
local function session_for(k)
  if sessions <= 1 then return session end
  local g = tonumber(session:sub(10, 13)) or 0
  return session:sub(1, 9) .. string.format("%04d", (g * 100 + k % sessions) % 10000) .. session:sub(14)
end
function setup(thread)
  thread:set("tid", threads)
  threads = threads + 1
end
function request()
  n = n + 1
  local rid = string.format("%08x-%04d-4000-8000-%012d", tid or 0, instance % 10000, n)
  local body = '{"jsonrpc":"2.0","method":"steps/userMessage","id":' .. n ..
    ',"params":{"acs_version":"0.1.0","request_id":"' .. rid ..
    '","timestamp":"2026-09-19T10:00:00Z","metadata":{"agent_id":"bench","session_id":"' .. session_for(n) .. '"},' ..
    '"payload":{"content":[{"type":"text","value":"hello","provenance":{"provenance_id":"p-' .. rid .. '","origin":"user_input"}}]}}}'
  return wrk.format("POST", "/", {["Content-Type"] = "application/json"}, body)
end
