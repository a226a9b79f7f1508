/**
 * OpenAPI of the two video routes that do not answer JSON (content.ts: video/mp4 with byte ranges;
 * events.ts: text/event-stream). The OpenAPI plugin would call every 200 application/json; routes
 * declare these in `detail`, and http/openapi-tidy.ts puts them in place of the plugin's guess.
 */
const header = (description: string, type: "string" | "integer" = "string") => ({ description, schema: { type } });
const MP4_HEADERS = {
  "Content-Length": header("bytes in this response", "integer"),
  "Accept-Ranges": header("always `bytes`"),
  ETag: header("strong: a job's video never changes once completed"),
  "Last-Modified": header("when the job completed"),
  "Cache-Control": header("`private, max-age=<seconds until expires_at>`"),
};
const mp4 = { "video/mp4": { schema: { type: "string" as const, format: "binary" } } };
const requestHeader = (name: string, description: string) => ({ name, in: "header" as const, required: false, description, schema: { type: "string" as const } });

/** GET …/content: the MP4, whole (200) or a range (206), and the request headers it honours */
export const CONTENT_GET_DOCS = {
  parameters: [
    requestHeader("Range", "one byte range, e.g. `bytes=0-1023`, `bytes=1024-`, `bytes=-500` (several ranges: the whole file)"),
    requestHeader("If-Range", "an ETag: the range only if the video still has it, else the whole file"),
    requestHeader("If-None-Match", "an ETag: 304 if it matches"),
  ],
  responses: {
    200: { description: "the whole MP4", headers: MP4_HEADERS, content: mp4 },
    206: { description: "the requested byte range of the MP4", headers: { ...MP4_HEADERS, "Content-Range": header("`bytes <start>-<end>/<size>`") }, content: mp4 },
    304: { description: "not modified (If-None-Match matched)", headers: { ETag: MP4_HEADERS.ETag, "Cache-Control": MP4_HEADERS["Cache-Control"] } },
  },
};

/** HEAD …/content: the same headers, no body */
export const CONTENT_HEAD_DOCS = {
  parameters: CONTENT_GET_DOCS.parameters,
  responses: { 200: { description: "the headers of the whole MP4 (Content-Type video/mp4), no body", headers: MP4_HEADERS }, 304: CONTENT_GET_DOCS.responses[304] },
};

/** GET …/events */
export const EVENTS_DOCS = {
  responses: {
    200: {
      description: "the event stream; it ends after the final event",
      headers: { "Cache-Control": header("`no-cache`") },
      content: {
        "text/event-stream": {
          schema: { type: "string" as const, description: "`retry`, then events with `id`, `event` (video.generation.queued | processing | completed | failed | cancelled) and `data` (the job as JSON, as in the webhook payload's `data`); `: ping` comments keep the connection open" },
          example: 'retry: 2000\n\nid: 1\nevent: video.generation.processing\ndata: {"id":"vid_abc","object":"video.generation","status":"processing","progress":0.35,"urls":{"poll":"…","events":"…"}}\n\n',
        },
      },
    },
  },
};
