/** The host half of the plugin SDK: services every plugin (built-in or external) gets in its context. */
import { mediaHostServices } from "../media/host-services.ts";
import { safeFetchBytes as guardedFetch } from "../net/safe-fetch.ts";
import type { HostServices, SafeFetchOptions } from "../plugin-sdk/index.ts";
import { countTextTokens } from "../text/tokens.ts";

export function hostServices(): HostServices {
  return { ...mediaHostServices(), countTokens: countTextTokens };
}

export async function safeFetchBytes(url: string, opts: SafeFetchOptions) {
  const r = await guardedFetch(url, opts);
  return { bytes: r.bytes, contentType: r.contentType };
}
