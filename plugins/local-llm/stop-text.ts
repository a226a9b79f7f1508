/**
 * Stop sequences on streamed text: text that could be the start of a stop sequence is held back
 * until the next pieces show whether it is one, so a stop sequence is never sent, not even in part.
 */
export class StopText {
  private held = "";

  constructor(private readonly stops: readonly string[]) {}

  /** Add generated text; returns what may be sent now, and whether a stop sequence was reached. */
  push(text: string): { emit: string; stopped: boolean } {
    if (this.stops.length === 0) return { emit: text, stopped: false };
    const buf = this.held + text;
    let cut = -1;
    for (const s of this.stops) {
      const i = buf.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.held = "";
      return { emit: buf.slice(0, cut), stopped: true };
    }
    const keep = this.longestPartialStop(buf);
    this.held = buf.slice(buf.length - keep);
    return { emit: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** The answer ended for another reason: what was held back is ordinary text. */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** length of the longest end of `buf` that is a proper prefix of some stop sequence */
  private longestPartialStop(buf: string): number {
    let best = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, buf.length); k > best; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}
