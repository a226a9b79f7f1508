/**
 * Concurrent mixed requests — chat, streams, embeddings, video submits — against a key budget, an
 * account budget and the balance at once, on the instances given (1,000 on two server processes on
 * Postgres: mixed-load.test.ts; 300 on one in-process server on PGlite, whose one connection
 * serialises every statement: mixed-load-pglite.test.ts).
 * Two accounts, each with a key with a daily budget and a key without: on account X the account's
 * monthly budget is tighter than its balance, on account Y the balance is tighter than its account
 * budget, so every kind of pot ends up refusing. Demand (Σ worst cases) is several times what any
 * pot allows.
 *
 * Checked: while the load runs, every window's spent + held ≤ its limit at every sample; every 402
 * names a pot whose stated remainder is below that request's worst case; afterwards (every job
 * finished, every charge landed) no window spent more than its limit, no balance went negative, the
 * ledger and the windows add up, and after a tail of chat requests from every instance until each
 * key is refused for good, what is left is less than one chat's worst case.
 */
import { expect } from "bun:test";
import { sql } from "drizzle-orm";
import { query, type Db } from "../../src/db/index.ts";
import { expectInvariants, expectWindowInvariants, windowRows } from "../billing/support.ts";
import { CHAT_COST, routes, VIDEO_PER_SECOND } from "./support.ts";

/** an instance as the scenario uses it */
export interface Instance {
  url: string;
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
}

const VIDEO_COST = VIDEO_PER_SECOND; // 1 s
const WORST = { chat: CHAT_COST, stream: CHAT_COST, embed: 3, video: VIDEO_COST } as const;
type Kind = keyof typeof WORST;

async function newKey(s: Instance, accountId: string, budgets?: unknown[]) {
  const res = await s.admin(`/admin/accounts/${accountId}/keys`, { body: { name: "k", ...(budgets ? { budgets } : {}) } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string; key: string });
}

export async function runMixedLoad(servers: Instance[], db: Db, opts: { jobsTimeoutMs: number; requests: number }) {
  const a = servers[0]!, b = servers[servers.length - 1]!;
  const K = 300_000, TIGHT = 600_000, LOOSE = 100_000_000;
  const accounts = [] as Array<{ id: string; keys: Array<{ id: string; key: string }>; binding: "account" | "balance" }>;
  for (const [binding, credits, monthly] of [["account", LOOSE, TIGHT], ["balance", TIGHT, LOOSE]] as const) {
    const acct = (await (await a.admin("/admin/accounts", { body: { name: `mixed-${binding}`, amount: credits } })).json()) as { id: string };
    expect((await a.admin(`/admin/accounts/${acct.id}/budgets`, { method: "PUT", body: { budgets: [{ period: "month", limit: monthly }] } })).status).toBe(200);
    accounts.push({ id: acct.id, binding, keys: [await newKey(a, acct.id, [{ period: "day", limit: K, timezone: "Europe/Paris" }]), await newKey(b, acct.id)] });
  }
  const ids = accounts.map((x) => x.id);

  // the sampler: every window within its limit at every moment
  let sampling = true;
  let samples = 0;
  const sampler = (async () => {
    while (sampling) {
      for (const w of await windowRows(db, ids)) expect({ window: w.id, within: w.spent + w.held <= w.limit }).toEqual({ window: w.id, within: true });
      samples++;
      await Bun.sleep(50);
    }
  })();

  const kinds: Kind[] = [];
  for (let i = 0; i < opts.requests; i++) kinds.push((["chat", "chat", "stream", "embed", "video"] as const)[i % 5]!);
  const outcomes = { ok: 0, budget: 0, quota: 0, retryShortly: 0, upstreamFailed: 0 };
  const send = async (kind: Kind, s: Instance, key: string): Promise<Response> =>
    kind === "chat" ? routes.chat(s.url, key) : kind === "stream" ? routes.stream(s.url, key) : kind === "embed" ? routes.embed(s.url, key) : routes.video(s.url, key, 1);
  await Promise.all(kinds.map(async (kind, i) => {
    const acct = accounts[i % 2]!;
    const key = acct.keys[(i >> 1) % 2]!;
    const res = await send(kind, servers[(i >> 2) % servers.length]!, key.key);
    const text = await res.text();
    if (res.status === 200 || res.status === 202) return void outcomes.ok++;
    // an upstream that answered too slowly for a box this loaded: nothing charged (the money checks below include it)
    if (res.status === 502 || res.status === 504) return void outcomes.upstreamFailed++;
    // anything else: its body and what the server logged under its request id say why
    const id = res.headers.get("x-request-id");
    const logged = () => servers.flatMap((sv) => ("stdout" in sv ? (sv as unknown as { stdout(): string }).stdout().split("\n").filter((l) => id && l.includes(id) && !l.includes('"msg":"request"')) : []));
    expect({ kind, status: res.status, body: res.status === 402 ? null : text.slice(0, 500), log: res.status === 402 ? [] : logged() }).toEqual({ kind, status: 402, body: null, log: [] });
    const e = JSON.parse(text).error;
    if (/retry shortly/.test(e.message)) return void outcomes.retryShortly++;
    if (e.code === "budget_exceeded") {
      outcomes.budget++;
      // exact: the window it names could not take this request's worst case
      expect(e.budget.remaining).toBeLessThan(WORST[kind] + (kind === "embed" ? 10 : 0));
    } else {
      outcomes.quota++;
      const available = Number(/only \$[\d.]+ \((\d+) micro-dollars\)/.exec(e.message)![1]);
      expect(available).toBeLessThan(WORST[kind] + (kind === "embed" ? 10 : 0));
    }
  }));

  // every video job finishes and is charged (the scheduler of either instance)
  await waitFor("video jobs final", async () => Number((await query<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM video_jobs WHERE account_id IN ${inList(ids)} AND status NOT IN ('completed', 'failed', 'cancelled', 'expired')`))[0]!.n) === 0, 90_000);

  // the tail: chat from both instances on every key until each is refused for good
  await Promise.all(accounts.flatMap((acct) => acct.keys.flatMap((k) => servers.map(async (s) => {
    for (let n = 0; n < 200; n++) {
      const res = await routes.chat(s.url, k.key);
      const body = (await res.json()) as any;
      if (res.status === 200) continue;
      expect(res.status).toBe(402);
      if (/retry shortly/.test(body.error.message)) {
        await Bun.sleep(100);
        continue;
      }
      return;
    }
    throw new Error("a key was never refused");
  }))));
  sampling = false;
  await sampler;
  for (const s of servers) await fetch(s.url + "/v1/account", { headers: { authorization: `Bearer ${accounts[0]!.keys[0]!.key}` } }); // lands each instance's queue

  await waitFor("settled", async () => Number((await query<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM holds WHERE account_id IN ${inList(ids)} AND state = 'open' AND kind <> 'lease'`))[0]!.n) === 0, 30_000);
  console.log(`mixed load: ${JSON.stringify(outcomes)}, ${samples} samples of the windows`);
  // at the least, the video jobs that fit: 20 per account (the key budget of 300,000 and the rest of the tight pot of 600,000, at 30,000 each)
  expect(outcomes.ok).toBeGreaterThanOrEqual(40);
  expect(outcomes.budget).toBeGreaterThan(0);
  expect(outcomes.quota).toBeGreaterThan(0);

  for (const acct of accounts) {
    const view = async (path: string) => ((await (await a.admin(path)).json()) as any).data[0].window;
    const keyWindow = await view(`/admin/keys/${acct.keys[0]!.id}/budgets`);
    const accountWindow = await view(`/admin/accounts/${acct.id}/budgets`);
    const balance = ((await (await a.admin(`/admin/accounts/${acct.id}`)).json()) as any).available;
    // charged within every limit
    expect(keyWindow.spent).toBeLessThanOrEqual(K);
    expect(accountWindow.spent).toBeLessThanOrEqual(acct.binding === "account" ? TIGHT : LOOSE);
    expect(balance).toBeGreaterThanOrEqual(0);
    // what is left cannot take one more chat: for the key with a budget, in one of its three pots;
    // for the other key, in the pot meant to bind (the account's budget on X, the balance on Y)
    expect(Math.min(keyWindow.remaining, accountWindow.remaining, balance)).toBeLessThan(CHAT_COST);
    expect(acct.binding === "account" ? accountWindow.remaining : balance).toBeLessThan(CHAT_COST);
  }
  await expectInvariants(db, ids);
  await expectWindowInvariants(db, ids);
}

const inList = (ids: string[]) => sql.raw(`(${ids.map((i) => `'${i}'`).join(",")})`);

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number) {
  const t0 = performance.now();
  while (!(await fn())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await Bun.sleep(100);
  }
}
