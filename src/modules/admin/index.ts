/**
 * The admin HTTP API under /admin, for operators. Protected by REELAY_ADMIN_TOKEN (Bearer);
 * client API keys are refused. Disabled (every call 401) when no admin token is configured.
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { requireOperator } from "../../http/require-operator.ts";
import { audited, logAudit, writeAudit, type AuditContext, type AuditEntry, type AuditRow } from "../../audit/audit-log.ts";
import type { Tx } from "../../db/index.ts";
import * as billing from "../../billing/index.ts";
import { badRequest } from "../../errors.ts";
import { ErrorEnvelope, PageQuery } from "../../http/schemas.ts";
import * as accounts from "../../accounts/accounts.ts";
import * as keys from "../../accounts/api-keys.ts";
import { listLedger } from "../../accounts/usage-and-ledger.ts";
import { budgetError, normaliseBudgets, setBudgetsIn } from "../../billing/budgets.ts";
import { AccountView, AccountsQuery, AdjustmentBody, CreateAccountBody, CreateKeyBody, GrantBody, KeyView, LedgerPage, Limits, listOf, UpstreamsList } from "./model.ts";
import { upstreamReport, type ModelUpstreams } from "../../registry/upstream-report.ts";

const toLimits = (b: { requests_per_minute?: number | null; tokens_per_minute?: number | null; concurrent_video_jobs?: number | null }): keys.KeyLimits => {
  const out: keys.KeyLimits = {};
  if (b.requests_per_minute !== undefined) out.rpmLimit = b.requests_per_minute;
  if (b.tokens_per_minute !== undefined) out.tpmLimit = b.tokens_per_minute;
  if (b.concurrent_video_jobs !== undefined) out.videoConcurrencyLimit = b.concurrent_video_jobs;
  return out;
};

const adminErrors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };
const accountReply = { 200: AccountView, ...adminErrors };
const keyReply = { 200: KeyView, ...adminErrors };
const security = [{ admin: [] }];

export const adminRoutes = (deps: AppDeps) => {
  const db = deps.database.db;
  // Accounts as their clients see them, with the credit leased ahead shown on its own. The rows and
  // their leases are read in one snapshot: a lease given back between two separate reads (an idle
  // lease goes back after 2 s) showed its amount as `held` with no request in flight.
  const views = (read: (tx: Tx) => Promise<Array<Parameters<typeof accounts.publicAccount>[0]>>) =>
    db.transaction(async (tx) => {
      const rows = await read(tx);
      const leased = await billing.leasedIdle(tx, rows.map((r) => r.id));
      return rows.map((r) => accounts.publicAccount(r, leased.get(r.id) ?? { idle: 0, leases: 0 }));
    }, { isolationLevel: "repeatable read", accessMode: "read only" });
  const view = async (id: string) => (await views(async (tx) => [await accounts.getAccount(tx, id)]))[0]!;
  const inTx = <T>(audit: AuditContext, work: (tx: Tx, record: (e: AuditEntry) => Promise<void>) => Promise<T>) => audited({ db, logger: deps.logger }, audit, work);
  // what the audit log keeps of an account: its settings and balance as the transaction sees them
  const accountState = (row: Parameters<typeof accounts.publicAccount>[0]) => accounts.publicAccount(row);
  return new Elysia({ prefix: "/admin", tags: ["admin"] })
    .use(requireOperator(deps))
    .post(
      "/accounts",
      async ({ body, set, audit }) => {
        set.status = 201;
        if (body.amount !== undefined && body.credits !== undefined && body.amount !== body.credits) throw badRequest("Send the initial credits once: 'amount' (or its older name 'credits'), not both with different values.", "amount");
        const amount = body.amount ?? body.credits ?? 0;
        const created = await inTx(audit, async (tx, record) => {
          const row = await accounts.createFundedAccount(tx, body.name, amount);
          await record({ action: "account.create", target: { type: "account", id: row.id }, after: { ...accountState(await accounts.getAccount(tx, row.id)), initial_credits: amount } });
          return row;
        });
        return view(created.id);
      },
      {
        body: CreateAccountBody,
        detail: { summary: "Create an account (optionally funded)", security },
        response: { 201: AccountView, ...adminErrors },
      },
    )
    .post(
      "/backup",
      async () => {
        if (!deps.database.dump) throw badRequest("This server runs on PostgreSQL: back it up with pg_dump (`reelay backup <dir>` runs it), not through the server.", null, "backup_not_embedded");
        const tarball = await deps.database.dump();
        return new Response(tarball, { headers: { "content-type": "application/gzip", "content-disposition": `attachment; filename="reelay-pglite-${new Date().toISOString().replace(/[:.]/g, "-")}.tar.gz"` } });
      },
      {
        detail: {
          summary: "Back up the embedded database",
          description: "A consistent copy of the embedded PGlite data directory as a gzipped tarball, taken while the server serves (requests wait for the copy). Unpack it into an empty directory and start reelay with REELAY_DATA_DIR pointing there to restore. `reelay backup <dir>` calls this. On PostgreSQL: 400 (use pg_dump). See docs/operations.md \"Backups\".",
          security,
        },
        response: { 200: t.Any({ description: "application/gzip: the data directory's tarball" }), 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope },
      },
    )
    .get("/accounts", async ({ query }) => ({ object: "list" as const, data: await views((tx) => accounts.listAccounts(tx, query.limit ?? 100, query.offset ?? 0, query.search || undefined)) }), {
      query: AccountsQuery,
      detail: { summary: "List accounts", security },
      response: { 200: listOf(AccountView, AccountView.examples?.[0]), ...adminErrors },
    })
    .get("/accounts/:id", async ({ params }) => {
      await deps.billing.sync();
      return view(params.id);
    }, {
      detail: {
        summary: "Get an account",
        description: "An account with its balance, held and available credits, as its client sees them (`held`: requests and jobs in flight). `leased`: credit instances reserved ahead for the account and no request uses yet (in the database's held amount; spendable).",
        security,
      },
      response: accountReply,
    })
    .patch("/accounts/:id/limits", async ({ params, body, audit }) => {
      await inTx(audit, async (tx, record) => {
        const before = accountState(await accounts.getAccount(tx, params.id));
        const after = accountState(await accounts.setAccountLimits(tx, params.id, toLimits(body)));
        await record({ action: "account.limits", target: { type: "account", id: params.id }, before: before.limits, after: after.limits });
      });
      return view(params.id);
    }, {
      body: t.Object(Limits, { examples: [{ requests_per_minute: 120, tokens_per_minute: null }] }),
      detail: { summary: "Set account rate limits", description: "Set rate-limit overrides for a whole account (null: configured default)", security },
      response: accountReply,
    })
    .post(
      "/accounts/:id/credits",
      async ({ params, body, audit }) => {
        await inTx(audit, async (tx, record) => {
          const balance = await billing.grant(tx, params.id, body.amount, body.reason ?? "grant by admin", body.ref ?? null);
          await record({ action: "credits.grant", target: { type: "account", id: params.id }, before: { balance: balance - body.amount }, after: { balance, amount: body.amount, reason: body.reason ?? "grant by admin", ref: body.ref ?? null } });
        });
        return view(params.id);
      },
      {
        body: GrantBody,
        detail: { summary: "Grant credits (micro-dollars)", security },
        response: accountReply,
      },
    )
    .post(
      "/accounts/:id/adjustments",
      async ({ params, body, audit }) => {
        // leased credit in the way is asked back first (engine.adjust); the audit row is written in
        // the adjustment's own transaction
        const rows: AuditRow[] = [];
        await deps.billing.adjust(params.id, body.amount, body.reason, body.ref ?? null, async (tx, balance) => {
          rows.length = 0;
          rows.push(await writeAudit(tx, audit, { action: "credits.adjust", target: { type: "account", id: params.id }, before: { balance: balance - body.amount }, after: { balance, amount: body.amount, reason: body.reason, ref: body.ref ?? null } }));
        });
        logAudit(deps.logger, rows);
        return view(params.id);
      },
      {
        body: AdjustmentBody,
        detail: { summary: "Adjust credits up or down with a reason", security },
        response: accountReply,
      },
    )
    .get("/accounts/:id/ledger", async ({ params, query }) => {
      await deps.billing.sync();
      await accounts.getAccount(db, params.id);
      return listLedger(db, params.id, { limit: query.limit ?? 50, before: query.before }, { reservations: query.reservations });
    }, {
      query: t.Object({ ...PageQuery.properties, reservations: t.Optional(t.Boolean({ description: "false: leave out the rows that only reserve credit or give it back (hold, release, lease, lease_return: amount 0, they move `held`); default true" })) }),
      detail: { summary: "The account's ledger, newest first", security },
      response: { 200: LedgerPage, ...adminErrors },
    })
    .post(
      "/accounts/:id/keys",
      async ({ params, body, set, audit }) => {
        // budgets given with the key are set in the key's transaction: a bad budget creates no key
        const budgets = body.budgets ? normaliseBudgets(body.budgets) : null;
        const at = deps.billing.now();
        const { key, record, views } = await inTx(audit, async (tx, note) => {
          const created = await keys.createKey(tx, params.id, { name: body.name, scopes: body.scopes ?? null, allowedModels: body.models ?? null, ...toLimits(body) });
          const views = budgets ? await setBudgetsIn(tx, { accountId: params.id, keyId: created.record.id }, budgets, at) : undefined;
          await note({ action: "key.create", target: { type: "key", id: created.record.id }, after: { ...keys.publicKey(created.record), ...(budgets ? { budgets } : {}) } });
          return { ...created, views };
        }).catch((e) => Promise.reject(budgetError(e)));
        if (budgets) deps.billing.windows.invalidate(params.id);
        set.status = 201;
        return { ...keys.publicKey(record), key, ...(views ? { budgets: views } : {}) };
      },
      {
        body: CreateKeyBody,
        detail: { summary: "Create an API key", description: "Create an API key. The key is in this response only; reelay stores its hash. `budgets` sets the key's budgets at once (as PUT /admin/keys/{id}/budgets).", security },
        response: { 201: KeyView, ...adminErrors },
      },
    )
    .get("/accounts/:id/keys", async ({ params }) => {
      await accounts.getAccount(db, params.id);
      return { object: "list" as const, data: (await keys.listKeys(db, params.id)).map(keys.publicKey) };
    }, { detail: { summary: "List an account's keys", description: "List an account's keys (prefix, name, times; never the key)", security }, response: { 200: listOf(KeyView, KeyView.examples?.[0]), ...adminErrors } })
    .post("/keys/:id/revoke", async ({ params, audit }) => {
      const row = await inTx(audit, async (tx, record) => {
        const before = await keys.getKey(tx, params.id);
        const after = await keys.revokeKey(tx, params.id);
        if (!before.revokedAt) await record({ action: "key.revoke", target: { type: "key", id: params.id }, before: keys.publicKey(before), after: keys.publicKey(after) });
        return after;
      });
      deps.auth.evict(params.id);
      return keys.publicKey(row);
    }, { detail: { summary: "Revoke a key", description: "Revoke a key (takes effect at once here, within the key cache TTL on other instances)", security }, response: keyReply })
    .post("/keys/:id/rotate", async ({ params, audit }) => {
      const { key, record } = await inTx(audit, async (tx, note) => {
        const before = await keys.getKey(tx, params.id);
        const rotated = await keys.rotateKey(tx, params.id);
        await note({ action: "key.rotate", target: { type: "key", id: params.id }, before: keys.publicKey(before), after: { ...keys.publicKey(rotated.record), replaces: params.id } });
        return rotated;
      });
      deps.auth.evict(params.id);
      deps.billing.windows.invalidate(record.accountId);
      return { ...keys.publicKey(record), key, replaces: params.id };
    }, { detail: { summary: "Rotate a key", description: "Revoke a key and issue a new one with the same settings; its budgets move to the new key with what they have counted", security }, response: keyReply })
    .patch("/keys/:id/limits", async ({ params, body, audit }) => {
      const row = await inTx(audit, async (tx, record) => {
        const before = keys.publicKey(await keys.getKey(tx, params.id));
        const after = await keys.setKeyLimits(tx, params.id, toLimits(body));
        await record({ action: "key.limits", target: { type: "key", id: params.id }, before: before.limits, after: keys.publicKey(after).limits });
        return after;
      });
      deps.auth.evict(params.id);
      return keys.publicKey(row);
    }, { body: t.Object(Limits, { examples: [{ requests_per_minute: 60, concurrent_video_jobs: 4 }] }), detail: { summary: "Set key rate limits", description: "Set a key's rate-limit overrides (null: account/default)", security }, response: keyReply })
    .get("/upstreams", () => ({ object: "list" as const, data: upstreamReport(deps.registry).map(viewUpstreams) }), {
      detail: {
        summary: "Upstream deployments and their health",
        description:
          "Every model served over upstream deployments (plugins openai-compatible and remote-gpu-video), each deployment with its circuit-breaker state, " +
          "recent error rate, latency and requests in flight. Per instance: each reelay instance routes and judges its upstreams from its own traffic.",
        security,
      },
      response: { 200: UpstreamsList, ...adminErrors },
    });
};

/** A model's deployments in the API's snake_case. */
function viewUpstreams(m: ModelUpstreams) {
  return {
    model: m.model,
    plugin: m.plugin,
    deployments: m.deployments.map((d) => ({
      name: d.name, weight: d.weight, max_concurrent: d.maxConcurrent, state: d.state, in_flight: d.inFlight, requests: d.requests, successes: d.successes,
      errors: d.errors, recent_error_rate: d.recentErrorRate, recent_requests: d.recentRequests, latency_ms: d.latencyMs, open_for_ms: d.openForMs, opened: d.opened,
    })),
  };
}
