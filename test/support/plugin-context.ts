/**
 * The SDK's test context with reelay's real host services (H.264 encoder workers, image decoder,
 * cl100k token counter) and the real SSRF-guarded download, for tests of reelay's own plugins and
 * for the contract runs of test/plugin-contract.
 */
import { testPluginContext, type TestContextOverrides } from "@reelay/plugin-sdk/testing";
import { hostServices, safeFetchBytes } from "../../src/plugin-host/host-services.ts";

export { testCall, recordingLogger } from "@reelay/plugin-sdk/testing";
import { testCall } from "@reelay/plugin-sdk/testing";
import { expect } from "bun:test";

/** context overrides giving a plugin reelay's real host services */
export function realHost(over: TestContextOverrides = {}): TestContextOverrides {
  return { safeFetchBytes, ...over, host: { ...hostServices(), ...over.host } };
}

export function hostTestContext(options: Record<string, unknown> = {}, overrides: TestContextOverrides = {}) {
  return testPluginContext(options, realHost(overrides));
}

/**
 * A held job (the fake's `hold()` before submit) polls `queued`, then, held at 40 %, `running` with a
 * progress in (0, 1); then the fake runs it. Each state is seen whatever the machine's speed.
 */
export async function expectQueuedThenRunning(video: { poll(handle: string, call: ReturnType<typeof testCall>): Promise<{ state: string; progress?: number }> }, handle: string, fake: { hold(percent?: number): void; release(): void }) {
  expect((await video.poll(handle, testCall())).state).toBe("queued");
  fake.hold(40);
  const running = await video.poll(handle, testCall());
  expect(running.state === "running" && running.progress! > 0 && running.progress! < 1 ? "running with progress" : running).toBe("running with progress");
  fake.release();
}
