/**
 * Newline-delimited JSON (Ollama's /api/chat and /api/generate streams, many queue APIs): one JSON
 * value per line, yielded as each line completes. Blank lines are skipped; a trailing line without
 * a newline is read at the end. Whether the stream ended where it should (Ollama's `done: true`) is
 * the caller's to judge: throw `stream_interrupted` when it did not.
 */
import { PluginError } from "./errors.ts";

export interface NdjsonOptions {
  /** the longest line, bytes (default 1 MiB) */
  maxLineBytes?: number;
  redact?: (text: string) => string;
}

export async function* readNdjson<T = unknown>(chunks: AsyncIterable<Uint8Array>, opts: NdjsonOptions = {}): AsyncGenerator<T> {
  const max = opts.maxLineBytes ?? 1024 * 1024;
  const redact = opts.redact ?? ((t: string) => t);
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of chunks) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim()) yield parseLine<T>(redact(line));
    }
    // characters, not bytes: a bound, not an exact measure (≤ 4 bytes per character)
    if (buffered.length > max) throw new PluginError("malformed", `upstream sent a line longer than ${max} bytes`);
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield parseLine<T>(redact(buffered));
}

function parseLine<T>(line: string): T {
  try {
    return JSON.parse(line) as T;
  } catch (err) {
    throw new PluginError("malformed", `upstream sent a line that is not JSON: ${JSON.stringify(line.slice(0, 80))}`, { cause: err });
  }
}
