import { describe, expect, test } from "bun:test";
import { startupGate } from "./startup-gate.ts";

const req = (path: string, method = "GET") => new Request("http://reelay" + path, { method });

describe("startup gate (between listening and having the app)", () => {
  test("/healthz is 200 and /readyz 503 'starting' before the app exists, each with a request id", async () => {
    const gate = startupGate(1_000);
    const h = await gate.fetch(req("/healthz"));
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: "ok" });
    expect(h.headers.get("x-request-id")).toMatch(/^req_/);
    const r = await gate.fetch(req("/readyz"));
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ status: "not_ready", checks: [{ name: "database", ok: false }], models: [] });
  });

  test("other requests wait for the app and are answered by it", async () => {
    const gate = startupGate(5_000);
    const pending = gate.fetch(req("/v1/models"));
    await Bun.sleep(30);
    gate.open((r) => new Response(`app saw ${new URL(r.url).pathname}`));
    expect(await (await pending).text()).toBe("app saw /v1/models");
    expect(await (await gate.fetch(req("/healthz"))).text()).toBe("app saw /healthz");
  });

  test("past the wait bound: 503 in the error envelope with Retry-After", async () => {
    const gate = startupGate(50);
    const res = await gate.fetch(req("/v1/embeddings", "POST"));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.json()).toEqual({ error: { message: "The server is starting; retry shortly.", type: "service_unavailable", param: null, code: "starting" } });
  });
});
