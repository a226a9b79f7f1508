/**
 * Span attribute names. The gen_ai.* ones are the OpenTelemetry GenAI semantic conventions
 * (still "development" status, so not in @opentelemetry/semantic-conventions' stable entry; its
 * incubating entry is a ~1 MB module for these few strings); reelay.* are reelay's own.
 */
export const GEN_AI = {
  operation: "gen_ai.operation.name",
  provider: "gen_ai.provider.name",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  responseId: "gen_ai.response.id",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  finishReasons: "gen_ai.response.finish_reasons",
  maxTokens: "gen_ai.request.max_tokens",
  /** only with REELAY_TRACE_CONTENT=true */
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
} as const;

export const REELAY = {
  requestId: "reelay.request_id",
  accountId: "reelay.account.id",
  keyId: "reelay.key.id",
  /** what the request was charged, micro-dollars */
  chargeMicros: "reelay.charge.micros",
  /** what was held before the call, micro-dollars */
  holdMicros: "reelay.hold.micros",
  deployment: "reelay.deployment",
  attempts: "reelay.attempts",
  attempt: "reelay.attempt",
  route: "reelay.route",
  requestedModel: "reelay.requested_model",
  jobId: "reelay.job.id",
  batchId: "reelay.batch.id",
  batchCustomId: "reelay.batch.custom_id",
  /** 1-based line of the input file */
  batchLine: "reelay.batch.line",
  /** completed | failed */
  batchOutcome: "reelay.batch.outcome",
  disconnected: "reelay.client_disconnected",
} as const;
