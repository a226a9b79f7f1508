/**
 * The fake OpenAI upstream in a process of its own (`bun bench/lib/fake-openai-child.ts [tokens]`):
 * prints its base URL as the first line of stdout and serves until killed. A bench that measures a
 * client's latency runs the upstream here, so the upstream's work for the load does not delay the
 * measuring client's event loop.
 */
import { startFakeOpenAI } from "../../test/fakes/openai-upstream.ts";

const fake = await startFakeOpenAI({ tokens: Number(process.argv[2] ?? 8) });
// the bench sends tens of thousands of requests: keep none of them
setInterval(() => fake.requests.splice(0), 1000);
console.log(fake.url);
process.on("SIGTERM", async () => {
  await fake.stop();
  process.exit(0);
});

