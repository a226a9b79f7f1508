import { Elysia, t } from "elysia";
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../deps.ts";
import { pendingMigrations } from "../../db/index.ts";

import type { ReadinessCheck } from "../../ops/hooks.ts";

export type { ReadinessCheck };

const Check = t.Object({ name: t.String(), ok: t.Boolean(), detail: t.Optional(t.String()), degraded: t.Optional(t.Boolean()) });
const ModelState = t.Object({
  id: t.String(),
  state: t.Union([t.Literal("unloaded"), t.Literal("loading"), t.Literal("ready"), t.Literal("failed")], {
    description: "unloaded: loads on its first request (or is preloaded); loading; ready; failed: the last load failed and is retried by a later request",
  }),
  error: t.Optional(t.String()),
  load_ms: t.Optional(t.Integer()),
});

/**
 * /healthz: the process answers. /readyz: 200 once the database answers and has every migration;
 * each model's load state is reported alongside and never blocks readiness (a request for a model
 * still loading waits for it, bounded), so an instance joins the load balancer as soon as it can
 * serve billing, keys and the models that are up.
 */
export const healthRoutes = (deps: AppDeps, extraChecks: ReadinessCheck[] = []) =>
  new Elysia({ tags: ["health"] })
    .get("/healthz", () => ({ status: "ok" as const }), {
      detail: { summary: "Liveness: the process is up" },
      response: { 200: t.Object({ status: t.Literal("ok") }, { examples: [{ status: "ok" }] }) },
    })
    .get(
      "/readyz",
      async ({ set }) => {
        const checks: Array<{ name: string; ok: boolean; detail?: string; degraded?: boolean }> = [];
        // shutting down: out of the load balancer at once, whatever else holds
        if (deps.lifecycle?.draining) {
          set.status = 503;
          return { status: "not_ready" as const, checks: [{ name: "shutdown", ok: false, detail: "draining: the server is shutting down" }], models: deps.registry.statuses() };
        }
        try {
          await deps.database.db.execute(sql`SELECT 1`);
          const pending = await pendingMigrations(deps.database.db);
          checks.push({ name: "database", ok: pending.length === 0, detail: pending.length ? `pending migrations: ${pending.join(", ")}` : deps.database.kind });
        } catch (e) {
          checks.push({ name: "database", ok: false, detail: (e as Error).message });
        }
        for (const check of extraChecks) checks.push(await check().catch((e) => ({ name: "check", ok: false, detail: String(e) })));
        const ready = checks.every((c) => c.ok);
        if (!ready) set.status = 503;
        return { status: ready ? ("ready" as const) : ("not_ready" as const), checks, models: deps.registry.statuses() };
      },
      {
        detail: { summary: "Readiness", description: "Readiness: database reachable and migrated (plus degraded dependencies such as Redis); each model's load state" },
        response: {
          200: t.Object(
            { status: t.Literal("ready"), checks: t.Array(Check), models: t.Array(ModelState) },
            {
              examples: [{
                status: "ready",
                checks: [{ name: "database", ok: true, detail: "postgres" }, { name: "redis", ok: true, degraded: true, detail: "unreachable: using in-process limits" }],
                models: [{ id: "use-lite", state: "ready", load_ms: 840 }, { id: "preview-motion", state: "ready" }],
              }],
            },
          ),
          503: t.Object({ status: t.Literal("not_ready"), checks: t.Array(Check), models: t.Array(ModelState) }),
        },
      },
    );
