/**
 * Auth probes over every route the app has (read from the app itself, so a new route is probed
 * without touching this file): the client API (/v1: files, batches, OpenAI videos included) answers
 * 401 to no key, a wrong key, the bootstrap token and an operator token; the admin API answers 401
 * to nothing and 403 to a client key; a console session with the `viewer` role reaches no
 * state-changing /admin route (403 `insufficient_role`), and an expired or signed-out session gets
 * 401 `session_expired` everywhere. Sessions are opened the way /sso/callback opens them (the IdP
 * round trip itself is console/test/sso.e2e.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../src/db/index.ts";
import { openSession } from "../../src/operators/sso.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
let clientKey: string;
let viewerToken: string;

beforeAll(async () => {
  // SSO configured (sessions are honoured); the issuer is never called in this file
  s = await startTestServer({ REELAY_OIDC_ISSUER: "http://127.0.0.1:9", REELAY_OIDC_CLIENT_ID: "probe" });
  clientKey = (await s.newClient()).key;
  viewerToken = ((await (await s.admin("/admin/operators", { body: { name: "Vera Viewer", role: "viewer" } })).json()) as { token: string }).token;
}, 60_000);
afterAll(() => s?.close());

const routes = (prefix: string) =>
  s.app.routes
    .map((r) => ({ method: r.method.toUpperCase(), path: r.path }))
    .filter((r) => r.path.startsWith(prefix) && !["ALL", "OPTIONS", "HEAD"].includes(r.method))
    .filter((r, i, all) => all.findIndex((o) => o.method === r.method && o.path === r.path) === i);

const concrete = (path: string) => path.replace(/:[a-z_]+/gi, "zz_missing");

// The client API checks a body's shape before its key (a 400 names the field whatever the caller):
// these bodies pass the shape, so what answers is the key check. Other routes get {}.
const VALID: Record<string, unknown> = {
  "/v1/chat/completions": { model: "m", messages: [{ role: "user", content: "hi" }] },
  "/v1/responses": { model: "m", input: "hi" },
  "/v1/messages": { model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] },
  "/v1/messages/count_tokens": { model: "m", messages: [{ role: "user", content: "hi" }] },
  "/v1/completions": { model: "m", prompt: "hi" },
  "/v1/embeddings": { model: "m", input: "hi" },
  "/v1/videos/generations": { model: "m", prompt: "p", image_url: "https://example.com/a.png" },
  "/v1/videos/:id/remix": { prompt: "p" },
  "/v1/batches": { input_file_id: "file_x", endpoint: "/v1/chat/completions", completion_window: "24h" },
  "/v1/webhooks": { url: "https://example.com/hook" },
};

async function call(method: string, path: string, headers: Record<string, string>) {
  const res = await fetch(s.url + concrete(path), {
    method,
    headers: { ...headers, ...(method === "GET" || method === "DELETE" ? {} : { "content-type": "application/json" }) },
    body: method === "GET" || method === "DELETE" ? undefined : JSON.stringify(VALID[path] ?? {}),
  });
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body, text };
}

/** the error envelope of the API called: Anthropic's on /v1/messages, OpenAI's elsewhere */
const codeOf = (path: string, body: any) => (path.startsWith("/v1/messages") ? body?.type === "error" && body.error?.type : body?.error?.code);

describe("the client API", () => {
  // /v1/plugin-hooks/:model/:token is authenticated by the plugin's own token in the path
  const clientRoutes = () => routes("/v1/").filter((r) => !r.path.startsWith("/v1/plugin-hooks/"));

  test("covers the new routes", () => {
    const paths = clientRoutes().map((r) => `${r.method} ${r.path}`);
    for (const p of ["POST /v1/files", "GET /v1/files/:id/content", "POST /v1/batches", "POST /v1/batches/:id/cancel", "POST /v1/videos", "DELETE /v1/videos/:id", "POST /v1/videos/:id/remix"]) expect(paths).toContain(p);
  });

  test("no key, a wrong key, the bootstrap token and an operator token: 401 in the envelope, never the route's answer", async () => {
    const wrong: string[] = [];
    const credentials: Record<string, Record<string, string>> = {
      none: {},
      "wrong key": { authorization: "Bearer rl-not-a-key-0123456789" },
      "bootstrap token": { authorization: `Bearer ${ADMIN_TOKEN}` },
      "operator token": { authorization: `Bearer ${viewerToken}` },
    };
    for (const { method, path } of clientRoutes()) {
      for (const [who, headers] of Object.entries(credentials)) {
        const res = await call(method, path, headers);
        const code = codeOf(path, res.body);
        const ok = res.status === 401 && (path.startsWith("/v1/messages") ? code === "authentication_error" : code === "invalid_api_key");
        if (!ok) wrong.push(`${who}: ${method} ${path} → ${res.status} ${res.text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 60_000);
});

describe("the admin API", () => {
  const adminRoutes = () => routes("/admin");
  const changes = () => adminRoutes().filter((r) => r.method !== "GET");

  test("covers the operator and audit-log routes", () => {
    const paths = adminRoutes().map((r) => `${r.method} ${r.path}`);
    for (const p of ["POST /admin/operators", "PATCH /admin/operators/:id", "POST /admin/operators/:id/revoke", "GET /admin/audit-log"]) expect(paths).toContain(p);
  });

  test("nothing: 401; a client key: 403; a viewer's token on a change: 403 insufficient_role naming the role", async () => {
    const wrong: string[] = [];
    for (const { method, path } of adminRoutes()) {
      const anon = await call(method, path, {});
      if (anon.status !== 401) wrong.push(`none: ${method} ${path} → ${anon.status}`);
      const client = await call(method, path, { authorization: `Bearer ${clientKey}` });
      if (client.status !== 403) wrong.push(`client key: ${method} ${path} → ${client.status}`);
      const viewer = await call(method, path, { authorization: `Bearer ${viewerToken}` });
      const refused = viewer.status === 403 && viewer.body?.error?.code === "insufficient_role";
      if (refused !== (method !== "GET")) wrong.push(`viewer token: ${method} ${path} → ${viewer.status} ${viewer.text.slice(0, 160)}`);
      if (refused && !/'(admin|billing|support)'/.test(viewer.body.error.message)) wrong.push(`viewer token: ${method} ${path} names no role: ${viewer.body.error.message}`);
    }
    expect(wrong).toEqual([]);
  }, 60_000);

  test("a viewer's console session (with its CSRF token) reaches no state-changing route; reads work", async () => {
    const { token, csrf } = await openSession(s.deps.database.db, { subject: "viewer-subject", name: "Session Viewer", role: "viewer" }, { maxHours: 1 });
    const headers = { cookie: `reelay_session=${token}`, "x-csrf-token": csrf };
    const wrong: string[] = [];
    for (const { method, path } of changes()) {
      const res = await call(method, path, headers);
      if (res.status !== 403 || res.body?.error?.code !== "insufficient_role") wrong.push(`${method} ${path} → ${res.status} ${res.text.slice(0, 160)}`);
      // without the CSRF token the change is refused before its role is even looked at
      const noCsrf = await call(method, path, { cookie: headers.cookie });
      if (noCsrf.status !== 403 || noCsrf.body?.error?.code !== "csrf_failed") wrong.push(`no csrf: ${method} ${path} → ${noCsrf.status}`);
    }
    expect(wrong).toEqual([]);
    expect((await call("GET", "/admin/me", headers)).body).toMatchObject({ type: "sso", id: "viewer-subject", role: "viewer" });
    expect((await call("GET", "/admin/audit-log", headers)).status).toBe(200);
    // nothing the viewer tried is in the audit log
    const log = (await (await s.admin("/admin/audit-log?limit=500")).json()) as { data: Array<{ actor: { type: string } }> };
    expect(log.data.filter((e) => e.actor.type === "sso")).toEqual([]);
  }, 60_000);

  test("an expired, idle or signed-out session gets 401 session_expired on every route", async () => {
    const db = s.deps.database.db;
    const open = (subject: string) => openSession(db, { subject, name: subject, role: "admin" }, { maxHours: 1 });
    const expired = await open("probe-expired");
    const idle = await open("probe-idle");
    const ended = await open("probe-ended");
    await query(db, sql`UPDATE operator_sessions SET expires_at = now() - interval '1 second' WHERE subject = 'probe-expired'`);
    await query(db, sql`UPDATE operator_sessions SET last_seen_at = now() - interval '31 minutes' WHERE subject = 'probe-idle'`);
    await query(db, sql`DELETE FROM operator_sessions WHERE subject = 'probe-ended'`);
    const wrong: string[] = [];
    for (const { method, path } of adminRoutes()) {
      for (const [who, session] of Object.entries({ expired, idle, ended })) {
        const res = await call(method, path, { cookie: `reelay_session=${session.token}`, "x-csrf-token": session.csrf });
        if (res.status !== 401 || res.body?.error?.code !== "session_expired") wrong.push(`${who}: ${method} ${path} → ${res.status} ${res.text.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
    // the cookie of an ended session signs nothing out and changes nothing
    expect((await call("POST", "/sso/logout", { cookie: `reelay_session=${ended.token}` })).status).toBe(200);
  }, 60_000);
});
