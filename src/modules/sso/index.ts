/**
 * Single sign-on for the console (OpenID Connect, src/operators/sso.ts): /sso/login sends the
 * browser to the IdP, /sso/callback opens a console session (cookie) for a user whose role claim
 * maps to a role, /sso/logout ends it. The session then works on every /admin route the role
 * reaches, like a personal token (src/http/require-operator.ts).
 */
import { Elysia, t } from "elysia";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { writeAudit, logAudit, type AuditRow } from "../../audit/audit-log.ts";
import { csrfMatches, endSession, oidcClient, openSession, sessionCookie, sessionToken, touchSession } from "../../operators/sso.ts";

const notConfigured = () => new ApiError(404, "not_found_error", "Single sign-on is not configured: set REELAY_OIDC_ISSUER and REELAY_OIDC_CLIENT_ID (docs/operating.md).", { code: "sso_not_configured" });
const tlsOf = (request: Request) => new URL(request.url).protocol === "https:" || request.headers.get("x-forwarded-proto") === "https";

export const ssoRoutes = (deps: AppDeps) => {
  const cfg = deps.config.oidc;
  const client = cfg ? oidcClient(cfg) : null;
  const db = deps.database.db;
  const redirectUri = (request: Request) => cfg?.redirectUrl ?? `${new URL(request.url).origin}/sso/callback`;
  const requestIdOf = (set: { headers: Record<string, unknown> }) => (typeof set.headers["x-request-id"] === "string" ? (set.headers["x-request-id"] as string) : null);
  return new Elysia({ prefix: "/sso", tags: ["operators"] })
    .get("/config", async ({ request }) => {
      const token = cfg ? sessionToken(request.headers.get("cookie")) : null;
      const session = token && cfg ? await touchSession(db, token, cfg) : null;
      return { enabled: cfg !== null, login_url: cfg ? "/sso/login" : null, session: session && { name: session.name, role: session.role, csrf_token: session.csrf } };
    }, {
      detail: {
        summary: "Console SSO state",
        description: "What the console asks at load: whether OpenID Connect sign-in is configured, where it starts, and the session the browser's cookie holds (null: none, expired or signed out) with the CSRF token its changes must send as `x-csrf-token`.",
      },
      response: { 200: t.Object({ enabled: t.Boolean(), login_url: t.Nullable(t.String()), session: t.Nullable(t.Object({ name: t.String(), role: t.String(), csrf_token: t.String() })) }) },
    })
    .get("/login", async ({ request }) => {
      if (!client) throw notConfigured();
      return Response.redirect(await client.start(db, redirectUri(request)), 302);
    }, {
      detail: { summary: "Start a console sign-in", description: "Redirects to the identity provider (authorization code flow with PKCE S256, a one-time state and a nonce)." },
      response: { 302: t.Any({ description: "to the identity provider" }), 404: ErrorEnvelope, 503: ErrorEnvelope },
    })
    .get("/callback", async ({ request, query, set, server }) => {
      if (!client || !cfg) throw notConfigured();
      const who = await client.finish(db, query, redirectUri(request));
      if (!who.role) {
        const found = who.claimValues.length ? `its '${cfg.roleClaim}' claim holds ${who.claimValues.map((v) => `'${v}'`).join(", ")}` : `it has no '${cfg.roleClaim}' claim`;
        throw new ApiError(403, "permission_error", `${who.name} signed in at the identity provider, but no reelay role is mapped for this user (${found}; REELAY_OIDC_ROLE_MAP).`, { code: "sso_no_role" });
      }
      const role = who.role;
      const rows: AuditRow[] = [];
      const { token } = await db.transaction(async (tx) => {
        const opened = await openSession(tx, { subject: who.subject, name: who.name, role }, cfg);
        rows.push(await writeAudit(tx, { actor: { type: "sso", id: who.subject, name: who.name, role }, requestId: requestIdOf(set), clientIp: server?.requestIP(request)?.address ?? null }, {
          action: "sso.sign_in", target: { type: "operator_session", id: who.subject }, after: { name: who.name, role, claim: who.claimValues },
        }));
        return opened;
      });
      logAudit(deps.logger, rows);
      return new Response(null, { status: 302, headers: { location: "/console", "set-cookie": sessionCookie(token, cfg.maxHours * 3600, tlsOf(request)), "cache-control": "no-store" } });
    }, {
      query: t.Object({ code: t.Optional(t.String({ maxLength: 4096 })), state: t.Optional(t.String({ maxLength: 200 })), error: t.Optional(t.String({ maxLength: 200 })), error_description: t.Optional(t.String({ maxLength: 2000 })), iss: t.Optional(t.String({ maxLength: 2000 })), session_state: t.Optional(t.String({ maxLength: 2000 })) }),
      detail: {
        summary: "SSO callback",
        description: "Consumes the sign-in's state (once: a forged, replayed or expired state is 400 `invalid_state`), exchanges the code with the PKCE verifier, checks the ID token (signature, issuer, audience, nonce: `invalid_nonce`), maps the role claim to a role (none: 403 `sso_no_role`), opens a session: cookie `reelay_session` (HttpOnly, SameSite=Lax, Secure behind TLS) and a redirect to /console.",
      },
      response: { 302: t.Any({ description: "to /console, with the session cookie" }), 400: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 503: ErrorEnvelope },
    })
    .post("/logout", async ({ request, set, server }) => {
      if (!cfg) throw notConfigured();
      const token = sessionToken(request.headers.get("cookie"));
      const session = token ? await touchSession(db, token, cfg) : null;
      if (session) {
        if (!csrfMatches(session, request.headers.get("x-csrf-token"))) throw new ApiError(403, "permission_error", "Missing or wrong x-csrf-token: a console session's state-changing calls echo its CSRF token (from GET /admin/me).", { code: "csrf_failed" });
        const rows: AuditRow[] = [];
        await db.transaction(async (tx) => {
          await endSession(tx, token!);
          rows.push(await writeAudit(tx, { actor: { type: "sso", id: session.subject, name: session.name, role: session.role as never }, requestId: requestIdOf(set), clientIp: server?.requestIP(request)?.address ?? null }, {
            action: "sso.sign_out", target: { type: "operator_session", id: session.subject }, before: { name: session.name, role: session.role },
          }));
        });
        logAudit(deps.logger, rows);
      }
      return new Response(JSON.stringify({ signed_out: true }), { headers: { "content-type": "application/json", "set-cookie": sessionCookie("", 0, tlsOf(request)) } });
    }, {
      detail: { summary: "Sign out of the console", description: "Ends the session (needs its `x-csrf-token`) and clears the cookie." },
      response: { 200: t.Object({ signed_out: t.Literal(true) }), 403: ErrorEnvelope, 404: ErrorEnvelope },
    });
};
