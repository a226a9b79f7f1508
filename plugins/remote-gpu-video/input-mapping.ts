/**
 * How reelay's video request becomes the worker's `input` object: the SDK's input mapping
 * (packages/plugin-sdk/src/input-mapping.ts, shared with the replicate and fal plugins), with
 * this plugin's defaults — image as base64, seconds as `seconds`, size as `width` and `height`.
 */
export { buildInput, problemsWithMapping, DEFAULT_INPUT_MAPPING as DEFAULT_MAPPING, INPUT_SOURCES as SOURCES, type InputMapping, type InputSource as Source } from "@reelay/plugin-sdk";
