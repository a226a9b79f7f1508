/**
 * The 402 of a budget: `budget_exceeded`, naming the window that refused (the key's or the
 * account's, its period, limit and what is left), when it resets, and Retry-After for windows that
 * reset. The envelope is the usual one; `budget` and `resets_at` are extra fields of its error
 * object (OpenAI clients ignore fields they do not know).
 */
import { ApiError, formatUsd } from "../errors.ts";
import type { WindowInfo } from "./window-statements.ts";

export type RefusedWindow = Pick<WindowInfo, "id" | "budgetId" | "keyId" | "period" | "timezone" | "models" | "limit" | "endsAt">;

const PERIOD_WORD = { day: "daily", week: "weekly", month: "monthly", lifetime: "lifetime" } as const;

/** "key key_x's daily budget (Europe/Paris) for gpt-4o" */
export function describeWindow(w: Pick<RefusedWindow, "keyId" | "period" | "timezone" | "models">): string {
  const owner = w.keyId ? `key ${w.keyId}'s` : "the account's";
  const tz = w.period === "lifetime" ? "" : ` (${w.timezone})`;
  const models = w.models ? ` for ${w.models.join(", ")}` : "";
  return `${owner} ${PERIOD_WORD[w.period]} budget${tz}${models}`;
}

/**
 * `left`: what the window can still reserve as the client sees it; `elsewhere`: idle credit other
 * instances reserved in it and were asked to give back (the refusal then says "retry shortly").
 */
export function budgetExceeded(w: RefusedWindow, needed: number, left: number, now: number, elsewhere = 0): ApiError {
  const resetsAt = w.endsAt === null ? null : new Date(w.endsAt).toISOString();
  const when = resetsAt ? ` It resets at ${resetsAt}.` : " It does not reset.";
  const retry = elsewhere > 0 ? ` ${formatUsd(elsewhere)} more is reserved by other reelay instances and is being given back: retry shortly.` : "";
  const message = `Budget exceeded: ${describeWindow(w)} of ${formatUsd(w.limit)} has ${formatUsd(Math.max(0, left))} left; this request needs ${formatUsd(needed)}.${when}${retry}`;
  const headers: Record<string, string> = {};
  if (elsewhere > 0) headers["retry-after"] = "1";
  else if (w.endsAt !== null) headers["retry-after"] = String(Math.max(1, Math.ceil((w.endsAt - now) / 1000)));
  return new ApiError(402, "insufficient_quota", message, {
    code: "budget_exceeded",
    headers,
    details: {
      resets_at: resetsAt,
      budget: { id: w.budgetId, window: w.id, scope: w.keyId ? "key" : "account", key_id: w.keyId, period: w.period, timezone: w.timezone, models: w.models, limit: w.limit, remaining: Math.max(0, left) },
    },
  });
}

/** The budgets of an account changed since the caller read them (another instance's PUT): read them again. */
export class StaleBudgets extends Error {
  constructor(readonly accountId: string) {
    super(`budgets of ${accountId} changed`);
  }
}
