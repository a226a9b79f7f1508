/**
 * The host half of the plugin SDK: the services every plugin (built-in or external) gets in its
 * context. Image decoding and token counting run where they are called; MP4 encoding runs on the
 * encoder pool's worker threads. `close` ends those workers (shutdown).
 */
import { decodeImage, ImageDecodeError } from "../media/index.ts";
import { safeFetchBytes as guardedFetch } from "../net/safe-fetch.ts";
import { PluginError, type HostServices, type SafeFetchOptions } from "../plugin-sdk/index.ts";
import { countTextTokens } from "../text/tokens.ts";
import { Mp4EncoderPool } from "./mp4-encoder-pool.ts";

export function hostServices(): HostServices & { close(): void } {
  const encoder = new Mp4EncoderPool();
  return {
    async decodeImage(bytes) {
      try {
        return await decodeImage(bytes);
      } catch (err) {
        if (err instanceof ImageDecodeError) throw new PluginError("invalid_request", `the image could not be decoded: ${err.message}`, { code: "invalid_image", param: "image", cause: err });
        throw err;
      }
    },
    encodeMp4: (frames, opts) => encoder.encode(frames, opts),
    countTokens: countTextTokens,
    close: () => encoder.close(),
  };
}

export async function safeFetchBytes(url: string, opts: SafeFetchOptions) {
  const r = await guardedFetch(url, opts);
  return { bytes: r.bytes, contentType: r.contentType };
}
