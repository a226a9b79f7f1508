/** Console sign-in through an OpenID Connect provider: REELAY_OIDC_*, REELAY_SESSION_*. */
import { ConfigError } from "../errors.ts";
import { int, str, type Env } from "./env.ts";

export interface OidcConfig {
  /** the IdP's issuer URL; its /.well-known/openid-configuration is read at the first sign-in */
  issuer: string;
  clientId: string;
  clientSecret: string | null;
  /** where the IdP sends the browser back (null: this server's origin + /console/sso/callback) */
  redirectUrl: string | null;
  scopes: string;
  /** the ID-token claim holding the role or groups (a string or an array of strings) */
  roleClaim: string;
  /** claim value → role; a value that is itself a role name maps to that role */
  roleMap: Record<string, "admin" | "billing" | "support" | "viewer">;
  idleMinutes: number;
  maxHours: number;
}

export function oidcConfig(env: Env): OidcConfig | null {
  const issuer = str(env, "REELAY_OIDC_ISSUER");
  if (!issuer) return null;
  const clientId = str(env, "REELAY_OIDC_CLIENT_ID");
  if (!clientId) throw new ConfigError("REELAY_OIDC_CLIENT_ID", "is required with REELAY_OIDC_ISSUER");
  const roleMap: OidcConfig["roleMap"] = {};
  for (const pair of (str(env, "REELAY_OIDC_ROLE_MAP") ?? "").split(",").map((p) => p.trim()).filter(Boolean)) {
    const at = pair.lastIndexOf("=");
    const role = pair.slice(at + 1).trim();
    if (at <= 0 || !["admin", "billing", "support", "viewer"].includes(role)) throw new ConfigError("REELAY_OIDC_ROLE_MAP", `"${pair}": expected VALUE=admin|billing|support|viewer, comma-separated`);
    roleMap[pair.slice(0, at).trim()] = role as OidcConfig["roleMap"][string];
  }
  return {
    issuer: issuer.replace(/\/+$/, ""),
    clientId,
    clientSecret: str(env, "REELAY_OIDC_CLIENT_SECRET"),
    redirectUrl: str(env, "REELAY_OIDC_REDIRECT_URL"),
    scopes: str(env, "REELAY_OIDC_SCOPES") ?? "openid profile email",
    roleClaim: str(env, "REELAY_OIDC_ROLE_CLAIM") ?? "groups",
    roleMap,
    idleMinutes: int(env, "REELAY_SESSION_IDLE_MINUTES", 30, 1, 7 * 24 * 60),
    maxHours: int(env, "REELAY_SESSION_MAX_HOURS", 12, 1, 24 * 30),
  };
}
