// A receiver for reelay's webhooks: REELAY_WEBHOOK_SECRET=whsec_… bun examples/webhook-receiver.ts
import { Webhook, WebhookVerificationError } from "standardwebhooks";

interface VideoEvent {
  type: "video.generation.completed" | "video.generation.failed" | "video.generation.cancelled" | "video.generation.processing";
  timestamp: string;
  data: { id: string; status: string; error?: { code: string; message: string }; urls: { poll: string; events: string; content?: string } };
}

const webhook = new Webhook(process.env.REELAY_WEBHOOK_SECRET!); // the whsec_… secret reelay showed once
const seen = new Set<string>(); // deliveries are at-least-once: keep this in your database

const server = Bun.serve({
  port: Number(process.env.PORT ?? 3000),
  async fetch(req) {
    const body = await req.text(); // verify the raw bytes, before parsing them
    let event: VideoEvent;
    try {
      // checks webhook-signature (HMAC-SHA256 of "id.timestamp.body") and a timestamp within 5 minutes
      event = webhook.verify(body, Object.fromEntries(req.headers)) as VideoEvent;
    } catch (e) {
      if (e instanceof WebhookVerificationError) return new Response("invalid signature", { status: 400 });
      throw e;
    }
    const id = req.headers.get("webhook-id")!; // the same on every retry and replay of this event
    if (!seen.has(id)) {
      seen.add(id);
      console.log(JSON.stringify({ webhookId: id, type: event.type, job: event.data.id, download: event.data.urls.content ?? null }));
    }
    return new Response(null, { status: 204 }); // any 2xx within 10 s; slow work goes after answering
  },
});
console.log(`listening on ${server.url}`);
