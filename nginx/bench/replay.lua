-- wrk script: replays pre-generated request bodies (one JSON body per line), each exactly
-- once. Thread i of N sends lines i, i+N, i+2N, …; once its lines are all answered (or,
-- all sent, no answer came for 1 s: a request wrk lost) it prints
--   REPLAY thread=<i> ok=<200 with a token> failed=<other answers> lost=<no answer> idle=<polls> first=<s> last=<s>
-- (times from gettimeofday, seconds; last = the last answer) and stops. A connection with
-- nothing left to send asks for /bench-idle (nginx's own 404) every 250 ms until its thread
-- stops; those answers are not counted, but wrk's latency figures include them (few: they
-- are why the poll is slow). wrk itself sleeps its full -d: the caller stops it
-- once every thread has printed.
--   wrk -t2 -c16 -d300s -s replay.lua URL -- BODIES_FILE THREADS BUNDLE_ID TEAM_ID [OK_MARKER [CLIENTS]]
-- OK_MARKER (default "token"): the JSON key a 200 answer must contain to count as ok
-- (a benchmark floor handler answers {"ok":true}: pass ok). CLIENTS (default 0): when above
-- 0, body n is sent with X-Forwarded-For 10.x.y.z, client n mod CLIENTS, so per-IP rate
-- limits see that many clients (nginx must trust the header from loopback: nginx/bench/lib.sh's
-- BENCH_CLIENT_ADDRESSES).
local ffi = require("ffi")
ffi.cdef [[
  struct attest_timeval { long tv_sec; long tv_usec; };
  int gettimeofday(struct attest_timeval *tv, void *tz);
]]
local function now()
  local tv = ffi.new("struct attest_timeval")
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) + tonumber(tv.tv_usec) / 1e6
end

local count = 0
function setup(thread)
  thread:set("id", count)
  count = count + 1
end

function init(args)
  local file, threads = args[1], tonumber(args[2])
  marker = '"' .. (args[5] or "token") .. '"'
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["X-Bundle-ID"] = args[3]
  wrk.headers["X-Team-ID"] = args[4]
  local clients = tonumber(args[6] or "0") or 0
  bodies, addresses = {}, {}
  local n = 0
  for line in io.lines(file) do
    if line ~= "" then
      if n % threads == id then
        bodies[#bodies + 1] = line
        if clients > 0 then
          local c = n % clients
          addresses[#bodies] = string.format("10.%d.%d.%d", math.floor(c / 65536) % 256, math.floor(c / 256) % 256, c % 256)
        end
      end
      n = n + 1
    end
  end
  sent, ok, failed, idle, first, last = 0, 0, 0, 0, nil, nil
  -- Before the run, wrk asks thread 0's script for one request to check that it parses
  -- (wrk.c: script_verify_request) and never sends it: that call must not use up a body
  -- (it did: thread 0's first body was lost in every replay, and nginx never saw it).
  probe = id == 0
end

function request()
  if probe then
    probe = false
    return wrk.format("POST", nil, nil, bodies[1] or "{}")
  end
  if sent < #bodies then
    sent = sent + 1
    if first == nil then first = now() end
    if addresses[sent] then wrk.headers["X-Forwarded-For"] = addresses[sent] end
    return wrk.format("POST", nil, nil, bodies[sent])
  end
  wrk.headers["X-Forwarded-For"] = nil
  return wrk.format("GET", "/bench-idle")
end

function delay()
  if sent < #bodies then return 0 end
  return 250
end

local finished = false
local function finish()
  if finished then return end
  finished = true
  local lost = #bodies - ok - failed
  last = last or now()
  io.write(string.format("REPLAY thread=%d ok=%d failed=%d lost=%d idle=%d first=%.6f last=%.6f\n", id, ok, failed, lost, idle, first or last, last))
  io.flush()
  wrk.thread:stop()
end

function response(status, headers, body)
  if status == 404 and body:find('"error":"not found"', 1, true) then
    idle = idle + 1
    if sent == #bodies and (#bodies == 0 or now() - (last or first or now()) > 1) then finish() end
    return
  end
  if status == 200 and body:find(marker, 1, true) then ok = ok + 1 else failed = failed + 1 end
  last = now()
  if ok + failed == #bodies then finish() end
end
