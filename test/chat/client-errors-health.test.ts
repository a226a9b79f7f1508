/**
 * The console's Models page tells the truth about a model. Its state is the load state /readyz
 * reports (a local model is `unloaded` until its first request, not "ready").
 *
 * A client's own mistakes are not upstream failures. Two bad requests to the built-in chat model
 * (tools sent to a local model, a role typo) and one good one: the console's Models page keeps the
 * model healthy and shows the client errors apart, the failing-upstreams view does not list it, and
 * the overview's error rate (the usage time series) counts no error. A real failure of the model
 * (a 5xx, or a stream that broke) still counts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer();
  key = (await s.newClient()).key;
}, 60_000);
afterAll(() => s?.close());

const chat = (body: Record<string, unknown>) =>
  fetch(`${s.url}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "stories260k", max_tokens: 4, ...body }) });
const json = async (path: string) => (await (await s.admin(path)).json()) as any;

test("each model's state on the Models page is the one /readyz reports", async () => {
  const models = (await json("/admin/models")).data as Array<{ id: string; state: string }>;
  const ready = (await (await fetch(`${s.url}/readyz`)).json()) as { models: Array<{ id: string; state: string }> };
  const states = (list: Array<{ id: string; state: string }>) => Object.fromEntries(list.map((m) => [m.id, m.state]));
  expect(states(models)).toEqual(states(ready.models));
  expect(states(models).stories260k).toBe("unloaded"); // nothing has asked for it yet
});

test("two client errors and a success: healthy, the client errors shown apart, no failing upstream, no error in the series", async () => {
  const tools = await chat({ messages: [{ role: "user", content: "Once upon a time" }], tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] });
  expect(tools.status).toBe(400);
  expect(((await tools.json()) as any).error).toMatchObject({ code: "unsupported_parameter", param: "tools" });
  const typo = await chat({ messages: [{ role: "usr", content: "Once upon a time" }] });
  expect(typo.status).toBe(400);
  expect((await chat({ messages: [{ role: "user", content: "Once upon a time" }] })).status).toBe(200);
  await fetch(`${s.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } }); // this instance's settlements land first

  const model = (await json("/admin/models")).data.find((m: any) => m.id === "stories260k");
  expect(model.health).toMatchObject({ errors: 0, error_rate: 0, last_error_at: null, status: "healthy" });
  expect(model.health.client_errors).toBe(model.health.requests - 1); // every usage row but the success

  const day = `from=${new Date(Date.now() - 3_600_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
  expect((await json(`/admin/usage/failing-upstreams?${day}`)).data).toEqual([]);
  const series = await json(`/admin/usage/timeseries?bucket=1h&${day}&model=stories260k`);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  expect(sum(series.total.requests)).toBe(model.health.requests);
  expect(sum(series.total.errors)).toBe(0);
});
