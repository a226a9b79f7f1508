import type { HostServices } from "../plugin-sdk/index.ts";
import { decodeImage } from "./decode-image.ts";
import { encodeMp4 } from "./encode-mp4.ts";

/** The media half of the SDK's HostServices; `countTokens` comes from the text side. */
export function mediaHostServices(): Pick<HostServices, "decodeImage" | "encodeMp4"> {
  return {
    decodeImage: (bytes) => decodeImage(bytes),
    encodeMp4: (frames, opts) => encodeMp4(frames, opts),
  };
}
