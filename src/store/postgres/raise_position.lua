-- Raises a caller's last write position, kept ARGV[2] milliseconds more.
-- KEYS[1]: the caller's key; ARGV[1]: the position, 16 hex digits (so
-- that comparing the strings compares the positions).
local kept = redis.call('GET', KEYS[1])
if not kept or kept < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
