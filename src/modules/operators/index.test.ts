/**
 * Operators and roles against the real server on a fresh Postgres database: personal tokens (shown
 * once, hashed at rest, revocable), role changes taking effect at once, and the role table enforced
 * on every /admin route: the routes are read from the app itself, so a new route without a rule
 * fails here, and each is called with every role.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { ADMIN_TOKEN, startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { admits, ROLES, ROUTE_ROLES, type Role } from "../../operators/roles.ts";

let s: TestServer;
const tokens = {} as Record<Role, string>;
const ids = {} as Record<Role, string>;

beforeAll(async () => {
  s = await startTestServer();
  for (const role of ROLES) {
    const res = await s.admin("/admin/operators", { body: { name: `${role} person`, role } });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; token: string; role: string };
    expect(body.role).toBe(role);
    tokens[role] = body.token;
    ids[role] = body.id;
  }
}, 60_000);
afterAll(() => s?.close());

const call = (token: string | null, method: string, path: string, body?: unknown) =>
  fetch(s.url + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });

const adminRoutes = () =>
  s.app.routes
    .filter((r) => r.path.startsWith("/admin"))
    .map((r) => ({ method: r.method.toUpperCase(), path: r.path }))
    .filter((r, i, all) => all.findIndex((o) => o.method === r.method && o.path === r.path) === i);

describe("personal tokens", () => {
  test("the token is shown once and stored only as a hash", async () => {
    const list = (await (await s.admin("/admin/operators")).json()) as { data: Array<Record<string, unknown>> };
    expect(list.data.length).toBeGreaterThanOrEqual(4);
    for (const op of list.data) {
      expect(op).not.toHaveProperty("token");
      expect(op).not.toHaveProperty("hash");
      expect(String(op.token_prefix)).toStartWith("ro-");
    }
    const rows = await query<{ hash: string }>(s.deps.database.db, sql`SELECT hash FROM operators`);
    const stored = JSON.stringify(rows);
    for (const role of ROLES) expect(stored).not.toContain(tokens[role]);
  });

  test("GET /admin/me names the caller and its role", async () => {
    const me = (await (await call(tokens.billing, "GET", "/admin/me")).json()) as Record<string, unknown>;
    expect(me).toEqual({ type: "operator", id: ids.billing, name: "billing person", role: "billing" });
    const boot = (await (await call(ADMIN_TOKEN, "GET", "/admin/me")).json()) as Record<string, unknown>;
    expect(boot).toEqual({ type: "bootstrap", id: null, name: "bootstrap token", role: "admin" });
  });

  test("a role change applies on the next request; a revoked token is refused at once", async () => {
    const made = (await (await s.admin("/admin/operators", { body: { name: "temp", role: "viewer" } })).json()) as { id: string; token: string };
    let res = await call(made.token, "POST", "/admin/accounts", { name: "x" });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("insufficient_role");
    res = await s.admin(`/admin/operators/${made.id}`, { method: "PATCH", body: { role: "billing" } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).role).toBe("billing");
    res = await call(made.token, "POST", "/admin/accounts", { name: "made by billing" });
    expect(res.status).toBe(201);
    res = await s.admin(`/admin/operators/${made.id}/revoke`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).revoked_at).not.toBeNull();
    res = await call(made.token, "GET", "/admin/me");
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("invalid_api_key");
  });

  test("unknown operator: 404; bad role: 400; client keys: 403", async () => {
    expect((await s.admin("/admin/operators/op_nope", { method: "PATCH", body: { role: "viewer" } })).status).toBe(404);
    expect((await s.admin("/admin/operators", { body: { name: "x", role: "root" } })).status).toBe(400);
    const { key } = await s.newClient();
    expect((await call(key, "GET", "/admin/me")).status).toBe(403);
    expect((await call("ro-" + "x".repeat(40), "GET", "/admin/me")).status).toBe(401);
  });
});

describe("the role table covers every admin route", () => {
  test("every /admin route of the app has a rule, and every rule a route", () => {
    const routes = adminRoutes();
    expect(routes.length).toBeGreaterThan(40);
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(keys.filter((k) => !(k in ROUTE_ROLES))).toEqual([]);
    expect(Object.keys(ROUTE_ROLES).filter((k) => !keys.includes(k))).toEqual([]);
  });

  test("each route with each role: 403 insufficient_role naming the role exactly when the table says so", async () => {
    const wrong: string[] = [];
    for (const { method, path } of adminRoutes()) {
      const need = ROUTE_ROLES[`${method} ${path}`]!;
      const url = path.replace(/:[a-z_]+/gi, "zz_missing");
      for (const role of ROLES) {
        const res = await call(tokens[role], method, url, method === "GET" || method === "DELETE" ? undefined : {});
        const body = res.headers.get("content-type")?.includes("json") ? ((await res.json()) as any) : (await res.arrayBuffer(), null);
        const refused = res.status === 403 && body?.error?.code === "insufficient_role";
        if (refused !== !admits(need, role)) wrong.push(`${role} ${method} ${path}: ${res.status} ${JSON.stringify(body?.error ?? null)}`);
        if (refused && !body.error.message.includes(`'${need === "read" ? "viewer" : need}'`)) wrong.push(`${role} ${method} ${path}: message ${body.error.message}`);
        if (res.status >= 500) wrong.push(`${role} ${method} ${path}: ${res.status}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 60_000);

  test("a viewer reaches no state-changing route; no credential reaches none at all", async () => {
    for (const { method, path } of adminRoutes()) {
      const url = path.replace(/:[a-z_]+/gi, "zz_missing");
      if (method !== "GET") {
        const res = await call(tokens.viewer, method, url, {});
        expect(`${method} ${path} ${res.status}`).toBe(`${method} ${path} 403`);
      }
      const anon = await call(null, method, url, method === "GET" ? undefined : {});
      expect(`${method} ${path} ${anon.status}`).toBe(`${method} ${path} 401`);
    }
  }, 60_000);
});

describe("the CLI", () => {
  const cli = async (...args: string[]) => {
    const p = Bun.spawn(["bun", "src/main.ts", ...args], {
      cwd: import.meta.dir + "/../../..",
      env: { ...process.env, DATABASE_URL: s.deps.config.databaseUrl!, REELAY_LOG_LEVEL: "error" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { out, err, code };
  };

  test("operators create / list / role / revoke; the running server honours them; each is in the audit log as the CLI", async () => {
    const made = await cli("operators", "create", "--name", "Cli Person", "--role", "support");
    expect(made.code).toBe(0);
    const op = JSON.parse(made.out);
    expect(op).toMatchObject({ name: "Cli Person", role: "support" });
    expect(op.token).toStartWith("ro-");
    expect((await call(op.token, "GET", "/admin/me")).status).toBe(200);
    expect(JSON.parse((await cli("operators", "list")).out).map((o: any) => o.id)).toContain(op.id);
    expect(JSON.parse((await cli("operators", "role", op.id, "viewer")).out).role).toBe("viewer");
    expect(((await (await call(op.token, "GET", "/admin/me")).json()) as any).role).toBe("viewer");
    expect((await cli("operators", "role", op.id, "root")).code).toBe(2);
    expect(JSON.parse((await cli("operators", "revoke", op.id)).out).revoked_at).not.toBeNull();
    expect((await call(op.token, "GET", "/admin/me")).status).toBe(401);
    const log = (await (await s.admin(`/admin/audit-log?target=${op.id}`)).json()) as any;
    expect(log.data.map((e: any) => e.action)).toEqual(["operator.revoke", "operator.update", "operator.create"]);
    expect(log.data[0].actor.type).toBe("cli");
  }, 60_000);
});
