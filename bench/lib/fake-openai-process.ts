/** Start bench/lib/fake-openai-child.ts as a process of its own: its base URL and `stop()`. */
import { join } from "node:path";

export async function spawnFakeOpenAI(tokens = 8): Promise<{ url: string; stop(): Promise<void> }> {
  const proc = Bun.spawn(["bun", join(import.meta.dir, "fake-openai-child.ts"), String(tokens)], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the fake upstream exited before printing its URL");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return {
    url: text.split("\n")[0]!.trim(),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}
