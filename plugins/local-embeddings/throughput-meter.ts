/**
 * Tokens per second one worker gets through, as a moving average of recent batches: how long a
 * backlog takes to clear, for the Retry-After of a refused request.
 */
export class ThroughputMeter {
  /** tokens per millisecond per worker; starts at what one worker did on the bench sentences (~1.1) */
  private rate = 1;

  record(tokens: number, ms: number): void {
    if (ms <= 0 || tokens <= 0) return;
    this.rate = 0.8 * this.rate + 0.2 * (tokens / ms);
  }

  /** whole seconds to get through `tokens` on `workers` workers, 1 to 60 */
  secondsFor(tokens: number, workers: number): number {
    return Math.min(60, Math.max(1, Math.ceil(tokens / (this.rate * workers) / 1000)));
  }
}
