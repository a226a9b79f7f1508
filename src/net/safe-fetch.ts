/**
 * SSRF-guarded download for URLs that come from clients (`image_url`) or providers (result URLs).
 *
 * Every hop: parse with WHATWG URL (which already folds `2130706433`, `0x7f.1`, `0177.0.0.1` into
 * dotted-quad), resolve the name once, refuse if ANY address is non-public, then connect to the
 * checked address itself, so a second DNS answer (rebinding) is never consulted. The original name
 * travels in the `Host` header and, for https, in `tls.serverName`: Bun sends it as SNI and verifies
 * the certificate against it (checked on Bun 1.4.5: a certificate for another name fails with
 * ERR_TLS_CERT_ALTNAME_INVALID), so pinning the IP does not weaken certificate validation.
 *
 * Residual risk: when HTTP(S)_PROXY is set, Bun sends the request through that proxy; the proxy is
 * asked for the checked IP, but what it does with it is the operator's business.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { readBodyCapped, SafeFetchError, type SafeFetchOptions } from "../plugin-sdk/index.ts";
import { isBlockedHostname, isPublicAddress } from "./address-policy.ts";

// the error class is the SDK's: plugins that call ctx.safeFetchBytes recognise it by its brand
export { SafeFetchError, type SafeFetchErrorCode } from "../plugin-sdk/index.ts";

export type Resolver = (hostname: string) => Promise<string[]>;

export interface SafeFetchInternalOptions extends SafeFetchOptions {
  /** DNS for a hostname (not used for IP literals); defaults to getaddrinfo via node:dns */
  resolver?: Resolver;
  /**
   * Decides whether `address` (resolved from `hostname`) may be contacted. Defaults to
   * `isPublicAddress`. Tests use it to treat one fake public name as allowed while every other
   * target keeps the real policy.
   */
  addressPolicy?: (address: string, hostname: string) => boolean;
  /**
   * Judge names like `localhost` or `*.internal` by the addresses they resolve to instead of
   * refusing them outright; only for callers whose addressPolicy allows some private networks.
   */
  judgeNamesByAddress?: boolean;
}

export interface SafeFetchResult {
  bytes: Uint8Array;
  contentType: string | null;
}

const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const defaultResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

export async function safeFetchBytes(url: string, opts: SafeFetchInternalOptions): Promise<SafeFetchResult> {
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  try {
    return await fetchFollowingRedirects(url, opts, signal);
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason; // the caller's own cancel, not our failure
    if (deadline.aborted) throw new SafeFetchError("timeout", `download did not finish within ${opts.timeoutMs} ms`, { cause: err });
    if (err instanceof SafeFetchError) throw err;
    throw new SafeFetchError("network", `download failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

async function fetchFollowingRedirects(url: string, opts: SafeFetchInternalOptions, signal: AbortSignal): Promise<SafeFetchResult> {
  let target = parseTarget(url);
  // the Host header is ours: it must name the host that was checked
  let headers = Object.fromEntries(Object.entries(opts.headers ?? {}).filter(([name]) => name.toLowerCase() !== "host"));
  for (let hop = 0; ; hop++) {
    const address = await pickAddress(target, opts, signal);
    const res = await fetchPinned(target, address, headers, signal);
    if (REDIRECT_STATUSES.has(res.status)) {
      await res.body?.cancel();
      const location = res.headers.get("location");
      if (!location) throw new SafeFetchError("http_status", `redirect ${res.status} without a Location header`, { status: res.status });
      if (hop >= MAX_REDIRECTS) throw new SafeFetchError("http_status", `more than ${MAX_REDIRECTS} redirects`, { status: res.status });
      const next = parseTarget(resolveLocation(location, target));
      // caller headers (e.g. a provider's Authorization) must not follow a redirect to another origin
      if (next.origin !== target.origin) headers = {};
      target = next;
      continue;
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      throw new SafeFetchError("http_status", `${target.host} answered HTTP ${res.status}`, { status: res.status });
    }
    return { bytes: await readLimited(res, opts.maxBytes, target.host), contentType: res.headers.get("content-type") };
  }
}

function resolveLocation(location: string, base: URL): string {
  try {
    return new URL(location, base).href;
  } catch {
    throw new SafeFetchError("invalid_url", "redirect to an invalid URL");
  }
}

export function parseTarget(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SafeFetchError("invalid_url", "not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new SafeFetchError("invalid_url", `scheme ${url.protocol} is not allowed (http and https only)`);
  if (url.username || url.password) throw new SafeFetchError("invalid_url", "credentials in the URL are not allowed");
  return url;
}

/** Resolves and checks the host; returns the address to connect to (bracketed for IPv6). */
export async function pickAddress(url: URL, opts: SafeFetchInternalOptions, signal: AbortSignal): Promise<string> {
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const policy = opts.allowPrivateNetwork ? () => true : (opts.addressPolicy ?? isPublicAddress);
  let addresses: string[];
  if (isIP(hostname)) {
    addresses = [hostname];
  } else {
    if (!opts.allowPrivateNetwork && !opts.judgeNamesByAddress && isBlockedHostname(hostname)) {
      throw new SafeFetchError("blocked_address", `host ${hostname} is not allowed`);
    }
    addresses = await raceAbort((opts.resolver ?? defaultResolver)(hostname), signal).catch((err) => {
      if (signal.aborted) throw err;
      throw new SafeFetchError("network", `cannot resolve ${hostname}`, { cause: err });
    });
    if (addresses.length === 0) throw new SafeFetchError("network", `cannot resolve ${hostname}`);
  }
  // ANY bad address refuses the host: with round-robin DNS the client picks, not us
  const refused = addresses.find((a) => !policy(a, hostname));
  if (refused !== undefined) throw new SafeFetchError("blocked_address", `host ${hostname} resolves to a non-public address (${refused})`);
  const first = addresses[0]!;
  return isIP(first) === 6 ? `[${first}]` : first;
}

async function fetchPinned(url: URL, address: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
  const pinned = new URL(url.href);
  pinned.hostname = address;
  const init: BunFetchRequestInit = {
    method: "GET",
    redirect: "manual",
    signal,
    headers: { ...headers, host: url.host },
  };
  // Bun verifies the certificate against serverName and keys its connection pool by it (a pooled
  // connection verified for one name is not reused for another name on the same IP)
  if (url.protocol === "https:" && !isIP(url.hostname.replace(/^\[|\]$/g, ""))) init.tls = { serverName: url.hostname };
  return fetch(pinned, init);
}

async function readLimited(res: Response, maxBytes: number, host: string): Promise<Uint8Array> {
  const declared = Number(res.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new SafeFetchError("too_large", `${host} sent ${declared} bytes, the limit is ${maxBytes}`);
  }
  return readBodyCapped(res, maxBytes, () => new SafeFetchError("too_large", `${host} sent more than ${maxBytes} bytes`));
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
