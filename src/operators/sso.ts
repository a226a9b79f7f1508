/**
 * OpenID Connect sign-in for the console: the authorization code flow with PKCE (S256) against any
 * IdP that publishes discovery (`<issuer>/.well-known/openid-configuration`), and the console
 * sessions it opens. The ID token's signature, issuer, audience, expiry and nonce are checked with
 * `jose` against the IdP's published keys; claims from the userinfo endpoint are merged in (many IdPs
 * put groups only there). The role comes from one claim (a string or a list) through the configured
 * map; a user with no mapped role gets no session.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { and, eq, lt, sql } from "drizzle-orm";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import type { OidcConfig } from "../config.ts";
import type { Tx } from "../db/index.ts";
import { oidcLogins, operatorSessions } from "../db/schema/index.ts";
import { ApiError } from "../errors.ts";
import { ROLES, type Role } from "./roles.ts";

/** a sign-in must come back within this long */
const LOGIN_TTL_MS = 10 * 60_000;
export const SESSION_COOKIE = "reelay_session";

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  end_session_endpoint?: string;
}

const b64url = (b: Buffer) => b.toString("base64url");
const random = () => b64url(randomBytes(32));
const sha256hex = (s: string) => createHash("sha256").update(s).digest("hex");

const refused = (message: string, code: string) => new ApiError(400, "invalid_request_error", message, { code });

export interface SignedIn {
  subject: string;
  name: string;
  /** null: the user has no role mapped; no session is opened */
  role: Role | null;
  /** the values of the role claim, to say what was found */
  claimValues: string[];
}

/** The role for a user from the configured claim's values: the first value mapped, admin first. */
export function roleFrom(cfg: Pick<OidcConfig, "roleMap">, values: string[]): Role | null {
  const roles = values.map((v) => cfg.roleMap[v] ?? ((ROLES as string[]).includes(v) ? (v as Role) : null)).filter((r): r is Role => r !== null);
  return ROLES.find((r) => roles.includes(r)) ?? null;
}

export function oidcClient(cfg: OidcConfig, fetchImpl: typeof fetch = fetch) {
  let discovery: Promise<Discovery> | null = null;
  let keys: ReturnType<typeof createRemoteJWKSet> | null = null;
  const meta = () =>
    (discovery ??= (async () => {
      const res = await fetchImpl(`${cfg.issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`OIDC discovery at ${cfg.issuer} answered ${res.status}`);
      const d = (await res.json()) as Discovery;
      if (d.issuer.replace(/\/+$/, "") !== cfg.issuer) throw new Error(`OIDC discovery names issuer ${d.issuer}, not ${cfg.issuer}`);
      return d;
    })().catch((e) => {
      discovery = null; // try again at the next sign-in
      throw new ApiError(503, "service_unavailable", `The identity provider cannot be reached: ${(e as Error).message}`, { code: "sso_unavailable" });
    }));

  return {
    /** Begin a sign-in: the URL to send the browser to. */
    async start(db: Tx, redirectUri: string): Promise<string> {
      const m = await meta();
      const state = random();
      const nonce = random();
      const verifier = random();
      await db.delete(oidcLogins).where(lt(oidcLogins.createdAt, new Date(Date.now() - LOGIN_TTL_MS)));
      await db.insert(oidcLogins).values({ state, nonce, verifier });
      const url = new URL(m.authorization_endpoint);
      const q = {
        response_type: "code", client_id: cfg.clientId, redirect_uri: redirectUri, scope: cfg.scopes, state, nonce,
        code_challenge: b64url(createHash("sha256").update(verifier).digest()), code_challenge_method: "S256",
      };
      for (const [k, v] of Object.entries(q)) url.searchParams.set(k, v);
      return url.toString();
    },

    /** The callback: the state is consumed once (a forged or replayed one is refused), the code exchanged, the ID token checked. */
    async finish(db: Tx, params: { code?: string; state?: string; error?: string }, redirectUri: string): Promise<SignedIn> {
      if (!params.state) throw refused("The sign-in came back without a state.", "invalid_state");
      const [login] = await db.delete(oidcLogins).where(eq(oidcLogins.state, params.state)).returning();
      if (!login || Date.now() - login.createdAt.getTime() > LOGIN_TTL_MS) throw refused("This sign-in is unknown, expired or was already used: start again from the console.", "invalid_state");
      if (params.error) throw refused(`The identity provider refused the sign-in: ${params.error}.`, "sso_refused");
      if (!params.code) throw refused("The sign-in came back without a code.", "invalid_state");
      const m = await meta();
      const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
      const form = new URLSearchParams({ grant_type: "authorization_code", code: params.code, redirect_uri: redirectUri, code_verifier: login.verifier, client_id: cfg.clientId });
      if (cfg.clientSecret) headers.authorization = "Basic " + Buffer.from(`${encodeURIComponent(cfg.clientId)}:${encodeURIComponent(cfg.clientSecret)}`).toString("base64");
      const res = await fetchImpl(m.token_endpoint, { method: "POST", headers, body: form, signal: AbortSignal.timeout(10_000) });
      const tokens = (await res.json().catch(() => ({}))) as { id_token?: string; access_token?: string; error?: string };
      if (!res.ok || !tokens.id_token) throw refused(`The identity provider did not issue tokens (${tokens.error ?? res.status}).`, "sso_refused");
      keys ??= createRemoteJWKSet(new URL(m.jwks_uri));
      let claims: JWTPayload;
      try {
        ({ payload: claims } = await jwtVerify(tokens.id_token, keys, { issuer: m.issuer, audience: cfg.clientId }));
      } catch (e) {
        throw refused(`The ID token is not valid: ${(e as Error).message}`, "sso_refused");
      }
      if (typeof claims.nonce !== "string" || !safeEqual(claims.nonce, login.nonce)) throw refused("The ID token's nonce does not match this sign-in.", "invalid_nonce");
      let all: Record<string, unknown> = { ...claims };
      if (m.userinfo_endpoint && tokens.access_token) {
        const info = await fetchImpl(m.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` }, signal: AbortSignal.timeout(10_000) });
        const body = info.ok ? ((await info.json().catch(() => null)) as Record<string, unknown> | null) : null;
        if (body && body.sub === claims.sub) all = { ...body, ...claims, ...(body[cfg.roleClaim] !== undefined && claims[cfg.roleClaim] === undefined ? { [cfg.roleClaim]: body[cfg.roleClaim] } : {}) };
      }
      const raw = all[cfg.roleClaim];
      const values = (Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw]).map(String);
      const name = [all.name, all.preferred_username, all.email, claims.sub].find((v) => typeof v === "string" && v) as string;
      return { subject: String(claims.sub), name, role: roleFrom(cfg, values), claimValues: values };
    },
  };
}

const safeEqual = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** Open a session; the cookie's token (only its hash is stored) and the CSRF token. */
export async function openSession(db: Tx, who: { subject: string; name: string; role: Role }, cfg: Pick<OidcConfig, "maxHours">) {
  const token = random();
  const csrf = random();
  await db.insert(operatorSessions).values({ hash: sha256hex(token), subject: who.subject, name: who.name, role: who.role, csrf, expiresAt: new Date(Date.now() + cfg.maxHours * 3_600_000) });
  return { token, csrf };
}

export type SessionRow = typeof operatorSessions.$inferSelect;

/** The live session of a cookie token, its last_seen_at moved to now; null if none, ended, idle too long or past its absolute lifetime. */
export async function touchSession(db: Tx, token: string, cfg: Pick<OidcConfig, "idleMinutes">): Promise<SessionRow | null> {
  if (token.length > 100) return null;
  const [row] = await db
    .update(operatorSessions)
    .set({ lastSeenAt: new Date() })
    .where(and(eq(operatorSessions.hash, sha256hex(token)), sql`${operatorSessions.expiresAt} > now()`, sql`${operatorSessions.lastSeenAt} > now() - make_interval(mins => ${cfg.idleMinutes})`))
    .returning();
  return row ?? null;
}

export async function endSession(db: Tx, token: string): Promise<SessionRow | null> {
  const [row] = await db.delete(operatorSessions).where(eq(operatorSessions.hash, sha256hex(token))).returning();
  return row ?? null;
}

export const csrfMatches = (row: SessionRow, sent: string | null) => sent !== null && safeEqual(sent, row.csrf);

/** the session cookie's token from a Cookie header */
export function sessionToken(cookieHeader: string | null): string | null {
  for (const part of (cookieHeader ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === SESSION_COOKIE) return v.join("=") || null;
  }
  return null;
}

/** HttpOnly, SameSite=Lax, Secure when the browser reached reelay over TLS (directly or through a proxy saying so) */
export function sessionCookie(token: string, maxAgeSeconds: number, tls: boolean) {
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${tls ? "; Secure" : ""}`;
}
