/** Plugins compiled into reelay. Adding a provider: its folder under plugins/ and one line here. */
import type { ReelayPlugin } from "../plugin-sdk/index.ts";
import anthropic from "../../plugins/anthropic/index.ts";
import bedrock from "../../plugins/bedrock/index.ts";
import comfyui from "../../plugins/comfyui/index.ts";
import fal from "../../plugins/fal/index.ts";
import gemini from "../../plugins/gemini/index.ts";
import localEmbeddings from "../../plugins/local-embeddings/index.ts";
import localLlm from "../../plugins/local-llm/index.ts";
import openaiCompatible from "../../plugins/openai-compatible/index.ts";
import openaiVideos from "../../plugins/openai-videos/index.ts";
import previewVideo from "../../plugins/preview-video/index.ts";
import remoteGpuVideo from "../../plugins/remote-gpu-video/index.ts";
import replicate from "../../plugins/replicate/index.ts";

export const builtinPlugins: ReelayPlugin[] = [anthropic, bedrock, comfyui, fal, gemini, localEmbeddings, localLlm, openaiCompatible, openaiVideos, previewVideo, remoteGpuVideo, replicate];
