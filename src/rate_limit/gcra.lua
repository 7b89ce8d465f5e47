-- One GCRA step for one API token, atomically (the arithmetic of Gcra in
-- src/rate_limit/mod.rs, in whole microseconds).
-- KEYS[1] holds the token's theoretical arrival time (TAT) on Redis' own
-- clock, so that the instances need not agree on the time. It expires when
-- the bucket is full again: a missing key is a full bucket.
-- ARGV[1]: emission interval; ARGV[2]: capacity (burst x interval).
-- Answers {1 if let through else 0, backlog (TAT - now) after the step}.
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
local backlog = math.max(tat - now, 0)
if backlog + interval > capacity then
  return {0, backlog}
end
backlog = backlog + interval
redis.call('SET', KEYS[1], string.format('%d', now + backlog), 'PX', math.ceil(backlog / 1000))
return {1, backlog}
