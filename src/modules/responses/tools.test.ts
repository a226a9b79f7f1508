/**
 * The tools a Responses request offers, over a chat upstream (the fake), with the official SDK and
 * raw requests shaped like Codex CLI's: namespace groups flattened and their calls named back,
 * custom (free-form) tools as one-string functions, tools the model cannot run left out and named
 * (header and request log) unless the client forces one, and a tool's image output.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import fc from "fast-check";
import OpenAI from "openai";
import { ApiError } from "../../errors.ts";
import { createLogger } from "../../logger.ts";
import { startBridgeServer, type BridgeServer } from "../../../test/chat/bridge-server.ts";
import { normalizeInput } from "./input-items.ts";
import { toChatRequest } from "./to-chat.ts";
import { flatName, offeredTools } from "./tools.ts";

let t: BridgeServer;
const logLines: any[] = [];
beforeAll(async () => {
  const capture = new Writable({ write(chunk, _enc, done) { for (const l of String(chunk).split("\n")) if (l) logLines.push(JSON.parse(l)); done(); } });
  t = await startBridgeServer({}, { logger: createLogger({ logLevel: "info", logPretty: false }, capture) });
}, 60_000);
afterAll(() => t.close());
beforeEach(() => t.fake.reset());

const last = () => t.fake.requests.at(-1)!;
const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));
const params = (props: Record<string, unknown>) => ({ type: "object", properties: props, additionalProperties: false });
const crm = {
  type: "namespace", name: "crm", description: "Customer records.",
  tools: [
    { type: "function", name: "lookup", description: "Find a customer", strict: false, parameters: params({ email: { type: "string" } }) },
    { type: "function", name: "close", strict: false, parameters: params({ id: { type: "string" } }) },
  ],
};
const shell = { type: "function", name: "exec_command", description: "Run a command", strict: false, parameters: params({ cmd: { type: "string" } }) };
const patch = { type: "custom", name: "apply_patch", description: "Edit files with a patch.", format: { type: "grammar", syntax: "lark", definition: 'start: "*** Begin Patch" /(.|\\n)*/' } };

async function post(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(t.s.url + "/v1/responses", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}
async function events(res: Response): Promise<any[]> {
  const out: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => out.push(e) });
  parser.feed(await res.text());
  return out.map((e) => JSON.parse(e.data));
}

describe("what Codex CLI sends", () => {
  test("its first request: functions, a namespace group and web_search offered, encrypted reasoning included, not stored, streamed → 200, web_search named as left out", async () => {
    const c = await t.newClient();
    t.fake.behave({ tokens: 3 });
    const res = await post(c.key, {
      model: "chat-a", stream: true, store: false, tool_choice: "auto", parallel_tool_calls: true,
      reasoning: { summary: "auto" }, include: ["reasoning.encrypted_content"], prompt_cache_key: "session-1",
      client_metadata: { session_id: "session-1", turn_id: "t1" },
      tools: [shell, crm, { type: "web_search", external_web_access: false }],
      input: [
        { type: "message", role: "developer", content: [{ type: "input_text", text: "You are a coding agent." }] },
        { type: "message", role: "user", content: [{ type: "input_text", text: "Hi" }] },
      ],
    }, { origin: "https://app.example" });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-reelay-omitted-tools")).toBe("web_search");
    expect(res.headers.get("access-control-expose-headers")).toContain("x-reelay-omitted-tools"); // readable by browser clients
    const sent = await events(res);
    expect(sent.at(-1)).toMatchObject({ type: "response.completed", response: { status: "completed", store: false, reasoning: { summary: "auto" } } });
    const body = last().body;
    expect(body.tools.map((x: any) => [x.type, x.function.name])).toEqual([["function", "exec_command"], ["function", "crm__lookup"], ["function", "crm__close"]]);
    expect(body.tools[1].function).toEqual({ name: "crm__lookup", description: "Find a customer", strict: false, parameters: crm.tools[0]!.parameters });
    expect(body).toMatchObject({ prompt_cache_key: "session-1", tool_choice: "auto", parallel_tool_calls: true, stream: true });
    expect(body.messages).toEqual([{ role: "system", content: "You are a coding agent." }, { role: "user", content: "Hi" }]);
    for (const k of ["client_metadata", "include", "store", "reasoning", "reasoning_effort"]) expect(body[k]).toBeUndefined();
    await Bun.sleep(50); // the log line is written when the response is out
    const line = logLines.find((l) => l.msg === "request" && l.requestId === res.headers.get("x-request-id"));
    expect(line).toMatchObject({ route: "/v1/responses", status: 200, omittedTools: ["web_search"] });
  });
});

describe("namespace tools", () => {
  test("a call of a member comes back as function_call {namespace, name} (non-streamed and streamed) and goes back to the model under the flat name", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "crm__lookup", arguments: '{"email":"a@b.c"}' }] });
    const r = await c.openai.responses.create({ model: "chat-a", input: "Who is a@b.c?", tools: [crm] as any });
    expect(r.output).toEqual([expect.objectContaining({ type: "function_call", namespace: "crm", name: "lookup", arguments: '{"email":"a@b.c"}', call_id: "call_fake0", status: "completed" })]);

    const stream = c.openai.responses.stream({ model: "chat-a", input: "Who is a@b.c?", tools: [crm] as any });
    const added: any[] = [];
    for await (const e of stream) if (e.type === "response.output_item.added") added.push(e.item);
    expect(added).toEqual([expect.objectContaining({ type: "function_call", namespace: "crm", name: "lookup" })]);
    expect((await stream.finalResponse()).output[0]).toMatchObject({ type: "function_call", namespace: "crm", name: "lookup", arguments: '{"email":"a@b.c"}' });

    await c.openai.responses.create({
      model: "chat-a", tools: [crm] as any, store: false,
      input: [{ role: "user", content: "Who is a@b.c?" }, ...r.output, { type: "function_call_output", call_id: "call_fake0", output: "Ada" }] as any,
    });
    expect(last().body.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "crm__lookup", arguments: '{"email":"a@b.c"}' } }] },
      { role: "tool", tool_call_id: "call_fake0", content: "Ada" },
    ]);
  });

  test("tool_choice names a member by its own name or the flat one; two tools with one flat name are a 400", async () => {
    const c = await t.newClient();
    await c.openai.responses.create({ model: "chat-a", input: "x", tools: [crm] as any, tool_choice: { type: "function", name: "close" } });
    expect(last().body.tool_choice).toEqual({ type: "function", function: { name: "crm__close" } });
    await c.openai.responses.create({ model: "chat-a", input: "x", tools: [crm, shell] as any, tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "function", name: "lookup", namespace: "crm" }, { type: "function", name: "exec_command" }] } as any });
    expect(last().body.tool_choice).toEqual({ type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "crm__lookup" } }, { type: "function", function: { name: "exec_command" } }] } });
    const res = await post(c.key, { model: "chat-a", input: "x", tools: [crm, { ...shell, name: "crm__lookup" }] });
    expect([res.status, ((await res.json()) as any).error.param]).toEqual([400, "tools[1].name"]);
  });

  test("tools added by additional_tools items are offered too; members of `functions` (the default namespace) keep their names and come back with it", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "exec", arguments: JSON.stringify({ input: "text(1)" }) }] });
    const r = await c.openai.responses.create({
      model: "chat-a", store: false,
      input: [
        { type: "additional_tools", role: "developer", tools: [{ type: "namespace", name: "functions", description: "", tools: [{ ...patch, name: "exec" }, { ...shell, name: "wait" }] }, crm] },
        { role: "user", content: "Go." },
      ] as any,
    });
    expect(last().body.tools.map((x: any) => x.function.name)).toEqual(["exec", "wait", "crm__lookup", "crm__close"]);
    expect(last().body.messages).toEqual([{ role: "user", content: "Go." }]);
    expect(r.output[0]).toMatchObject({ type: "custom_tool_call", namespace: "functions", name: "exec", input: "text(1)" });
    expect(flatName("functions", "exec")).toBe("exec");
  });

  test("flat names: <namespace>__<name> with the delimiter's stray underscores trimmed; over 64 characters cut and made unique by a hash", () => {
    expect(flatName("mcp__calendar__", "__create_event")).toBe("mcp__calendar__create_event");
    expect(flatName(undefined, "exec_command")).toBe("exec_command");
    const long = flatName("mcp__a_very_long_server_name_for_testing", "a_tool_with_an_even_longer_name_than_that");
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^mcp__a_very_long_server_name_for_testing__a_tool_with_a_[0-9a-f]{8}$/);
    expect(flatName("mcp__a_very_long_server_name_for_testing", "a_tool_with_an_even_longer_name_than_this")).not.toBe(long);
  });
});

describe("custom tools", () => {
  test("offered as a function with one string `input`; the call comes back as custom_tool_call (streamed: custom_tool_call_input events); call and output go back as tool_calls and a tool message", async () => {
    const c = await t.newClient();
    const input = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch";
    t.fake.behave({ toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ input }) }] });
    const r = await c.openai.responses.create({ model: "chat-a", input: "Add a.txt", tools: [patch] as any });
    expect(last().body.tools).toEqual([{
      type: "function",
      function: {
        name: "apply_patch",
        description: `Edit files with a patch.\n\nThe input must follow this lark grammar:\n${patch.format.definition}`,
        parameters: { type: "object", properties: { input: { type: "string", description: "The tool's whole input, as free-form text." } }, required: ["input"], additionalProperties: false },
      },
    }]);
    expect(r.output).toEqual([expect.objectContaining({ type: "custom_tool_call", name: "apply_patch", input, call_id: "call_fake0", status: "completed" })]);
    expect(r.output[0]!.id).toMatch(/^ctc_/);

    const res = await post(c.key, { model: "chat-a", input: "Add a.txt", tools: [patch], stream: true });
    const sent = await events(res);
    expect(sent.map((e) => e.type).filter((x) => x.includes("custom_tool_call") || x.includes("function_call"))).toEqual(["response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"]);
    expect(sent.find((e) => e.type === "response.custom_tool_call_input.done")).toMatchObject({ input });
    expect(sent.at(-1).response.output).toEqual([expect.objectContaining({ type: "custom_tool_call", name: "apply_patch", input })]);
    const sdk = c.openai.responses.stream({ model: "chat-a", input: "Add a.txt", tools: [patch] as any });
    let streamed = "";
    for await (const e of sdk) if (e.type === "response.custom_tool_call_input.delta") streamed += e.delta;
    expect(streamed).toBe(input);
    expect((await sdk.finalResponse()).output[0]).toMatchObject({ type: "custom_tool_call", input });

    await c.openai.responses.create({
      model: "chat-a", tools: [patch] as any, store: false,
      input: [{ role: "user", content: "Add a.txt" }, ...r.output, { type: "custom_tool_call_output", call_id: "call_fake0", output: "Done!" }] as any,
    });
    expect(last().body.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "call_fake0", type: "function", function: { name: "apply_patch", arguments: JSON.stringify({ input }) } }] },
      { role: "tool", tool_call_id: "call_fake0", content: "Done!" },
    ]);
  });

  test("a model that answers a custom tool with something else than {input}: its raw arguments are the input", async () => {
    const c = await t.newClient();
    t.fake.behave({ toolCalls: [{ name: "apply_patch", arguments: "*** Begin Patch" }] });
    const r = await c.openai.responses.create({ model: "chat-a", input: "x", tools: [patch] as any });
    expect(r.output[0]).toMatchObject({ type: "custom_tool_call", input: "*** Begin Patch" });
  });
});

describe("tools the model cannot run", () => {
  const hosted = [
    { type: "web_search" }, { type: "web_search_preview" }, { type: "file_search", vector_store_ids: ["vs_1"] }, { type: "code_interpreter", container: { type: "auto" } },
    { type: "image_generation" }, { type: "computer_use_preview", display_width: 1024, display_height: 768, environment: "linux" },
    { type: "mcp", server_label: "deepwiki", server_url: "https://mcp.deepwiki.com/mcp" }, { type: "local_shell" }, { type: "shell" }, { type: "apply_patch" },
  ];

  test("are left out of what the model is offered and named in x-reelay-omitted-tools, the answer served and billed", async () => {
    const c = await t.newClient(1_000_000);
    t.fake.behave({ tokens: 2 });
    const res = await post(c.key, { model: "chat-a", input: "hi", tools: [...hosted, shell] });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-reelay-omitted-tools")).toBe("web_search, web_search_preview, file_search, code_interpreter, image_generation, computer_use_preview, mcp:deepwiki, local_shell, shell, apply_patch");
    expect(last().body.tools.map((x: any) => x.function.name)).toEqual(["exec_command"]);
    expect((await c.lastUsage()).status).toBe(200);
    const only = await post(c.key, { model: "chat-a", input: "hi", tools: hosted.slice(0, 2), tool_choice: "auto" });
    expect([only.status, only.headers.get("x-reelay-omitted-tools")]).toEqual([200, "web_search, web_search_preview"]);
    expect(last().body.tools).toBeUndefined();
    const plain = await post(c.key, { model: "chat-a", input: "hi", tools: [shell] });
    expect(plain.headers.get("x-reelay-omitted-tools")).toBeNull();
  });

  test("a tool_choice that forces one is a 400 naming tool_choice, before anything is held or sent", async () => {
    const c = await t.newClient();
    const forced: unknown[] = [
      { type: "file_search" }, { type: "web_search_preview" }, { type: "image_generation" }, { type: "mcp", server_label: "deepwiki" },
      "required", { type: "allowed_tools", mode: "required", tools: [{ type: "web_search" }] },
    ];
    for (const tool_choice of forced) {
      const res = await post(c.key, { model: "chat-a", input: "hi", tools: hosted, tool_choice });
      const body = (await res.json()) as any;
      expect({ tool_choice, status: res.status, param: body.error?.param, code: body.error?.code }).toEqual({ tool_choice, status: 400, param: "tool_choice", code: "unsupported_parameter" });
    }
    await expect(settled(c.openai.responses.create({ model: "chat-a", input: "hi", tools: hosted as any, tool_choice: { type: "code_interpreter" } }))).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect(t.fake.requests).toHaveLength(0);
    expect((await c.get("/v1/account")).held).toBe(0);
  });
});

test("a tool output with an image (Codex's view_image): the text in the tool message, the image in a user message after the tool results", async () => {
  const c = await t.newClient();
  const png = "data:image/png;base64,iVBORw0KGgo=";
  await c.openai.responses.create({
    model: "chat-a", store: false, tools: [shell] as any,
    input: [
      { role: "user", content: "Look at both." },
      { type: "function_call", call_id: "c1", name: "view_image", arguments: '{"path":"a.png"}' },
      { type: "function_call", call_id: "c2", name: "exec_command", arguments: '{"cmd":"ls"}' },
      { type: "function_call_output", call_id: "c1", output: [{ type: "input_image", image_url: png }] },
      { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "a.png" }] },
    ] as any,
  });
  expect(last().body.messages.slice(2)).toEqual([
    { role: "tool", tool_call_id: "c1", content: "(the image of this result follows in the next message)" },
    { role: "tool", tool_call_id: "c2", content: "a.png" },
    { role: "user", content: [{ type: "image_url", image_url: { url: png } }] },
  ]);
});

test("any tools, tool_choice and tool items a client sends: translated or a 400 (ApiError), never another error", () => {
  // small alphabets, so that odd combinations (a namespace that is a number, a member without a name …) come up often
  const name = fc.constantFrom<unknown>("f", "lookup", "__x", "", 7, null, ["x"]);
  const namespace = fc.constantFrom<unknown>(undefined, "crm", "crm__", "", 7, true, {});
  const member = fc.record({ type: fc.constantFrom<unknown>("function", "custom", "namespace", "web_search", "mcp", 3), name, namespace, tools: fc.array(fc.anything(), { maxLength: 2 }), format: fc.anything(), server_label: name }, { requiredKeys: ["type"] });
  const tool = fc.oneof(member, fc.record({ type: fc.constant("namespace"), name, tools: fc.oneof(fc.array(member, { maxLength: 3 }), fc.anything()) }), fc.anything());
  const choice = fc.oneof(fc.constantFrom<unknown>("none", "auto", "required", "other", 5, null),
    fc.record({ type: fc.constantFrom<unknown>("function", "custom", "allowed_tools", "file_search", "mcp", 3), name, mode: fc.constantFrom<unknown>("auto", "required", 1), tools: fc.oneof(fc.array(member, { maxLength: 3 }), fc.anything()) }, { requiredKeys: ["type"] }));
  const item = fc.oneof(
    fc.record({ type: fc.constantFrom("function_call", "custom_tool_call"), call_id: name, name, namespace, arguments: name, input: name }, { requiredKeys: ["type"] }),
    fc.record({ type: fc.constantFrom("function_call_output", "custom_tool_call_output"), call_id: name, output: fc.oneof(name, fc.array(fc.record({ type: fc.constantFrom("input_text", "input_image", "input_file"), text: name, image_url: name }), { maxLength: 3 })) }, { requiredKeys: ["type"] }),
    fc.record({ type: fc.constant("reasoning"), encrypted_content: fc.anything(), summary: fc.anything() }, { requiredKeys: ["type"] }),
  );
  /** each step on its own, so that a 400 in one (most random tools lists) does not hide the next */
  const step = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 400) throw e;
    }
  };
  const user = normalizeInput("hi");
  fc.assert(fc.property(fc.array(tool, { maxLength: 5 }), choice, fc.array(item, { maxLength: 4 }), (tools, tool_choice, items) => {
    const offered = step(() => offeredTools(tools)) ?? offeredTools([]);
    const input = step(() => normalizeInput([{ role: "user", content: "hi" }, ...items])) ?? user;
    step(() => toChatRequest({ body: { model: "m", tool_choice } as any, history: [], input, tools: offered, replayReasoning: () => ({ text: "earlier", field: "reasoning_content" }) }));
  }), { numRuns: 1_000 });
});
