/**
 * Lua run atomically inside Redis. Time comes from `redis.call('TIME')`, so instances with skewed
 * clocks still share one limit (Redis >= 5 replicates script effects, which makes TIME allowed).
 */

/**
 * KEYS[1] = TAT key; ARGV = min, want, limit, windowMs → {allowed 0|1, granted, remaining, resetMs}.
 * GCRA as in gcra.ts, taking as many units as fit between `min` and `want` (a lease, leases.ts);
 * min = want = cost is a plain consume. Refused: nothing is counted, resetMs = ms until `min` fits.
 */
export const TAKE_LUA = `
local min = tonumber(ARGV[1])
local want = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = window / limit
local eps = 1e-6
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local function remaining_at(x)
  local r = math.floor((window - (x - now)) / interval + eps)
  if r < 0 then return 0 end
  return r
end
local function ceil_ms(x) return math.ceil(x - eps) end
if min > limit then
  return {0, 0, remaining_at(tat), ceil_ms(tat - now)}
end
local allow_at = tat + min * interval - window
if allow_at - now > eps then
  return {0, 0, remaining_at(tat), ceil_ms(allow_at - now)}
end
local granted = math.max(min, math.min(want, remaining_at(tat)))
if granted > 0 then
  tat = tat + granted * interval
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.max(1, ceil_ms(tat - now)))
end
return {1, granted, remaining_at(tat), ceil_ms(tat - now)}
`;

/** KEYS[1] = TAT key; ARGV = units, limit, windowMs: give back units taken and not spent (TAT moves back). */
export const GIVE_BACK_LUA = `
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
tat = tat - tonumber(ARGV[1]) * tonumber(ARGV[3]) / tonumber(ARGV[2])
if tat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.max(1, math.ceil(tat - now)))
end
return 1
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
