/**
 * @reelay/plugin-sdk: everything a reelay provider plugin may rely on, and nothing of reelay's
 * core. Built-in plugins (reelay's plugins/*) and external plugins dropped into a plugins
 * directory use exactly this API. Guide: docs/writing-a-plugin.md in the reelay repository.
 */
export { PLUGIN_API_VERSION, SDK_VERSION } from "./version.ts";
export { definePlugin, type ReelayPlugin, type PluginDefinition, type OptionsOf, type PluginContext, type VideoHostHooks, type HostServices, type DecodedImage, type ModelDeclaration, type ModelPricing } from "./plugin.ts";
export {
  CAPABILITIES, MAX_HANDLE_LENGTH, DEFAULT_VIDEO_SIZES, DEFAULT_VIDEO_SECONDS,
  type Capability, type CallOptions, type CallTrace, type AttemptTrace, type PluginLogger, type ModelInstance,
  type ChatCapability, type ChatResult, type ChatStreamEvent, type TokenUsage,
  type MessagesCapability, type MessagesCallOptions, type MessagesResult,
  type EmbeddingsCapability, type EmbeddingsRequest, type EmbeddingsResult,
  type VideoCapability, type VideoRequest, type VideoPollResult, type VideoWebhookRequest, type VideoWebhookResult,
} from "./capabilities.ts";
export type * from "./openai-chat.ts";
export { chatUsageOfMessages, type AnthropicMessage, type MessagesContentBlock, type MessagesInputMessage, type MessagesRequest, type MessagesStreamEvent, type MessagesUsage } from "./anthropic-messages.ts";
export { PluginError, isPluginError, readPluginError, defaultRetryable, PLUGIN_ERROR_KINDS, PLUGIN_ERROR_BRAND, type PluginErrorKind, type PluginErrorOptions, type PluginErrorFields } from "./errors.ts";
export { describeFailure, type ClientFailure, type ClientErrorType } from "./failure.ts";
export { callUpstream, UpstreamResponse, DEFAULT_UPSTREAM_TIMEOUTS, DEFAULT_MAX_BODY_BYTES, type UpstreamRequest, type UpstreamOptions, type UpstreamTimeouts } from "./upstream.ts";
export { parseErrorBody, upstreamHttpError, type ErrorBody } from "./error-body.ts";
export { readSse, readMessagesSse, readJsonSse, type SseOptions } from "./sse.ts";
export { readNdjson, type NdjsonOptions } from "./ndjson.ts";
export { chatChunks, chunkEvent, usageOf, DONE_EVENT, type ChunkOptions } from "./chunks.ts";
export { SafeFetchError, isSafeFetchError, downloadFailure, readBodyCapped, SAFE_FETCH_ERROR_BRAND, type SafeFetchOptions, type SafeFetchErrorCode } from "./safe-fetch.ts";
export { problemWithUsage, problemWithChatResult, problemWithStreamEvent, problemWithMessagesResult, problemWithMessagesEvent, problemWithTokenCount, problemWithEmbeddings, problemWithHandle, problemWithPollResult, problemsWithInstance, isMp4, show, type UsageAllowance } from "./checks.ts";
export { problemsWithPricing, isVideoSize } from "./pricing.ts";
export { Type, type Static, type TSchema, type TObject } from "./options.ts";
export { workerUrl } from "./worker-url.ts";
export { checkOptions, type OptionProblem } from "./option-check.ts";
export { UpstreamRouter, Deployment, DEFAULT_BREAKER, LATENCY_BUCKETS_SECONDS, type LatencyHistogram, type DeploymentSpec, type BreakerPolicy, type CircuitState, type AttemptOutcome, type DeploymentStatus } from "./router.ts";
export { routedCall, outcomeOf, Lease, DEFAULT_RETRY, leasedStream, retryableBeforeFirstEvent, type RetryBudget, type RoutedResult } from "./routed-call.ts";
export { RoutingOptions, DeploymentName, EnvVarName, DeploymentWeight, DeploymentMaxConcurrent, deploymentNames, deploymentProblems, UpstreamTimeoutOptions } from "./routing-options.ts";
export { redactor, urlPassword, REDACTED, type Redact } from "./redact.ts";
export { retryAfterSeconds } from "./error-body.ts";
export { VideoJobRouter, type VideoJobRouterOptions } from "./video-jobs.ts";
export { verifyStandardWebhook, type WebhookCheck } from "./standard-webhooks.ts";
export { buildInput, problemsWithMapping, aspectRatio, resolution, DEFAULT_INPUT_MAPPING, INPUT_SOURCES, type InputMapping, type InputSource } from "./input-mapping.ts";
