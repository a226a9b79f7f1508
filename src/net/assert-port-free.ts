/**
 * Boot's first step: is the port free? Migrations and model loading take seconds (PGlite ~6 s on a
 * fresh data dir), so a taken port found only at listen time was a slow, late failure. A probe
 * bind answers in about a millisecond. (Another process may still take the port between the probe
 * and the real listen, a window of seconds; that rare case fails at listen as before.)
 */
import { ConfigError } from "../errors.ts";

export function assertPortFree(host: string, port: number): void {
  if (port === 0) return; // the OS picks a free one
  try {
    Bun.listen({ hostname: host, port, socket: { data() {} } }).stop(true);
  } catch (e) {
    throw portError(host, port, e);
  }
}

/** a listen failure in words: which port, and what to do */
function portError(host: string, port: number, e: unknown): Error {
  const code = (e as { code?: string })?.code;
  if (code === "EADDRINUSE") return new ConfigError("PORT", `port ${port} on ${host} is already in use (another reelay or another program listens there); stop it or set PORT to a free port`);
  if (code === "EACCES") return new ConfigError("PORT", `port ${port} on ${host} needs privileges this process does not have; use a port above 1023`);
  if (code === "EADDRNOTAVAIL") return new ConfigError("HOST", `${host} is not an address of this machine; set HOST to one of its addresses or 0.0.0.0`);
  return e instanceof Error ? e : new Error(String(e));
}
