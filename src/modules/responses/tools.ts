/**
 * The tools a Responses request offers, as the chat tools of the request it becomes, and the way
 * back from a chat tool call to the Responses item the client expects.
 *
 * - `function` tools are chat function tools.
 * - `namespace` tools (a named group, as Codex sends `multi_agent_v1`) are flattened: each member
 *   becomes a chat function named `<namespace>__<name>`, the flat form Codex itself uses where a
 *   boundary cannot keep the split (members of `functions`, OpenAI's default namespace, keep their
 *   own names). A call of that function comes back as a `function_call` with `namespace` and the
 *   member's own `name`, as OpenAI returns it.
 * - `custom` (free-form) tools become a function with one string argument, `input` (the format or
 *   grammar the tool expects is added to its description); a call comes back as a
 *   `custom_tool_call` with that string as `input`. Chat upstreams differ on native custom tools,
 *   and every one of them serves functions.
 * - Tools OpenAI runs on its own servers (web_search, file_search, code_interpreter, mcp …) and
 *   the built-in client tools of OpenAI's own models (local_shell, shell, apply_patch, computer …)
 *   cannot be run by a chat model: they are left out of what the model is offered, and named in the
 *   `x-reelay-omitted-tools` response header and the request log. A client that only offers them
 *   loses nothing it could have had; a `tool_choice` that forces one of them is a 400.
 */
import { createHash } from "node:crypto";
import { badRequest, quoted } from "../../errors.ts";

export const OMITTED_TOOLS_HEADER = "x-reelay-omitted-tools";

/** What a chat function offered to the model stands for. */
export interface ToolTarget {
  kind: "function" | "custom";
  /** the name the client gave */
  name: string;
  namespace?: string;
}

export interface OfferedTools {
  /** chat tools, in the order the client offered them */
  chat: Record<string, unknown>[];
  /** chat function name → what the client offered */
  targets: Map<string, ToolTarget>;
  /** the tools left out, by type (`web_search`, `mcp:deepwiki` …), each once */
  omitted: string[];
}

const present = (v: unknown) => v !== undefined && v !== null;
const unsupported = (message: string, param: string) => badRequest(message, param, "unsupported_parameter");

/** the namespace of top-level tools (OpenAI's `functions.<name>`; Codex: `None`, `""` and `"functions"` are one) */
const DEFAULT_NAMESPACE = "functions";

/** OpenAI limits chat function names to 64 characters of [A-Za-z0-9_-]. */
const MAX_NAME = 64;

/**
 * `<namespace>__<name>` (the delimiter's stray underscores trimmed, as Codex joins them); a name
 * longer than a chat function name may be is cut and made unique with 8 hex digits of its hash.
 * Deterministic, so earlier calls in the conversation are named the way the model saw them.
 */
export function flatName(namespace: string | undefined, name: string): string {
  if (!namespace || namespace === DEFAULT_NAMESPACE) return name;
  const joined = `${namespace.replace(/_+$/, "")}__${name.replace(/^_+/, "")}`;
  if (joined.length <= MAX_NAME) return joined;
  return `${joined.slice(0, MAX_NAME - 9)}_${createHash("sha256").update(joined).digest("hex").slice(0, 8)}`;
}

export function offeredTools(tools: unknown[] | null | undefined): OfferedTools {
  const out: OfferedTools = { chat: [], targets: new Map(), omitted: [] };
  const omit = (what: string) => { if (!out.omitted.includes(what)) out.omitted.push(what); };
  const add = (tool: Record<string, unknown>, at: string, namespace?: string) => {
    if (typeof tool.name !== "string" || tool.name === "") throw badRequest(`'${at}.name' must be a non-empty string.`, `${at}.name`);
    const name = flatName(namespace, tool.name);
    if (out.targets.has(name)) throw badRequest(`'${at}.name': a tool named '${quoted(name)}' is offered twice${namespace ? " (namespaced tools are offered to the model as <namespace>__<name>)" : ""}.`, `${at}.name`);
    const kind = tool.type === "custom" ? "custom" : "function";
    out.targets.set(name, { kind, name: tool.name, ...(namespace ? { namespace } : {}) });
    out.chat.push({ type: "function", function: kind === "custom" ? customAsFunction(name, tool) : functionOf(name, tool) });
  };
  (tools ?? []).forEach((raw, i) => {
    const tool = (raw ?? {}) as Record<string, unknown>;
    const at = `tools[${i}]`;
    if (typeof tool.type !== "string") throw badRequest(`'${at}.type' must be a string.`, `${at}.type`);
    if (tool.type === "function" || tool.type === "custom") return add(tool, at);
    if (tool.type !== "namespace") return omit(hostedName(tool));
    if (typeof tool.name !== "string" || tool.name === "") throw badRequest(`'${at}.name' must be a non-empty string (the namespace).`, `${at}.name`);
    if (!Array.isArray(tool.tools)) throw badRequest(`'${at}.tools' must be an array of function or custom tools.`, `${at}.tools`);
    tool.tools.forEach((member: unknown, j: number) => {
      const m = (member ?? {}) as Record<string, unknown>;
      if (m.type === "function" || m.type === "custom") add(m, `${at}.tools[${j}]`, tool.name as string);
      else omit(`${tool.name}.${hostedName(m)}`);
    });
  });
  return out;
}

function hostedName(tool: Record<string, unknown>): string {
  const type = typeof tool.type === "string" ? tool.type.slice(0, 64) : "unknown";
  return type === "mcp" && typeof tool.server_label === "string" ? `mcp:${tool.server_label.slice(0, 64)}` : type;
}

function functionOf(name: string, tool: Record<string, unknown>): Record<string, unknown> {
  const fn: Record<string, unknown> = { name };
  for (const k of ["description", "parameters", "strict"]) if (present(tool[k])) fn[k] = tool[k];
  return fn;
}

/** A custom tool as a function taking its free-form input as one string. */
function customAsFunction(name: string, tool: Record<string, unknown>): Record<string, unknown> {
  const format = tool.format as { type?: unknown; syntax?: unknown; definition?: unknown } | null | undefined;
  const grammar = format?.type === "grammar" && typeof format.definition === "string"
    ? `The input must follow this ${typeof format.syntax === "string" ? format.syntax : ""} grammar:\n${format.definition}` : "";
  const description = [typeof tool.description === "string" ? tool.description : "", grammar].filter(Boolean).join("\n\n");
  return {
    name,
    ...(description ? { description } : {}),
    parameters: {
      type: "object",
      properties: { input: { type: "string", description: "The tool's whole input, as free-form text." } },
      required: ["input"],
      additionalProperties: false,
    },
  };
}

/** A custom tool call's input: the `input` string of the function's arguments (the raw arguments if the model sent something else). */
export function customInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown;
    if (parsed && typeof parsed === "object" && typeof (parsed as { input?: unknown }).input === "string") return (parsed as { input: string }).input;
  } catch {}
  return args;
}

/** The chat function arguments that carry a custom tool call's input. */
export const customArguments = (input: string) => JSON.stringify({ input });

/** The Responses output item for a chat tool call (`id`, `status` and `call_id` set by the caller). */
export function callItem(targets: Map<string, ToolTarget>, chatName: string, args: string): { type: "function_call" | "custom_tool_call" } & Record<string, unknown> {
  const target = targets.get(chatName);
  const ns = target?.namespace ? { namespace: target.namespace } : {};
  if (target?.kind === "custom") return { type: "custom_tool_call", name: target.name, ...ns, input: customInput(args) };
  return { type: "function_call", name: target?.name ?? chatName, ...ns, arguments: args };
}

const HOSTED_CHOICES = new Set(["web_search", "web_search_preview", "web_search_preview_2025_03_11", "file_search", "computer", "computer_use", "computer_use_preview", "image_generation", "code_interpreter", "mcp", "local_shell", "shell", "apply_patch", "tool_search"]);

/** `tool_choice` in chat terms; forcing a tool that was left out is a 400. */
export function toolChoice(choice: unknown, offered: OfferedTools): unknown {
  if (choice === "none" || choice === "auto") return choice;
  if (choice === "required") {
    if (offered.chat.length === 0 && offered.omitted.length > 0) throw forcedOmitted(offered.omitted.join(", "));
    return choice;
  }
  const c = (choice ?? {}) as { type?: unknown; name?: unknown; mode?: unknown; tools?: unknown; server_label?: unknown };
  if (typeof c !== "object") throw badChoice();
  if ((c.type === "function" || c.type === "custom") && typeof c.name === "string") return { type: "function", function: { name: chosenName(c.name, offered) } };
  if (c.type === "allowed_tools" && Array.isArray(c.tools)) {
    const names = c.tools.flatMap((t: any) => ((t?.type === "function" || t?.type === "custom") && typeof t?.name === "string" ? [flatName(typeof t.namespace === "string" ? t.namespace : undefined, t.name)] : []));
    if (names.length === 0 && c.mode === "required") throw forcedOmitted(c.tools.map((t: any) => String(t?.type)).join(", "));
    if (names.length === 0) return "none"; // only tools that were left out are allowed: none can be called
    return { type: "allowed_tools", allowed_tools: { mode: c.mode, tools: names.map((name) => ({ type: "function", function: { name } })) } };
  }
  if (typeof c.type === "string" && HOSTED_CHOICES.has(c.type)) throw forcedOmitted(c.type);
  throw badChoice();
}

/** A forced name: the flat name of an offered tool, or the plain name of exactly one namespaced member. */
function chosenName(name: string, offered: OfferedTools): string {
  if (offered.targets.has(name)) return name;
  const members = [...offered.targets].filter(([, t]) => t.name === name);
  return members.length === 1 ? members[0]![0] : name;
}

const forcedOmitted = (what: string) =>
  unsupported(`'tool_choice' forces ${quoted(what)}, a tool reelay leaves out: chat models cannot run tools OpenAI runs on its own servers or OpenAI's built-in client tools. Offer a function tool instead, or use tool_choice: "auto".`, "tool_choice");
const badChoice = () => badRequest("'tool_choice' must be none, auto, required, {type: \"function\", name}, {type: \"custom\", name} or {type: \"allowed_tools\", mode, tools}.", "tool_choice");
