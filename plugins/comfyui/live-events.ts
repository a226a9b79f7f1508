/**
 * One ComfyUI server's websocket (`/ws?clientId=…`): the server sends the prompts queued with this
 * client id their events — `executing`, `progress` {value, max}, `execution_success`,
 * `execution_error`, `execution_interrupted`, and `executing` with node null once a prompt is done.
 * They are kept per prompt in memory, so a poll answers queued / running / progress without an HTTP
 * call, and a prompt's end wakes its job at once (the host polls it, and the poll reads /history).
 *
 * What the socket says is trusted only for prompts it has followed without a break: a prompt
 * tracked before a reconnect may have ended while the socket was down, so its polls go to /history
 * and /queue (the fallback, also used after a reelay restart, when nothing is tracked). The socket
 * connects on first use and reconnects on demand, at most once a second.
 */
import type { PluginLogger } from "@reelay/plugin-sdk";

export type Phase = "queued" | "running" | "ended";

interface Live {
  phase: Phase;
  /** when it was tracked: prompts whose jobs ended elsewhere (another instance took them over) are dropped after STALE_MS */
  at: number;
  /** the socket session it was tracked in: the events are complete only within one session */
  session: number;
  /** sampler runs finished, and the current one's fraction */
  samplersDone: number;
  current: number;
  progress: number;
  lastNode?: string;
}

const RECONNECT_MS = 1_000;
/** an image-to-video prompt runs minutes, not hours */
const STALE_MS = 6 * 3_600_000;
const CONNECT_WAIT_MS = 2_000;

export class LiveEvents {
  readonly clientId = crypto.randomUUID().replace(/-/g, "");
  private ws: WebSocket | null = null;
  private open = false;
  private session = 0;
  private lastAttempt = 0;
  private closed = false;
  private readonly prompts = new Map<string, Live>();
  private opened: Promise<void> | null = null;

  constructor(
    private readonly urlFor: (clientId: string) => string,
    private readonly headers: Record<string, string>,
    private readonly samplers: number,
    private readonly onEnded: (promptId: string) => void,
    private readonly logger: PluginLogger,
  ) {}

  /** Connect if not connected (waits up to 2 s, so a prompt queued right after gets its events); never throws. */
  async ready(): Promise<boolean> {
    if (this.open) return true;
    this.connect();
    await Promise.race([this.opened, new Promise((r) => setTimeout(r, CONNECT_WAIT_MS))]);
    return this.open;
  }

  /** Follow a prompt just queued with this client id. */
  track(promptId: string): void {
    if (!this.open) return;
    const now = Date.now();
    for (const [id, live] of this.prompts) {
      if (now - live.at < STALE_MS) break; // in tracking order: the rest are newer
      this.prompts.delete(id);
    }
    this.prompts.set(promptId, { phase: "queued", at: now, session: this.session, samplersDone: 0, current: 0, progress: 0 });
  }

  /** The prompt's phase and progress, when the socket has followed it without a break. */
  state(promptId: string): { phase: Phase; progress: number } | undefined {
    const live = this.prompts.get(promptId);
    if (!live) return undefined;
    if (!this.open || live.session !== this.session) {
      this.prompts.delete(promptId);
      this.connect();
      return undefined;
    }
    return { phase: live.phase, progress: live.progress };
  }

  forget(promptId: string): void {
    this.prompts.delete(promptId);
  }

  close(): void {
    this.closed = true;
    this.ws?.close();
    this.ws = null;
    this.prompts.clear();
  }

  private connect(): void {
    if (this.closed || this.ws || Date.now() - this.lastAttempt < RECONNECT_MS) return;
    this.lastAttempt = Date.now();
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.urlFor(this.clientId), { headers: this.headers } as never);
    } catch (err) {
      this.logger.warn("ComfyUI websocket could not be opened; following jobs by polling", { error: String(err) });
      return;
    }
    this.ws = ws;
    let resolveOpened!: () => void;
    this.opened = new Promise((r) => (resolveOpened = r));
    ws.onopen = () => {
      this.open = true;
      this.session++;
      resolveOpened();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") this.onMessage(ev.data);
    };
    ws.onclose = () => {
      if (this.ws === ws) {
        this.ws = null;
        this.open = false;
      }
      resolveOpened();
    };
    ws.onerror = () => {
      // followed by close; polls fall back to HTTP meanwhile
    };
  }

  private onMessage(text: string): void {
    let msg: { type?: string; data?: Record<string, unknown> };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    const data = msg.data ?? {};
    const id = typeof data.prompt_id === "string" ? data.prompt_id : undefined;
    const live = id ? this.prompts.get(id) : undefined;
    if (!id || !live || live.phase === "ended") return;
    switch (msg.type) {
      case "execution_start":
        live.phase = "running";
        break;
      case "executing":
        if (data.node === null || data.node === undefined) return this.end(id, live);
        live.phase = "running";
        break;
      case "progress": {
        const value = Number(data.value), max = Number(data.max);
        if (!(max > 0) || !(value >= 0)) return;
        live.phase = "running";
        const node = String(data.node ?? "");
        // a new sampler node starts its own count: the previous one is done
        if (live.lastNode !== undefined && node !== live.lastNode && live.current > 0) live.samplersDone++;
        live.lastNode = node;
        live.current = Math.min(1, value / max);
        const overall = (Math.min(live.samplersDone, this.samplers - 1) + live.current) / this.samplers;
        live.progress = Math.max(live.progress, Math.min(0.99, overall));
        break;
      }
      case "execution_success":
      case "execution_error":
      case "execution_interrupted":
        return this.end(id, live);
    }
  }

  private end(id: string, live: Live): void {
    live.phase = "ended";
    this.onEnded(id);
  }
}
