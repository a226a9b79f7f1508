/**
 * The operator's credential: every /admin route (admin API, console API, webhook and usage views)
 * requires `Authorization: Bearer <REELAY_ADMIN_TOKEN>`; a client API key gets 403 (the wrong kind
 * of credential, not a bad one). No admin token configured: every call 401.
 */
import { forbidden, unauthorized } from "../errors.ts";
import { KEY_PREFIX } from "../accounts/api-keys.ts";
import { parseBearer, safeEqual } from "./authenticate-key.ts";

export function checkAdmin(adminToken: string | null, authorization: string | undefined | null) {
  if (!adminToken) throw unauthorized("The admin API is disabled: set REELAY_ADMIN_TOKEN to enable it.");
  const token = parseBearer(authorization);
  if (!token) throw unauthorized("Missing admin token: send 'Authorization: Bearer <REELAY_ADMIN_TOKEN>'.");
  if (safeEqual(token, adminToken)) return;
  if (token.startsWith(KEY_PREFIX)) throw forbidden("Client API keys cannot use the admin API.");
  throw unauthorized("Invalid admin token.");
}
