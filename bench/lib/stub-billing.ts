/**
 * Bench-only preload (`bun --preload bench/lib/stub-billing.ts src/main.ts serve`): replaces the
 * credit engine's approvals and settlements (src/billing/engine.ts) with in-memory answers that
 * touch no database, so a profile of the chat path shows what is left once billing costs nothing.
 * Never loaded by the product: only bench/chat-proxy.ts --stub-billing passes it to the reelay process.
 */
import { plugin } from "bun";

const STUBS = `
CreditEngine.prototype.approve = async function (req: { accountId: string; amount: number }) {
  return { kind: "hold", slot: null, holdId: "hold_stub", amount: req.amount } as never;
};
CreditEngine.prototype.settle = function () {};
`;

plugin({
  name: "bench-stub-billing",
  setup(build) {
    build.onLoad({ filter: /src\/billing\/engine\.ts$/ }, async ({ path }) => {
      const src = await Bun.file(path).text();
      if (!src.includes("export class CreditEngine")) throw new Error(`stub-billing: ${path} no longer exports class CreditEngine; update bench/lib/stub-billing.ts`);
      return { contents: src + STUBS, loader: "ts" };
    });
  },
});
