/**
 * Lua run atomically inside Redis. Time comes from `redis.call('TIME')`, so instances with skewed
 * clocks still share one limit (Redis >= 5 replicates script effects, which makes TIME allowed).
 */

/** KEYS[1] = TAT key; ARGV = cost, limit, windowMs → {allowed 0|1, remaining, resetMs}. Mirrors gcra.ts. */
export const CONSUME_LUA = `
local cost = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = window / limit
local eps = 1e-6
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + cost * interval
local allow_at = new_tat - window
local function remaining_at(x)
  local r = math.floor((window - (x - now)) / interval + eps)
  if r < 0 then return 0 end
  return r
end
if cost > limit then
  return {0, remaining_at(tat), math.ceil(tat - now)}
end
if allow_at - now > eps then
  return {0, remaining_at(tat), math.ceil(allow_at - now)}
end
if cost > 0 then
  redis.call('SET', KEYS[1], string.format('%.3f', new_tat), 'PX', math.max(1, math.ceil(new_tat - now)))
end
return {1, remaining_at(new_tat), math.ceil(new_tat - now)}
`;

/** Drops expired members of the slot ZSET (score = expiry ms) and keeps the key alive as long as its latest slot. */
const SLOT_PRELUDE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local function keep_alive()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if last[2] then redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(tonumber(last[2]) - now))) end
end
`;

/** KEYS[1] = slot ZSET; ARGV = max, ttlMs, token → 1 acquired | 0 full */
export const ACQUIRE_SLOT_LUA = `${SLOT_PRELUDE}
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
keep_alive()
return 1
`;

/** KEYS[1] = slot ZSET; ARGV = token, ttlMs → 1 extended | 0 unknown or expired */
export const EXTEND_SLOT_LUA = `${SLOT_PRELUDE}
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keep_alive()
return 1
`;
