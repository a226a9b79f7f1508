/**
 * Test-only plugin whose `close` never returns (a plugin bug): a server's shutdown must end all the
 * same. It serves one video model that is never called.
 */
import { PLUGIN_API_VERSION, type ReelayPlugin } from "../../src/plugin-sdk/index.ts";

export default {
  name: "stuck-close",
  apiVersion: PLUGIN_API_VERSION,
  models: [{ id: "stuck-close", pricing: { perSecond: 1 } }],
  create() {
    return {
      video: {
        submit: async () => ({ handle: "never" }),
        poll: async () => ({ state: "running" as const, progress: 0 }),
      },
      close: () => new Promise<void>(() => {}),
    };
  },
} satisfies ReelayPlugin;
