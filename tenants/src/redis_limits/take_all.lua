-- Takes one token from every bucket in KEYS, or from none (crate::redis_limits::buckets).
--
-- ARGV holds each bucket's rate (tokens per second) and burst, in the order of KEYS:
-- ARGV[2i-1] and ARGV[2i] are those of KEYS[i]. A bucket is a hash: `tokens` (a float) and
-- `at` (when it was last taken from, in microseconds of Redis TIME); a missing one is full.
-- Every bucket is refilled to now and checked before any is taken from, so a refusal costs no
-- bucket anything. Each bucket taken from expires once it would be full again: an idle bucket
-- takes no room, and its absence means the same as its presence would.
--
-- Returns 0 when admitted, otherwise how many milliseconds until every bucket has a token.

-- Redis before 5 replicates scripts verbatim unless told otherwise, and TIME differs per
-- replica; later versions replicate effects anyway.
if redis.replicate_commands then
  redis.replicate_commands()
end

-- The longest wait or lifetime written, in milliseconds (about 31 years): a rate near zero
-- would otherwise make it infinite.
local LONGEST_MS = 1e12

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local levels = {}
local wait = 0
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local stored = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = tonumber(stored[1])
  local at = tonumber(stored[2])
  if tokens == nil or at == nil then
    tokens = burst
  else
    -- A clock that went back (a failover) refills nothing rather than draining.
    local elapsed = math.max(0, now - at) / 1000000
    tokens = math.min(burst, tokens + elapsed * rate)
  end
  levels[i] = tokens
  if tokens < 1 then
    wait = math.max(wait, math.min(LONGEST_MS, math.ceil((1 - tokens) / rate * 1000)))
  end
end

if wait > 0 then
  return wait
end

for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tokens = levels[i] - 1
  -- Formatted here: Redis would write a number with 14 digits, too few for microseconds.
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'at', string.format('%d', now))
  local full_in = math.min(LONGEST_MS, math.ceil((burst - tokens) / rate * 1000))
  redis.call('PEXPIRE', key, string.format('%d', math.max(1, full_in)))
end
return 0
