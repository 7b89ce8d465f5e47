-- wrk (4.1, LuaJIT) script of the realistic-traffic benchmark
-- (bench/run.py --mix): each request is the next line of a requests file.
--
--   wrk -t2 -c32 -d10s -s bench/mix.lua http://127.0.0.1:PORT -- FILE [DELAY_MS]
--
-- FILE holds lines `TOKEN<TAB>PATH` (PATH with its query), each a GET, or
-- `TOKEN<TAB>PATH<TAB>METHOD<TAB>BODY` (BODY: JSON on one line), sent with
-- `Content-Type: application/json`. Each request sends `Authorization:
-- Bearer TOKEN` and `Accept-Encoding: identity` (what is measured is the
-- service, not gzip). Each wrk thread starts at its own
-- offset in the file (spread by the golden ratio, whatever the number of
-- threads, by bytes) and its connections take the lines that follow, in
-- turn, starting again at the top after the last. Lines are read as they
-- are sent, never all at once: a file of any size starts at once.
--
-- DELAY_MS, when given, paces the load: each connection waits that many
-- milliseconds, on average, after an answer before it sends its next
-- request. wrk's delay() takes whole milliseconds, so the fraction is a
-- random extra millisecond (2.3 waits 3 ms three times in ten, 2 ms
-- otherwise). The arguments can also come from the environment:
-- MIX_REQUESTS=FILE and MIX_DELAY_MS=N.
--
-- MIX_COUNT_STATUS=1 counts every answer whose status is not 2xx exactly,
-- in response() (which makes wrk keep every answer's headers and body, a
-- cost on the client). Without it, non_2xx is wrk's own status error count:
-- answers with a status over 399 (these listings answer no 1xx or 3xx to
-- requests without If-None-Match).
--
-- done() prints ONE JSON line on stdout (after wrk's own report):
--   {"requests", "duration_us", "bytes", "errors": {"connect", "read",
--    "write", "status", "timeout"}, "non_2xx", "non_2xx_exact",
--    "latency_us": {"p50", "p90", "p99", "p99_9", "max", "mean"},
--    "requests_per_s"}
-- Latencies are wrk's: from the start of writing a request to the end of
-- its answer, in microseconds.

local threads = {}
local thread_count = 0

-- Runs in the setup environment, once per thread, before the threads start.
function setup(thread)
   thread:set("thread_index", thread_count)
   thread_count = thread_count + 1
   table.insert(threads, thread)
end

local file = nil
local host_headers = nil
local delay_whole, delay_fraction = nil, 0
non_2xx = 0

-- Runs in each thread's environment before it starts. wrk starts each
-- thread right after its init(), and its clock once every thread has
-- started: init() only opens the file and finds the thread's offset, so
-- that the first thread does not run alone for long.
function init(args)
   local path = args[1] or os.getenv("MIX_REQUESTS")
   local delay_ms = tonumber(args[2] or os.getenv("MIX_DELAY_MS") or "")
   if not path then
      error("mix.lua: no requests file (wrk ... -- FILE [DELAY_MS], or MIX_REQUESTS)")
   end
   file = assert(io.open(path, "r"))
   local size = file:seek("end")
   if size == 0 then
      error("mix.lua: " .. path .. " is empty")
   end
   local index = thread_index or 0
   local golden = 0.6180339887498949
   local offset = math.floor(((index * golden) % 1) * size)
   file:seek("set", offset)
   if offset > 0 then
      file:read("*l") -- the rest of the line the offset fell in
   end
   file:setvbuf("full", 65536)
   host_headers = " HTTP/1.1\r\nHost: " .. wrk.headers["Host"] ..
      "\r\nAccept-Encoding: identity\r\nAuthorization: Bearer "
   math.randomseed(os.time() + 7919 * index)
   if delay_ms and delay_ms > 0 then
      delay_whole = math.floor(delay_ms)
      delay_fraction = delay_ms - delay_whole
   else
      delay = nil -- no pacing: wrk sends the next request at once
   end
   if os.getenv("MIX_COUNT_STATUS") ~= "1" then
      response = nil -- wrk then skips keeping headers and bodies
   end
end

-- The next line of the file (the first after the last).
local function next_line()
   local line = file:read("*l")
   if not line then
      file:seek("set", 0)
      line = file:read("*l")
   end
   return line
end

function request()
   local line = next_line()
   local tab = line:find("\t", 1, true)
   while not tab do -- a line that is not TOKEN<TAB>PATH: skipped
      line = next_line()
      tab = line:find("\t", 1, true)
   end
   local token, rest = line:sub(1, tab - 1), line:sub(tab + 1)
   local method_at = rest:find("\t", 1, true)
   if not method_at then
      return "GET " .. rest .. host_headers .. token .. "\r\n\r\n"
   end
   local body_at = rest:find("\t", method_at + 1, true)
   local body = rest:sub(body_at + 1)
   return rest:sub(method_at + 1, body_at - 1) .. " " .. rest:sub(1, method_at - 1) .. host_headers ..
      token .. "\r\nContent-Type: application/json\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
end

function delay()
   if math.random() < delay_fraction then
      return delay_whole + 1
   end
   return delay_whole
end

function response(status, headers, body)
   if status < 200 or status > 299 then
      non_2xx = non_2xx + 1
   end
end

-- Runs in the setup environment after the run.
function done(summary, latency, _)
   local exact = os.getenv("MIX_COUNT_STATUS") == "1"
   local counted = 0
   for _, thread in ipairs(threads) do
      counted = counted + (thread:get("non_2xx") or 0)
   end
   local e = summary.errors
   local non_2xx_total = exact and counted or e.status
   local seconds = summary.duration / 1e6
   io.write(string.format(
      '{"requests": %d, "duration_us": %d, "bytes": %d, ' ..
      '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
      '"non_2xx": %d, "non_2xx_exact": %s, ' ..
      '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "p99_9": %d, "max": %d, "mean": %.1f}, ' ..
      '"requests_per_s": %.1f}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      non_2xx_total, exact and "true" or "false",
      latency:percentile(50), latency:percentile(90), latency:percentile(99),
      latency:percentile(99.9), latency.max, latency.mean,
      seconds > 0 and summary.requests / seconds or 0))
end
