/**
 * How a job's seconds become the workflow's frame count ({{frames}}). Video models want particular
 * counts — Wan 4k+1 at 16 fps (5 s → 81), LTX-Video 8k+1 at 24 fps (5 s → 121) — so the rule is an
 * option: a formula over `seconds` and `fps` (default `seconds * fps + 1`), or a table of the only
 * lengths the model makes ({"5": 81, "10": 161}; other seconds are refused with a 400).
 */
import { PluginError } from "@reelay/plugin-sdk";

type Node = { n: number } | { v: "seconds" | "fps" } | { op: "+" | "-" | "*"; a: Node; b: Node };

/** The formula's syntax tree, or an error message. */
function parse(text: string): Node | string {
  const tokens = text.match(/\s*(\d+|seconds|fps|[-+*()]|\S)/g)?.map((t) => t.trim()) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  function factor(): Node {
    const t = tokens[i++];
    if (t === undefined) throw new Error("ends too early");
    if (/^\d+$/.test(t)) return { n: Number(t) };
    if (t === "seconds" || t === "fps") return { v: t };
    if (t === "(") {
      const e = expr();
      if (tokens[i++] !== ")") throw new Error("a parenthesis is not closed");
      return e;
    }
    throw new Error(`unexpected ${JSON.stringify(t)} (use seconds, fps, integers, + - * and parentheses)`);
  }
  function term(): Node {
    let a = factor();
    while (peek() === "*") {
      i++;
      a = { op: "*", a, b: factor() };
    }
    return a;
  }
  function expr(): Node {
    let a = term();
    while (peek() === "+" || peek() === "-") {
      const op = tokens[i++] as "+" | "-";
      a = { op, a, b: term() };
    }
    return a;
  }
  try {
    const tree = expr();
    if (i !== tokens.length) throw new Error(`unexpected ${JSON.stringify(tokens[i])}`);
    return tree;
  } catch (e) {
    return (e as Error).message;
  }
}

function evaluate(node: Node, seconds: number, fps: number): number {
  if ("n" in node) return node.n;
  if ("v" in node) return node.v === "seconds" ? seconds : fps;
  const a = evaluate(node.a, seconds, fps), b = evaluate(node.b, seconds, fps);
  return node.op === "+" ? a + b : node.op === "-" ? a - b : a * b;
}

export type FramesRule = string | Record<string, number>;

/** What is wrong with the rule, or null. */
export function framesProblem(rule: FramesRule | undefined): string | null {
  if (rule === undefined || typeof rule !== "string") return null;
  const tree = parse(rule);
  if (typeof tree === "string") return `${JSON.stringify(rule)} is not a formula: ${tree}`;
  if (evaluate(tree, 1, 16) < 1) return `${JSON.stringify(rule)} gives fewer than 1 frame for 1 second at 16 fps`;
  return null;
}

/** frames(seconds) for a valid rule; a table without that length refuses the job (400 on `seconds`). */
export function framesFunction(rule: FramesRule, fps: number): (seconds: number) => number {
  if (typeof rule !== "string") {
    const valid = Object.keys(rule).map(Number).sort((a, b) => a - b);
    return (seconds) => {
      const frames = rule[String(seconds)];
      if (frames === undefined) throw new PluginError("invalid_request", `this model makes clips of ${valid.join(", ")} seconds, not ${seconds}`, { param: "seconds", code: "unsupported_seconds" });
      return frames;
    };
  }
  const tree = parse(rule) as Node;
  return (seconds) => Math.max(1, Math.round(evaluate(tree, seconds, fps)));
}
