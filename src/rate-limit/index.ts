export { createMemoryLimiter, type MemoryLimiter, type MemoryLimiterOptions } from "./memory-limiter.ts";
export { createRedisLimiter, type RedisLimiterOptions } from "./redis-limiter.ts";
export type { ConsumeResult, LimiterHealth, LimiterLogger, RateLimiter } from "./types.ts";
