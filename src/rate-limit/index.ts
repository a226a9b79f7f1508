export { createMemoryLimiter, type MemoryLimiter, type MemoryLimiterOptions } from "./memory-limiter.ts";
// createRedisLimiter is imported from ./redis-limiter.ts where it is needed (src/ops/index.ts, only
// with REDIS_URL): with yaml and pino-pretty also loaded on demand, idle RSS of the compiled binary
// went from 79 to 77 MB (4 starts each, bench/memory.ts's "no models, PostgreSQL" setup)
export type { RedisLimiterOptions } from "./redis-limiter.ts";
export type { ConsumeResult, LimiterHealth, LimiterLogger, RateLimiter } from "./types.ts";
