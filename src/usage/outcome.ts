/**
 * What a usage row says about the model that served it, one definition for every health view
 * (the console's Models page and overview, failing upstreams, the usage time series):
 *
 * - a failure of the model or its upstream: a 5xx (unreachable, timed out, malformed, overloaded,
 *   a plugin bug), an upstream 429, or an answer that began and then broke (status 200 with an
 *   error code, e.g. upstream_interrupted);
 * - the client's own error: any other 4xx (a parameter the model cannot take, a role typo, a
 *   prompt over the context, a client that went away: 499). It says nothing about the upstream,
 *   so it never counts against its health; the views show it apart.
 *
 * Unqualified column names: use them in a query over usage_records alone (or a CTE of its columns).
 */
import { sql } from "drizzle-orm";

export const UPSTREAM_FAILED = sql`(status >= 500 OR status = 429 OR (status < 400 AND error_code IS NOT NULL))`;
export const CLIENT_ERROR = sql`(status >= 400 AND status < 500 AND status <> 429)`;
