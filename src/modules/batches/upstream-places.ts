/**
 * An instance's places in the upstreams' concurrency for batch lines (REELAY_BATCH_CONCURRENCY ×
 * REELAY_BATCH_SHARE %): a line holds one only while its upstream call runs — from its committed
 * hold to the end of its pipeline — not while it waits for its hold's or its result's group commit.
 * Holding the place across both commits made a line cost two group commits plus its upstream call
 * against a live request's upstream call alone: on the chat bench (16 places, fast fake upstream)
 * a line held its place ~12 ms, ~10 of them waiting for its hold, and the batch ran at a quarter of
 * the live route's rate at the same upstream concurrency.
 */
import type { UpstreamGate } from "./line-ledger.ts";

export interface LineGate extends UpstreamGate {
  /** give the place back (no-op when the line never took one, or gave it back already) */
  leave(): void;
}

export class UpstreamPlaces {
  private used = 0;
  private waiters: Array<() => void> = [];

  constructor(readonly size: number) {}

  /** lines in their upstream call now */
  get inUse(): number {
    return this.used;
  }

  /** A line's gate: `enter` waits for a place (or for `signal`), `leave` gives it back. */
  gate(signal: AbortSignal): LineGate {
    let held = false;
    return {
      enter: async () => {
        while (!held && this.used >= this.size && !signal.aborted) await this.wait(signal);
        if (held || signal.aborted) return;
        held = true;
        this.used++;
      },
      leave: () => {
        if (!held) return;
        held = false;
        this.used--;
        const w = this.waiters.shift();
        w?.();
      },
    };
  }

  private wait(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
