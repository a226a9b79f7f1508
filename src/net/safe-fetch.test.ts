import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isPublicAddress } from "./address-policy.ts";
import { SafeFetchError, safeFetchBytes, type SafeFetchInternalOptions } from "./safe-fetch.ts";

/** A local server that counts every request it receives. */
function countingServer(handler: (req: Request) => Response | Promise<Response>) {
  const state = { hits: 0 };
  const server = Bun.serve({
    port: 0,
    hostname: "::", // dual-stack, so [::1] and 127.0.0.1 would both reach it if the guard let them
    fetch(req) {
      state.hits++;
      return handler(req);
    },
  });
  return { server, state, port: server.port };
}

const origin = countingServer((req) => {
  const url = new URL(req.url);
  switch (url.pathname) {
    case "/ok":
      return new Response("hello", { headers: { "content-type": "image/png", "x-host-seen": req.headers.get("host") ?? "" } });
    case "/echo-host":
      return new Response(req.headers.get("host"));
    case "/redirect":
      return new Response(null, { status: 302, headers: { location: url.searchParams.get("to")! } });
    case "/loop":
      return new Response(null, { status: 302, headers: { location: "/loop" } });
    case "/big":
      return new Response("x".repeat(5000), { headers: { "content-length": "5000" } });
    case "/chunked":
      return new Response(
        new ReadableStream({
          async pull(controller) {
            controller.enqueue(new Uint8Array(512));
            await Bun.sleep(1);
          },
        }),
      );
    case "/slow":
      return new Response(
        new ReadableStream({
          async start(controller) {
            controller.enqueue(new TextEncoder().encode("first"));
            await Bun.sleep(2000);
            controller.close();
          },
        }),
      );
    case "/missing":
      return new Response("secret body", { status: 404 });
    default:
      return new Response("nope", { status: 500 });
  }
});
const victim = countingServer(() => new Response("internal"));

afterAll(() => {
  origin.server.stop(true);
  victim.server.stop(true);
});
beforeEach(() => {
  origin.state.hits = 0;
  victim.state.hits = 0;
});

const base: SafeFetchInternalOptions = { maxBytes: 1000, timeoutMs: 1000 };
/** "img.example.test" stands for a public host: it resolves to the local origin and is allowed by name. */
const publicName: SafeFetchInternalOptions = {
  ...base,
  resolver: async (host) => (host === "img.example.test" ? ["127.0.0.1"] : ["203.0.113.1"]),
  addressPolicy: (address, host) => host === "img.example.test" || isPublicAddress(address),
};

async function failure(promise: Promise<unknown>): Promise<SafeFetchError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(SafeFetchError);
    return err as SafeFetchError;
  }
  throw new Error("expected the download to fail");
}

describe("safeFetchBytes refuses internal targets before any request", () => {
  const p = origin.port;
  const cases = [
    `http://127.0.0.1:${p}/ok`,
    `http://[::1]:${p}/ok`,
    `http://10.0.0.1:${p}/ok`,
    `http://169.254.169.254/latest/meta-data/`,
    `http://0.0.0.0:${p}/ok`,
    `http://2130706433:${p}/ok`,
    `http://0x7f.1:${p}/ok`,
    `http://0177.0.0.1:${p}/ok`,
    `http://[::ffff:127.0.0.1]:${p}/ok`,
    `http://[64:ff9b::7f00:1]:${p}/ok`,
    `http://localhost:${p}/ok`,
    `http://LOCALHOST.:${p}/ok`,
    `http://metadata.google.internal/computeMetadata/v1/`,
    `http://100.64.0.1/`,
    `http://[fe80::1]/`,
    `http://[fd00::1]/`,
  ];
  for (const url of cases) {
    test(url, async () => {
      const err = await failure(safeFetchBytes(url, base));
      expect(err.code).toBe("blocked_address");
      expect(origin.state.hits).toBe(0);
    });
  }

  test("a name that resolves to loopback", async () => {
    const err = await failure(safeFetchBytes(`http://images.example.com:${p}/ok`, { ...base, resolver: async () => ["127.0.0.1"] }));
    expect(err.code).toBe("blocked_address");
    expect(origin.state.hits).toBe(0);
  });

  test("a name where any one of several addresses is private", async () => {
    const resolver = async () => ["203.0.113.7", "93.184.216.34", "192.168.1.10"];
    const err = await failure(safeFetchBytes(`http://images.example.com:${p}/ok`, { ...base, resolver }));
    expect(err.code).toBe("blocked_address");
  });

  for (const url of ["ftp://example.com/a.png", "file:///etc/passwd", "gopher://example.com/", "not a url", "http://user:pw@example.com/"]) {
    test(`invalid: ${url}`, async () => {
      expect((await failure(safeFetchBytes(url, base))).code).toBe("invalid_url");
    });
  }
});

describe("redirects", () => {
  test("a redirect from an allowed origin to loopback is refused and the target never hit", async () => {
    const to = encodeURIComponent(`http://127.0.0.1:${victim.port}/`);
    const err = await failure(safeFetchBytes(`http://img.example.test:${origin.port}/redirect?to=${to}`, publicName));
    expect(err.code).toBe("blocked_address");
    expect(origin.state.hits).toBe(1);
    expect(victim.state.hits).toBe(0);
  });

  test("a redirect to a name resolving to a private address is refused", async () => {
    const to = encodeURIComponent(`http://cdn.example.com:${victim.port}/`);
    const resolver = async (host: string) => (host === "img.example.test" ? ["127.0.0.1"] : ["10.1.2.3"]);
    const err = await failure(safeFetchBytes(`http://img.example.test:${origin.port}/redirect?to=${to}`, { ...publicName, resolver }));
    expect(err.code).toBe("blocked_address");
    expect(victim.state.hits).toBe(0);
  });

  test("an allowed redirect is followed, and the pinned request carries the original Host", async () => {
    const to = encodeURIComponent(`/ok`);
    const res = await safeFetchBytes(`http://img.example.test:${origin.port}/redirect?to=${to}`, publicName);
    expect(new TextDecoder().decode(res.bytes)).toBe("hello");
    expect(res.contentType).toBe("image/png");
    expect(origin.state.hits).toBe(2);
    const host = await safeFetchBytes(`http://img.example.test:${origin.port}/echo-host`, publicName);
    expect(new TextDecoder().decode(host.bytes)).toBe(`img.example.test:${origin.port}`);
  });

  test("more than 5 redirects fail", async () => {
    const err = await failure(safeFetchBytes(`http://img.example.test:${origin.port}/loop`, publicName));
    expect(err.code).toBe("http_status");
    expect(origin.state.hits).toBe(6);
  });
});

describe("with allowPrivateNetwork", () => {
  const open = { ...base, allowPrivateNetwork: true };

  test("the local server is reachable", async () => {
    const res = await safeFetchBytes(`http://127.0.0.1:${origin.port}/ok`, open);
    expect(new TextDecoder().decode(res.bytes)).toBe("hello");
    expect(res.contentType).toBe("image/png");
    const v6 = await safeFetchBytes(`http://localhost:${origin.port}/ok`, open);
    expect(v6.bytes.byteLength).toBe(5);
  });

  test("a declared Content-Length over the limit is refused", async () => {
    const err = await failure(safeFetchBytes(`http://127.0.0.1:${origin.port}/big`, open));
    expect(err.code).toBe("too_large");
  });

  test("an endless body without Content-Length is cut at the limit", async () => {
    const started = performance.now();
    const err = await failure(safeFetchBytes(`http://127.0.0.1:${origin.port}/chunked`, { ...open, timeoutMs: 5000 }));
    expect(err.code).toBe("too_large");
    expect(performance.now() - started).toBeLessThan(2000);
  });

  test("a slow body hits the whole-request deadline", async () => {
    const started = performance.now();
    const err = await failure(safeFetchBytes(`http://127.0.0.1:${origin.port}/slow`, { ...open, timeoutMs: 200 }));
    expect(err.code).toBe("timeout");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("a non-2xx status fails without quoting the body", async () => {
    const err = await failure(safeFetchBytes(`http://127.0.0.1:${origin.port}/missing`, open));
    expect(err.code).toBe("http_status");
    expect(err.status).toBe(404);
    expect(err.message).not.toContain("secret");
  });

  test("the caller's signal cancels the download", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("client went away")), 50);
    const promise = safeFetchBytes(`http://127.0.0.1:${origin.port}/slow`, { ...open, timeoutMs: 5000, signal: controller.signal });
    await expect(promise).rejects.toThrow("client went away");
  });

  test("a connection refused is a network error", async () => {
    const closed = Bun.serve({ port: 0, fetch: () => new Response() });
    const port = closed.port;
    closed.stop(true);
    const err = await failure(safeFetchBytes(`http://127.0.0.1:${port}/`, open));
    expect(err.code).toBe("network");
  });
});

describe("https to a pinned address", () => {
  const openssl = Bun.which("openssl");
  test.skipIf(!openssl)("verifies the certificate against the original name, not the IP", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reelay-tls-"));
    try {
      const [cert, key] = [join(dir, "cert.pem"), join(dir, "key.pem")];
      const gen = Bun.spawnSync([openssl!, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-keyout", key, "-out", cert,
        "-subj", "/CN=img.example.test", "-addext", "subjectAltName=DNS:img.example.test"], { stderr: "ignore" });
      expect(gen.exitCode).toBe(0);
      const child = Bun.spawnSync([process.execPath, join(import.meta.dir, "fixtures/https-pinned-fetch.ts"), cert, key], {
        env: { ...process.env, NODE_EXTRA_CA_CERTS: cert },
      });
      const lines = child.stdout.toString().trim().split("\n").map((l) => JSON.parse(l));
      expect(lines[0]).toMatchObject({ host: "img.example.test", body: expect.stringMatching(/^host=img\.example\.test:\d+$/) });
      expect(lines[1]).toMatchObject({ host: "other.test", code: "network", message: expect.stringContaining("ERR_TLS_CERT_ALTNAME_INVALID") });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 15_000);
});

describe("isPublicAddress", () => {
  const allowed = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"];
  const refused = [
    "127.0.0.1", "10.255.0.1", "172.16.0.1", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "255.255.255.255", "224.0.0.1", "240.0.0.1", "192.0.2.1", "198.18.0.1",
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "::ffff:0:169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1", "2002:7f00:1::1", "2001::1", "2001:db8::1",
    "::7f00:1", "127.1", "0x7f.0.0.1", "not-an-ip", "",
  ];
  for (const a of allowed) test(`allows ${a}`, () => expect(isPublicAddress(a)).toBe(true));
  for (const a of refused) test(`refuses ${a || "(empty)"}`, () => expect(isPublicAddress(a)).toBe(false));
});
