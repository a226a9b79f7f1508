/**
 * Who is calling an /admin route, and whether their role allows it. Three identities reach the
 * admin API: `REELAY_ADMIN_TOKEN` (the bootstrap identity, always `admin`), an operator's personal
 * token (`ro-…`, src/operators/operators.ts), and (from the console) an SSO session. A client API
 * key gets 403 (the wrong kind of credential, not a bad one). The role a route needs comes from one
 * table (src/operators/roles.ts); a role that does not reach it gets 403 `insufficient_role`.
 */
import { forbidden, unauthorized } from "../errors.ts";
import { KEY_PREFIX } from "../accounts/api-keys.ts";
import type { Tx } from "../db/index.ts";
import { OPERATOR_TOKEN_PREFIX, operatorByToken } from "../operators/operators.ts";
import { admits, insufficientRole, needOf, type Role } from "../operators/roles.ts";
import { parseBearer, safeEqual } from "./authenticate-key.ts";

export interface Actor {
  /** bootstrap: REELAY_ADMIN_TOKEN; operator: a personal token; sso: a console session; cli: a `reelay` command run on the host */
  type: "bootstrap" | "operator" | "sso" | "cli";
  /** operator id or IdP subject; null for the bootstrap token */
  id: string | null;
  name: string;
  role: Role;
}

export const BOOTSTRAP_ACTOR: Actor = { type: "bootstrap", id: null, name: "bootstrap token", role: "admin" };

/** Resolve an Authorization header to an operator identity, or throw 401/403. */
export async function authenticateOperator(db: Tx, adminToken: string | null, authorization: string | undefined | null): Promise<Actor> {
  const token = parseBearer(authorization);
  if (!token) {
    if (!adminToken) throw unauthorized("The admin API needs a credential: set REELAY_ADMIN_TOKEN (the bootstrap token) or send an operator token ('Authorization: Bearer ro-…').");
    throw unauthorized("Missing admin token: send 'Authorization: Bearer <REELAY_ADMIN_TOKEN>' or an operator token.");
  }
  if (adminToken && safeEqual(token, adminToken)) return BOOTSTRAP_ACTOR;
  if (token.startsWith(OPERATOR_TOKEN_PREFIX)) {
    const row = await operatorByToken(db, token);
    if (!row) throw unauthorized("Invalid or revoked operator token.");
    return { type: "operator", id: row.id, name: row.name, role: row.role as Role };
  }
  if (token.startsWith(KEY_PREFIX)) throw forbidden("Client API keys cannot use the admin API.");
  if (!adminToken) throw unauthorized("The admin API is disabled: set REELAY_ADMIN_TOKEN to enable it (or use an operator token).");
  throw unauthorized("Invalid admin token.");
}

/** Throw 403 `insufficient_role` unless the actor's role reaches what the route needs. */
export function checkRole(actor: Actor, method: string, route: string) {
  const need = needOf(method, route);
  if (!admits(need, actor.role)) throw insufficientRole(need, actor.role);
}
