/**
 * Bench-only preload (`bun --preload bench/lib/stub-billing.ts src/main.ts serve`): replaces the
 * per-request money statements of src/billing/index.ts (hold, settle, release) with in-memory
 * answers, so a profile of the chat path shows what is left once billing costs nothing. Never
 * loaded by the product: only bench/chat-proxy.ts --stub-billing passes it to the reelay process.
 */
import { plugin } from "bun";

const STUBS = `
let benchStubSeq = 0;
export async function hold(_tx: unknown, input: { accountId: string; amount: number; ref: string }) {
  return { id: "hold_stub_" + ++benchStubSeq, accountId: input.accountId, amount: input.amount, ref: input.ref };
}
export async function settle(_tx: unknown, _holdId: string, actual: number) {
  return { applied: true, charged: actual, shortfall: 0, released: 0 };
}
export async function release() {
  return true;
}
`;

plugin({
  name: "bench-stub-billing",
  setup(build) {
    build.onLoad({ filter: /src\/billing\/index\.ts$/ }, async ({ path }) => {
      let src = await Bun.file(path).text();
      for (const name of ["hold", "settle", "release"]) {
        const real = `export async function ${name}(`;
        if (!src.includes(real)) throw new Error(`stub-billing: ${path} no longer exports ${name}(); update bench/lib/stub-billing.ts`);
        src = src.replace(real, `async function db_${name}(`);
      }
      return { contents: src + STUBS, loader: "ts" };
    });
  },
});
