/**
 * The instance the host calls for a model: each capability the plugin implements, checked
 * (checked-chat.ts, checked-messages.ts, checked-embeddings.ts, checked-video.ts); load, unload and
 * close passed through.
 */
import type { DeploymentStatus, ModelInstance } from "../plugin-sdk/index.ts";
import { checkedChat } from "./checked-chat.ts";
import { checkedEmbeddings } from "./checked-embeddings.ts";
import { checkedMessages } from "./checked-messages.ts";
import { checkedVideo, type VideoSite } from "./checked-video.ts";
import { PluginCalls } from "./plugin-calls.ts";
import type { HostInstance } from "./types.ts";

/** The plugin's deployment report, or none when it throws or answers something else than a list (logged once per scrape). */
function checkedUpstreams(read: () => DeploymentStatus[], site: VideoSite): () => DeploymentStatus[] {
  return () => {
    try {
      const list = read();
      if (Array.isArray(list)) return list;
      site.logger.warn({ plugin: site.plugin, model: site.model }, "upstreams() did not return a list");
    } catch (err) {
      site.logger.warn({ plugin: site.plugin, model: site.model, err: site.secrets ? site.secrets.redactValue(err) : err }, "upstreams() threw");
    }
    return [];
  };
}

export function checkedInstance(instance: ModelInstance, site: VideoSite): HostInstance {
  const calls = new PluginCalls(site);
  return {
    chat: instance.chat ? checkedChat(instance.chat, site, calls) : undefined,
    messages: instance.messages ? checkedMessages(instance.messages, site, calls) : undefined,
    embeddings: instance.embeddings ? checkedEmbeddings(instance.embeddings, site, calls) : undefined,
    video: instance.video ? checkedVideo(instance.video, site, calls) : undefined,
    load: instance.load?.bind(instance),
    unload: instance.unload?.bind(instance),
    close: instance.close?.bind(instance),
    upstreams: typeof instance.upstreams === "function" ? checkedUpstreams(instance.upstreams.bind(instance), site) : undefined,
  };
}
