/**
 * The plugin instance as the host calls it: every capability wrapped by checked-instance.ts, so a
 * route or the scheduler gets only results that passed the SDK's checks, errors already branded,
 * and result URLs already downloaded. Host calls pass a HostCall; the wrapper gives the plugin its
 * CallOptions (with a logger bound to the request).
 */
import type {
  ChatCompletionRequest, ChatResult, ChatStreamEvent, EmbeddingsCapability, EmbeddingsRequest, EmbeddingsResult,
  CallTrace, MessagesRequest, MessagesResult, MessagesStreamEvent, ModelInstance, UsageAllowance, VideoCapability, VideoPollResult, VideoRequest, VideoWebhookRequest,
} from "../plugin-sdk/index.ts";

export interface HostCall {
  signal: AbortSignal;
  /** the client's x-request-id; the job id for video calls */
  requestId: string;
  /** what the request may be billed for at most (usage beyond it is a broken plugin) */
  allowed?: UsageAllowance;
  /** told which upstream deployment served the call, after how many attempts (CallOptions.routed) */
  routed?(info: { deployment: string; attempts: number }): void;
  /** the request's trace, for the plugin's upstream requests (CallOptions.trace); absent when tracing is off */
  trace?: CallTrace;
}

export interface HostChat {
  /** the plugin's ChatCapability.countsTokens */
  countsTokens?: boolean;
  complete(body: ChatCompletionRequest, call: HostCall): Promise<ChatResult>;
  /** always present: a plugin without stream() is answered from complete() */
  stream(body: ChatCompletionRequest, call: HostCall): Promise<AsyncIterable<ChatStreamEvent>>;
}

/** A `messages` call: the client's Anthropic headers besides the host's call. */
export interface HostMessagesCall extends HostCall {
  anthropicVersion?: string;
  anthropicBeta?: string[];
}

/** A plugin's native Messages API (MessagesCapability), checked like chat. */
export interface HostMessages {
  create(body: MessagesRequest, call: HostMessagesCall): Promise<MessagesResult>;
  /** absent: the plugin has no stream(); the route streams through `chat` */
  stream?(body: MessagesRequest, call: HostMessagesCall): Promise<AsyncIterable<MessagesStreamEvent>>;
  /** absent: reelay counts the prompt itself */
  countTokens?(body: Omit<MessagesRequest, "max_tokens"> & { max_tokens?: number }, call: HostMessagesCall): Promise<{ input_tokens: number }>;
}

export interface HostEmbeddings extends Omit<EmbeddingsCapability, "embed"> {
  embed(req: EmbeddingsRequest, call: HostCall): Promise<EmbeddingsResult>;
}

/** a result URL has been downloaded and checked: the host only ever sees MP4 bytes */
export type HostPollResult = Exclude<VideoPollResult, { url: string }>;

export interface HostVideo extends Omit<VideoCapability, "submit" | "poll" | "cancel" | "webhook"> {
  submit(req: VideoRequest, call: HostCall): Promise<{ handle: string }>;
  poll(handle: string, call: HostCall): Promise<HostPollResult>;
  cancel?(handle: string, call: HostCall): Promise<void>;
  /** an inbound hook POST, verified by the plugin: whether it was genuine and which jobs to poll now */
  webhook?(req: VideoWebhookRequest, call: HostCall): Promise<{ accepted: boolean; wake: string[] }>;
}

export interface HostInstance extends Pick<ModelInstance, "load" | "unload" | "close" | "upstreams"> {
  chat?: HostChat;
  messages?: HostMessages;
  embeddings?: HostEmbeddings;
  video?: HostVideo;
}
