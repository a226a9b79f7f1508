/**
 * The delivery worker, on every instance: claims due outbox rows (deliveries.ts), sends up to
 * `webhooks.concurrency` at once, records the outcome. It wakes on the `reelay_webhooks`
 * notification every new outbox row sends at commit, at the due time of a retry it scheduled, and
 * every `pollMs` regardless (notifications are not durable: one sent while the listening
 * connection was down is lost, the poll finds its row).
 *
 * Retries: exponential backoff with jitter, base × 2^(n−1) capped at retryMaxMs, each wait drawn
 * from [½, 1] of that (spreads a burst of failures against one receiver instead of retrying them
 * in lockstep); with the defaults (5 s, 1 h cap, 24 h window) that is ~40 attempts.
 */
import type { AppDeps } from "../../deps.ts";
import type { BackgroundTask } from "../../background.ts";
import type { Database, Db } from "../../db/index.ts";
import { listen } from "../../db/listen.ts";
import { claimDueDeliveries, failPendingOfEndpoint, markAttemptFailed, markDelivered, markFailed, releaseDeliveryLeases, type ClaimedDelivery } from "./deliveries.ts";
import { disableEndpoint } from "./endpoints.ts";
import type { Resolver } from "../../net/safe-fetch.ts";
import type { SecretBox } from "./secret-box.ts";
import { sendAttempt, type AttemptOutcome } from "./send-attempt.ts";

/** one receiver gets at most this many of an instance's slots, so a slow one cannot starve the rest */
const MAX_IN_FLIGHT_PER_URL = 16;
/** between two claims: a burst of 1,000 notifications becomes ≤ 100 claim statements a second, for ≤ 10 ms of added latency */
const MIN_CLAIM_GAP_MS = 10;
/** on shutdown, attempts in flight get this long to finish before they are aborted and handed back */
const STOP_GRACE_MS = 3_000;
const MARK_BATCH = 500;
/** claim → send → record takes milliseconds; 5 s covers an event loop stalled under load */
const LEASE_MARGIN_MS = 5_000;

export function backoffMs(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(40, Math.max(0, attempt - 1)));
  return Math.max(1, Math.round(ceiling * (0.5 + random() * 0.5)));
}

/**
 * `resolver`: DNS for receivers' names (tests; default getaddrinfo).
 * `ownPool`: connections of the worker's own (PostgreSQL). A burst of job completions queues
 * hundreds of transactions on the app's pool; claims and results waiting in that queue were most of
 * the completion → delivery latency in bench/webhooks.ts.
 */
export function createDeliveryWorker(deps: Pick<AppDeps, "config" | "database" | "logger"> & Partial<Pick<AppDeps, "tracing">>, box: SecretBox | null, opts: { ownPool?: () => Promise<Database>; resolver?: Resolver } = {}): BackgroundTask {
  const { config, logger } = deps;
  const cfg = config.webhooks;
  let db: Db = deps.database.db;
  let own: Database | null = null;
  const owner = config.instanceId;
  // the lease outlives one attempt: it only lapses when this instance died (or stalled for seconds)
  const leaseMs = cfg.timeoutMs + LEASE_MARGIN_MS;
  // every attempt resolves the receiver's name again (safe-post.ts); `resolver` replaces DNS in tests
  const policy = { allowedNetworks: cfg.allowedNetworks, resolver: opts.resolver };
  const inFlight = new Map<string, Promise<void>>();
  const perUrl = new Map<string, number>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const delivered: Array<{ id: string; status: number }> = [];
  let flushing: Promise<void> | null = null;
  let abort = new AbortController();
  let stopped = true;
  let woken = false;
  let wake: (() => void) | null = null;
  let loop: Promise<void> | null = null;
  let unlisten: (() => Promise<void>) | null = null;

  const kick = () => {
    woken = true;
    wake?.();
  };
  const kickAt = (delayMs: number) => {
    if (delayMs >= cfg.pollMs) return; // the poll comes first anyway
    const t = setTimeout(() => {
      timers.delete(t);
      kick();
    }, delayMs);
    timers.add(t);
  };

  function flushDelivered() {
    if (flushing || delivered.length === 0) return;
    flushing = (async () => {
      while (delivered.length) {
        const batch = delivered.splice(0, MARK_BATCH);
        // if this fails the rows stay leased and are sent again after the lease: a duplicate, never a loss
        await markDelivered(db, owner, batch).catch((err) => logger.error({ err, n: batch.length }, "could not record delivered webhooks; they will be sent again"));
      }
    })().finally(() => {
      flushing = null;
      flushDelivered();
    });
  }

  async function record(d: ClaimedDelivery, outcome: AttemptOutcome) {
    switch (outcome.kind) {
      case "delivered":
        delivered.push({ id: d.id, status: outcome.status });
        return flushDelivered();
      case "gone": {
        const reason = "the receiver answered 410 Gone";
        await db.transaction(async (tx) => {
          await markFailed(tx, owner, d.id, { status: 410, error: reason });
          if (d.endpointId) {
            await disableEndpoint(tx, d.endpointId, reason);
            await failPendingOfEndpoint(tx, d.endpointId, `endpoint disabled: ${reason}`);
          }
        });
        logger.info({ deliveryId: d.id, endpointId: d.endpointId, url: d.url }, "webhook receiver answered 410: endpoint disabled");
        return;
      }
      case "give_up":
        return markFailed(db, owner, d.id, { status: null, error: outcome.error });
      case "retry": {
        const delayMs = backoffMs(d.attempts, cfg.retryBaseMs, cfg.retryMaxMs);
        await markAttemptFailed(db, owner, d.id, { status: outcome.status, error: outcome.error, delayMs });
        logger.debug({ deliveryId: d.id, attempts: d.attempts, status: outcome.status, error: outcome.error, retryInMs: delayMs }, "webhook attempt failed");
        return kickAt(delayMs);
      }
    }
  }

  function start(d: ClaimedDelivery) {
    perUrl.set(d.url, (perUrl.get(d.url) ?? 0) + 1);
    const signal = abort.signal;
    // tracing on: the attempt is a span in the trace of the job it tells about
    const span = d.traceparent ? deps.tracing?.background("webhook.deliver", d.traceparent, { "reelay.webhook.delivery_id": d.id, "reelay.webhook.attempt": d.attempts, "server.address": hostOf(d.url) }) : undefined;
    const done = sendAttempt({ box, policy, timeoutMs: cfg.timeoutMs, signal, trace: span?.upstream }, d)
      .then((outcome) => {
        if (span) {
          span.set({ "reelay.webhook.outcome": outcome.kind, "http.response.status_code": "status" in outcome ? outcome.status ?? undefined : undefined });
          span.end(outcome.kind === "delivered" ? undefined : { message: "error" in outcome ? outcome.error : "the receiver answered 410 Gone", kind: outcome.kind });
        }
        return record(d, outcome);
      })
      .catch((err) => {
        span?.end(err);
        // aborted on shutdown: the lease is released below and another instance sends it
        if (!signal.aborted) logger.error({ err, deliveryId: d.id }, "webhook delivery failed unexpectedly; retried after its lease");
      })
      .finally(() => {
        inFlight.delete(d.id);
        const n = (perUrl.get(d.url) ?? 1) - 1;
        if (n > 0) perUrl.set(d.url, n);
        else perUrl.delete(d.url);
        if (inFlight.size <= cfg.concurrency / 2 || n === MAX_IN_FLIGHT_PER_URL - 1) kick();
      });
    inFlight.set(d.id, done);
  }

  async function claim(): Promise<{ asked: number; got: number }> {
    const asked = cfg.concurrency - inFlight.size;
    if (asked <= 0) return { asked, got: 0 };
    const skipUrls = [...perUrl].filter(([, n]) => n >= MAX_IN_FLIGHT_PER_URL).map(([url]) => url);
    const batch = await claimDueDeliveries(db, { owner, leaseMs, limit: asked, skipUrls });
    // a delivery still on the wire here whose lease lapsed (an event loop stalled past timeout + 5 s)
    // is claimed back by this same instance: the claim renewed the lease, the attempt goes on;
    // a second attempt would POST it again while the first is unanswered
    for (const d of batch) if (!inFlight.has(d.id)) start(d);
    return { asked, got: batch.length };
  }

  async function runLoop() {
    if (opts.ownPool) {
      try {
        own = await opts.ownPool();
        db = own.db;
      } catch (err) {
        logger.warn({ err }, "webhook worker: no connections of its own; sharing the app's pool");
      }
    }
    while (!stopped) {
      woken = false;
      let more = false;
      try {
        const { asked, got } = await claim();
        more = asked > 0 && got === asked;
      } catch (err) {
        logger.error({ err }, "webhook claim failed");
      }
      if (stopped) break;
      await sleep(MIN_CLAIM_GAP_MS);
      if (more || woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, cfg.pollMs);
        function done() {
          clearTimeout(timer);
          wake = null;
          resolve();
        }
        wake = done;
      });
    }
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      abort = new AbortController();
      loop = runLoop();
      listen(deps.database, "reelay_webhooks", kick, kick).then(
        (stop) => (stopped ? void stop().catch(() => {}) : (unlisten = stop)),
        (err) => logger.warn({ err }, "cannot LISTEN for new webhooks; polling every REELAY_WEBHOOK_POLL_MS instead"),
      );
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      kick();
      await loop;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await unlisten?.().catch(() => {});
      unlisten = null;
      const settled = Promise.allSettled([...inFlight.values()]);
      if ((await Promise.race([settled.then(() => "done"), sleep(STOP_GRACE_MS).then(() => "late")])) === "late") abort.abort(new Error("shutting down"));
      await settled;
      while (flushing) await flushing;
      const released = await releaseDeliveryLeases(db, owner).catch(() => 0);
      if (released) logger.info({ released }, "webhook deliveries handed back on shutdown");
      await own?.close().catch(() => {});
      own = null;
      db = deps.database.db;
    },
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** a receiver's host, for its span (never the whole URL: a query string may carry a token) */
function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
