/**
 * SSRF-guarded POST for webhook deliveries, and the same check alone for registering a URL.
 *
 * The checks are safe-fetch's (parse, resolve once, refuse if any address is outside the policy,
 * connect to the checked address with the original name in Host/SNI), run again at every attempt:
 * a receiver's DNS that later points at 10.0.0.5 is refused then, not only at registration.
 * Redirects are not followed: a 3xx is the receiver's answer, recorded as a failed attempt
 * (Standard Webhooks receivers answer 2xx), so a redirect cannot bounce a signed body inward.
 *
 * The operator can allow networks besides public unicast (REELAY_WEBHOOK_ALLOW_NETWORKS, e.g.
 * 127.0.0.0/8 for a receiver on the same host); names like `localhost` are then judged by the
 * addresses they resolve to, so metadata.google.internal stays refused unless 169.254.0.0/16 is allowed.
 */
import ipaddr from "ipaddr.js";
import { isIP } from "node:net";
import { isPublicAddress } from "./address-policy.ts";
import { parseTarget, pickAddress, SafeFetchError, type Resolver, type SafeFetchInternalOptions } from "./safe-fetch.ts";

export interface TargetPolicy {
  /** CIDRs allowed besides public unicast addresses */
  allowedNetworks: readonly string[];
  /** DNS override (tests) */
  resolver?: Resolver;
}

/** How much of a receiver's answer we read (and drop) so the connection can be reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_URL_CHARS = 2048;

function pickOptions(policy: TargetPolicy, timeoutMs: number): SafeFetchInternalOptions {
  const networks = policy.allowedNetworks.map((c) => ipaddr.parseCIDR(c));
  const allowed = (address: string) => {
    if (isPublicAddress(address)) return true;
    const literal = address.replace(/^\[|\]$/g, "");
    if (!ipaddr.isValid(literal)) return false;
    let ip = ipaddr.parse(literal);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    return networks.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
  };
  return { maxBytes: MAX_RESPONSE_BYTES, timeoutMs, addressPolicy: allowed, judgeNamesByAddress: networks.length > 0, resolver: policy.resolver };
}

/** Throws SafeFetchError (invalid_url | blocked_address | network) unless `raw` is a URL deliveries may go to now. */
export async function checkTargetUrl(raw: string, policy: TargetPolicy, timeoutMs = 5_000): Promise<URL> {
  if (raw.length > MAX_URL_CHARS) throw new SafeFetchError("invalid_url", `longer than ${MAX_URL_CHARS} characters`);
  const url = parseTarget(raw);
  if (url.hash) throw new SafeFetchError("invalid_url", "a fragment (#…) is never sent to the server; remove it");
  const signal = AbortSignal.timeout(timeoutMs);
  await pickAddress(url, pickOptions(policy, timeoutMs), signal);
  return url;
}

export interface PostResult {
  status: number;
}

/**
 * POST `body` to `raw` through the guard. Resolves with the receiver's status (any status);
 * rejects with SafeFetchError for refused targets, timeouts and network failures.
 */
export async function safePost(raw: string, init: { body: string; headers: Record<string, string>; timeoutMs: number; policy: TargetPolicy; signal?: AbortSignal }): Promise<PostResult> {
  const deadline = AbortSignal.timeout(init.timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
  try {
    const url = parseTarget(raw);
    const address = await pickAddress(url, pickOptions(init.policy, init.timeoutMs), signal);
    const pinned = new URL(url.href);
    pinned.hostname = address;
    const req: BunFetchRequestInit = { method: "POST", redirect: "manual", signal, body: init.body, headers: { ...init.headers, host: url.host } };
    if (url.protocol === "https:" && !isIP(url.hostname.replace(/^\[|\]$/g, ""))) req.tls = { serverName: url.hostname };
    const res = await fetch(pinned, req);
    await drain(res);
    return { status: res.status };
  } catch (err) {
    if (init.signal?.aborted) throw init.signal.reason;
    if (deadline.aborted) throw new SafeFetchError("timeout", `no answer within ${init.timeoutMs} ms`, { cause: err });
    if (err instanceof SafeFetchError) throw err;
    throw new SafeFetchError("network", (err as Error)?.message ?? String(err), { cause: err });
  }
}

/** Read (and drop) up to MAX_RESPONSE_BYTES, so keep-alive connections are reused; then give up on the rest. */
async function drain(res: Response) {
  const reader = res.body?.getReader();
  if (!reader) return;
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > MAX_RESPONSE_BYTES) return void (await reader.cancel());
    }
  } catch {
    // the status is what counts; a body cut short does not change it
  }
}
