/**
 * `budget.threshold_reached`: the billing module records each threshold a budget window crosses
 * (budget_alerts, in the settlement's own statement); this task, on every instance, claims the
 * alerts not yet queued and queues their deliveries in the same transaction (the outbox), so each
 * reaches each subscribed endpoint exactly once, whichever instance claims it and however often
 * instances restart. It runs when a batch of settlements reports new alerts and every `pollMs`.
 */
import { every, type BackgroundTask } from "../../background.ts";
import type { AppDeps } from "../../deps.ts";
import { claimAlerts } from "../../billing/budget-alerts.ts";
import { enqueueAccountEvent } from "./outbox.ts";

export function budgetAlertTask(deps: Pick<AppDeps, "config" | "database" | "logger">): BackgroundTask & { kick(): void } {
  const run = async () => {
    for (;;) {
      const n = await deps.database.db.transaction(async (tx) => {
        const alerts = await claimAlerts(tx);
        for (const a of alerts) {
          await enqueueAccountEvent(tx, {
            eventId: `bal_${a.windowId}_${a.threshold}`, accountId: a.accountId, type: "budget.threshold_reached",
            data: {
              object: "budget.threshold", budget_id: a.budgetId, window_id: a.windowId, scope: a.keyId ? "key" : "account", key_id: a.keyId, period: a.period, timezone: a.timezone, models: a.models,
              threshold: a.threshold, limit: a.limit, spent: a.spent, window_starts_at: a.windowStartsAt, resets_at: a.resetsAt, reached_at: a.reachedAt,
            },
          }, { retryWindowMs: deps.config.webhooks.retryWindowMs });
        }
        return alerts.length;
      });
      if (n === 0) return;
    }
  };
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const once = () => {
    if (stopped) return;
    if (running) return void (again = true);
    running = run()
      .catch((err) => deps.logger.error({ err }, "could not queue budget threshold webhooks; retried at the next poll"))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          once();
        }
      });
  };
  const poll = every(deps.config.webhooks.pollMs, async () => once(), () => {});
  return {
    start: () => {
      stopped = false;
      poll.start();
    },
    stop: async () => {
      stopped = true;
      await poll.stop();
      await running;
    },
    kick: once,
  };
}
