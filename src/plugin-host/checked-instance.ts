/**
 * The instance the host calls for a model: each capability the plugin implements, checked
 * (checked-chat.ts, checked-embeddings.ts, checked-video.ts); load, unload and close passed through.
 */
import type { ModelInstance } from "../plugin-sdk/index.ts";
import { checkedChat } from "./checked-chat.ts";
import { checkedEmbeddings } from "./checked-embeddings.ts";
import { checkedVideo, type VideoSite } from "./checked-video.ts";
import { PluginCalls } from "./plugin-calls.ts";
import type { HostInstance } from "./types.ts";

export function checkedInstance(instance: ModelInstance, site: VideoSite): HostInstance {
  const calls = new PluginCalls(site);
  return {
    chat: instance.chat ? checkedChat(instance.chat, site, calls) : undefined,
    embeddings: instance.embeddings ? checkedEmbeddings(instance.embeddings, site, calls) : undefined,
    video: instance.video ? checkedVideo(instance.video, site, calls) : undefined,
    load: instance.load?.bind(instance),
    unload: instance.unload?.bind(instance),
    close: instance.close?.bind(instance),
  };
}
