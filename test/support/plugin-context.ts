/**
 * The SDK's test context with reelay's real host services (H.264 encoder workers, image decoder,
 * cl100k token counter) and the real SSRF-guarded download, for tests of reelay's own plugins and
 * for the contract runs of test/plugin-contract.
 */
import { testPluginContext, type TestContextOverrides } from "@reelay/plugin-sdk/testing";
import { hostServices, safeFetchBytes } from "../../src/plugin-host/host-services.ts";

export { testCall, recordingLogger } from "@reelay/plugin-sdk/testing";

/** context overrides giving a plugin reelay's real host services */
export function realHost(over: TestContextOverrides = {}): TestContextOverrides {
  return { safeFetchBytes, ...over, host: { ...hostServices(), ...over.host } };
}

export function hostTestContext(options: Record<string, unknown> = {}, overrides: TestContextOverrides = {}) {
  return testPluginContext(options, realHost(overrides));
}
