/**
 * A small load balancer for the lifecycle tests, as HAProxy is set up in deploy/: round robin over
 * the backends whose /readyz answered 200 (checked every `checkMs`; out after two failed checks), requests and
 * streamed bodies passed through as they come. No retries: a request sent to an instance that
 * refuses it is the client's error, which is what the drain delay exists to prevent.
 */
export interface LoadBalancer {
  url: string;
  /** backends in rotation now */
  healthy(): string[];
  /** out of rotation whatever its health says (HAProxy's `set server … state drain`), and back */
  disable(backend: string): void;
  enable(backend: string): void;
  stop(): Promise<void>;
}

export function startLoadBalancer(backends: string[], checkMs = 100): LoadBalancer {
  const up = new Set<string>();
  const disabled = new Set<string>();
  let next = 0;
  let stopped = false;
  // as HAProxy's `fall 2 rise 1`: out after two failed checks in a row (a 503 or no answer within 2 s), back after one good one
  const fails = new Map<string, number>();
  const check = async () => {
    await Promise.all(backends.map(async (b) => {
      const ok = await fetch(b + "/readyz", { signal: AbortSignal.timeout(2_000) }).then((r) => (r.body?.cancel(), r.status === 200), () => false);
      fails.set(b, ok ? 0 : (fails.get(b) ?? 0) + 1);
      if (ok) up.add(b);
      else if (fails.get(b)! >= 2) up.delete(b);
    }));
  };
  const loop = (async () => {
    while (!stopped) {
      await check();
      await Bun.sleep(checkMs);
    }
  })();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const pool = backends.filter((b) => up.has(b) && !disabled.has(b));
      if (pool.length === 0) return new Response(JSON.stringify({ error: { message: "no backend in rotation", type: "lb" } }), { status: 503 });
      const backend = pool[next++ % pool.length]!;
      const u = new URL(req.url);
      const headers = new Headers(req.headers);
      headers.delete("host");
      try {
        const res = await fetch(backend + u.pathname + u.search, { method: req.method, headers, body: req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer(), signal: req.signal, decompress: false });
        const out = new Headers(res.headers);
        out.set("x-backend", backend);
        out.delete("connection");
        return new Response(res.body, { status: res.status, headers: out });
      } catch (e) {
        return new Response(JSON.stringify({ error: { message: `backend ${backend}: ${(e as Error).message}`, type: "lb" } }), { status: 502, headers: { "x-backend": backend } });
      }
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    healthy: () => [...up].filter((b) => !disabled.has(b)),
    disable: (b) => void disabled.add(b),
    enable: (b) => void disabled.delete(b),
    async stop() {
      stopped = true;
      await loop;
      await server.stop(true);
    },
  };
}
