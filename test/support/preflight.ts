/**
 * Runs before every `bun test` / `npm test` (bunfig.toml preload): the suites need a real
 * PostgreSQL, a real Redis and ffmpeg, and without them they failed with connection errors deep in
 * the first test files. Here each missing piece is one line saying what is missing and the one
 * command that provides it, then the run stops. Also runnable alone: `bun test/support/preflight.ts`.
 */
import postgres from "postgres";
import Redis from "ioredis";

const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
/** a local service answers in milliseconds; 3 s leaves room for a loaded CI machine */
const TIMEOUT_MS = 3_000;

const where = (url: string) => {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol.startsWith("redis") ? 6379 : 5432)}`;
};

async function checkPostgres(): Promise<string | null> {
  const sql = postgres(DATABASE_URL, { max: 1, connect_timeout: TIMEOUT_MS / 1000, idle_timeout: 1, onnotice: () => {} });
  try {
    await sql`select 1`;
    return null;
  } catch (e) {
    const err = e as { code?: string; message?: string };
    const db = new URL(DATABASE_URL).pathname.slice(1);
    if (err.code === "3D000") return `PostgreSQL at ${where(DATABASE_URL)} has no database "${db}" (DATABASE_URL) — create it: createdb -h ${new URL(DATABASE_URL).hostname} -U ${new URL(DATABASE_URL).username || "postgres"} ${db}`;
    return `PostgreSQL is not reachable at ${where(DATABASE_URL)} (DATABASE_URL; ${err.code ?? err.message}) — start it: docker compose up -d postgres`;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

async function checkRedis(): Promise<string | null> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: TIMEOUT_MS, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  let cause = "";
  redis.on("error", (e: { code?: string; message?: string }) => void (cause ||= e.code ?? e.message ?? ""));
  try {
    await redis.connect();
    return (await redis.ping()) === "PONG" ? null : `the server at ${where(REDIS_URL)} does not answer PING like Redis (REDIS_URL) — start Redis: docker compose up -d redis`;
  } catch (e) {
    return `Redis is not reachable at ${where(REDIS_URL)} (REDIS_URL; ${cause || (e as Error).message}) — start it: docker compose up -d redis`;
  } finally {
    redis.disconnect();
  }
}

function checkFfmpeg(): string | null {
  const missing = ["ffmpeg", "ffprobe"].filter((b) => !Bun.which(b));
  return missing.length ? `${missing.join(" and ")} not found on PATH (the video tests check real MP4s) — install it: sudo apt-get install ffmpeg` : null;
}

const [pg, redis] = await Promise.all([checkPostgres(), checkRedis()]);
const bothDown = pg?.includes("not reachable") && redis?.includes("not reachable");
const services = bothDown
  ? [`PostgreSQL (${where(DATABASE_URL)}, DATABASE_URL) and Redis (${where(REDIS_URL)}, REDIS_URL) are not reachable — start both: docker compose up -d`]
  : [pg, redis];
const problems = [...services, checkFfmpeg()].filter((p): p is string => !!p);
if (problems.length) {
  console.error(problems.map((p) => `reelay tests: ${p}`).join("\n"));
  process.exit(1);
}
