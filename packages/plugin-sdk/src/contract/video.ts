/** The video part of the contract (see index.ts). */
import { describe, expect, test } from "bun:test";
import type { VideoPollResult, VideoRequest } from "../capabilities.ts";
import { isMp4, problemWithHandle, problemWithPollResult } from "../checks.ts";
import { fetchBytes, testCall } from "../testing.ts";
import { expectFailure, HTTP_EXPECTATIONS, sleep, thrownBy, withScenario } from "./failures.ts";
import type { ContractHarness } from "./index.ts";

export interface VideoContractOptions {
  request?: Partial<VideoRequest>;
  /** how long one job may take to finish (default 30 s) */
  timeoutMs?: number;
}

/** 32x32 RGB gradient PNG, a valid source image for video plugins. */
export const CONTRACT_PNG: Uint8Array = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAAGyElEQVR4XhXUEdvGIBiG4ReHw+FwOBwOh8PhcDgMLwzDMAzDMAzDMAzD8NvXD+jseLqf+/f7MfwYf0w/5h/Lj/XH9mP/cfw4f1w/7h/Pj/eH+MEP+UP90D/MD/vD/fA/wo/4I/3IP8qP+qP96D9+v4FhYByYBuaBZWAd2Ab2gWPgHLgG7oFn4B0QAwzIATWgB8yAHXADfiAMxIE0kAfKQB1oA334gJFhZByZRuaRZWQd2Ub2kWPkHLlG7pFn5B0RI4zIETWiR8yIHXEjfiSMxJE0kkfKSB1pI338gIlhYpyYJuaJZWKd2Cb2iWPinLgm7oln4p0QE0zICTWhJ8yEnXATfiJMxIk0kSfKRJ1oE336gJlhZpyZZuaZZWad2Wb2mWPmnLlm7pln5p0RM8zIGTWjZ8yMnXEzfibMxJk0k2fKTJ1pM33+gIVhYVyYFuaFZWFd2Bb2hWPhXLgW7oVn4V0QCyzIBbWgF8yCXXALfiEsxIW0kBfKQl1oC335gJVhZVyZVuaVZWVd2Vb2lWPlXLlW7pVn5V0RK6zIFbWiV8yKXXErfiWsxJW0klfKSl1pK339gI1hY9yYNuaNZWPd2Db2jWPj3Lg27o1n490QG2zIDbWhN8yG3XAbfiNsxI20kTfKRt1oG337gJ1hZ9yZduadZWfd2Xb2nWPn3Ll27p1n590RO+zIHbWjd8yO3XE7fifsxJ20k3fKTt1pO33/gIPhYDyYDuaD5WA92A72g+PgPLgO7oPn4D0QBxzIA3WgD8yBPXAH/iAcxIN0kA/KQT1oB/34gJPhZDyZTuaT5WQ92U72k+PkPLlO7pPn5D0RJ5zIE3WiT8yJPXEn/iScxJN0kk/KST1pJ/38gIvhYryYLuaL5WK92C72i+PivLgu7ovn4r0QF1zIC3WhL8yFvXAX/iJcxIt0kS/KRb1oF/36gJvhZryZbuab5Wa92W72m+PmvLlu7pvn5r0RN9zIG3Wjb8yNvXE3/ibcxJt0k2/KTb1pN/3+gIfhYXyYHuaH5WF92B72h+PhfLge7ofn4X0QDzzIB/WgH8yDfXAP/iE8xIf0kB/KQ31oD/35gJfhZXyZXuaX5WV92V72l+PlfLle7pfn5X0RL7zIF/WiX8yLfXEv/iW8xJf0kl/KS31pL/39AMEgGAWTYBYsglWwCXbBITgFl+AWPIJXIAQIpEAJtMAIrMAJvCAIoiAJsqAIqqAJuviA/wL+KvIrsa9mviL4VvVbpi/uXyC/yHyf+o39G8z39O/y/yNBgQYDFhx4CBAhQYYCFRp0PkAySEbJJJkli2SVbJJdckhOySW5JY/klQjJd72UKImWGImVOImXBEmUJEmWFEmVNEmXH6AYFKNiUsyKRbEqNsWuOBSn4lLcikfxKoTie7xUKIVWGIVVOIVXBEVUJEVWFEVVNEVXH6AZNKNm0syaRbNqNs2uOTSn5tLcmkfzaoTmG43UKI3WGI3VOI3XBE3UJE3WFE3VNE3XH2AYDKNhMsyGxbAaNsNuOAyn4TLchsfwGoThG7w0KIM2GIM1OIM3BEM0JEM2FEM1NEM3H2AZLKNlssyWxbJaNstuOSyn5bLclsfyWoTl+1ZpURZtMRZrcRZvCZZoSZZsKZZqaZZuP8AxOEbH5Jgdi2N1bI7dcThOx+W4HY/jdQjHFxrpUA7tMA7rcA7vCI7oSI7sKI7qaI7uPsAzeEbP5Jk9i2f1bJ7dc3hOz+W5PY/n9QjPF0npUR7tMR7rcR7vCZ7oSZ7sKZ7qaZ7uPyAwBMbAFJgDS2ANbIE9cATOwBW4A0/gDYjAF3gZUAEdMAEbcAEfCIEYSIEcKIEaaIEePiAyRMbIFJkjS2SNbJE9ckTOyBW5I0/kjYjIt04yoiI6YiI24iI+EiIxkiI5UiI10iI9fkBiSIyJKTEnlsSa2BJ74kiciStxJ57EmxCJb1llQiV0wiRswiV8IiRiIiVyoiRqoiV6+oDMkBkzU2bOLJk1s2X2zJE5M1fmzjyZNyMyXxXIjMrojMnYjMv4TMjETMrkTMnUTMv0/AGFoTAWpsJcWAprYSvshaNwFq7CXXgKb0EUvqKRBVXQBVOwBVfwhVCIhVTIhVKohVbo5QMqQ2WsTJW5slTWylbZK0flrFyVu/JU3oqofDUmK6qiK6ZiK67iK6ESK6mSK6VSK63S6wc0hsbYmBpzY2msja2xN47G2bgad+NpvA3R+EpSNlRDN0zDNlzDN0IjNlIjN0qjNlqjtw/oDJ2xM3XmztJZO1tn7xyds3N17s7TeTui81Ww7KiO7piO7biO74RO7KRO7pRO7bRO7/wBNArgTDhyE8AAAAAASUVORK5CYII="),
  (c) => c.charCodeAt(0),
);

export function videoContract(h: ContractHarness): void {
  const video = () => h.instance().video!;
  const request = (over: Partial<VideoRequest> = {}): VideoRequest => ({
    jobId: `vid_contract_${crypto.randomUUID().slice(0, 8)}`, prompt: "a slow zoom", image: { bytes: CONTRACT_PNG, mime: "image/png" },
    width: 480, height: 832, seconds: 1, seed: 7, ...h.opts.video?.request, ...over,
  });
  const timeoutMs = () => h.opts.video?.timeoutMs ?? 30_000;
  const submit = async (over: Partial<VideoRequest> = {}) => {
    const r = await video().submit(request(over), testCall());
    expect(problemWithHandle(r)).toBeNull();
    return r.handle;
  };
  const pollUntilFinal = async (handle: string): Promise<VideoPollResult> => {
    const until = Date.now() + timeoutMs();
    for (;;) {
      const r = await video().poll(handle, testCall());
      expect(problemWithPollResult(r)).toBeNull();
      if (r.state !== "queued" && r.state !== "running") return r;
      if (Date.now() > until) throw new Error(`job still ${r.state} after ${timeoutMs()} ms`);
      await sleep(Math.min(video().pollIntervalMs ?? 200, 200));
    }
  };

  describe("video", () => {
    test("submit gives a string handle that polls through queued/running (progress 0–1) to an MP4", async () => {
      const last = await pollUntilFinal(await submit());
      expect(last.state).toBe("succeeded");
      if (last.state !== "succeeded") return;
      const bytes = "mp4" in last ? last.mp4 : (await fetchBytes(last.url, { maxBytes: 256 * 1024 * 1024, timeoutMs: 60_000 })).bytes;
      expect({ startsWithFtypBox: isMp4(bytes) }).toEqual({ startsWithFtypBox: true });
    });

    test("an unknown handle polls as lost", async () => {
      expect(await video().poll(`unknown-${crypto.randomUUID()}`, testCall())).toEqual({ state: "lost" });
    });

    test("a cancelled job never succeeds", async () => {
      if (typeof video().cancel !== "function") return;
      const handle = await submit({ seconds: 3 });
      await video().cancel!(handle, testCall());
      expect(["failed", "lost"]).toContain((await pollUntilFinal(handle)).state);
    });

    test("a webhook that is not genuine is refused (accepted: false, nothing to wake), never thrown", async () => {
      if (typeof video().webhook !== "function") return;
      const forged = JSON.stringify({ id: "forged", status: "succeeded", output: "https://example.com/v.mp4" });
      const headers = { "content-type": "application/json", "webhook-id": "msg_forged", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": "v1,Zm9yZ2Vk" };
      for (const token of ["contract-unknown-token", ""]) {
        const r = await video().webhook!({ token, headers, body: new TextEncoder().encode(forged) }, testCall());
        expect({ accepted: r?.accepted, wake: r?.wake ?? [] }).toEqual({ accepted: false, wake: [] });
      }
    });

    const f = h.opts.failures;
    if (!f) return;
    describe("failures: retried or not, as the scheduler decides", () => {
      if (f.httpStatus) {
        for (const [status, want] of HTTP_EXPECTATIONS) {
          test(`submit answered HTTP ${status} → ${want.retryable ? "retried" : "the job fails"}`, async () => {
            await withScenario(f, () => f.httpStatus!(status), async () => expectFailure(await thrownBy(() => video().submit(request(), testCall())), want, "submit()"));
          });
        }
      }
      if (f.unreachable) {
        test("provider unreachable → connect, retried", async () => {
          await withScenario(f, f.unreachable!, async () => expectFailure(await thrownBy(() => video().submit(request(), testCall())), { status: 502, retryable: true, kind: "connect" }, "submit()"));
        });
      }
      if (f.hang && f.shortTimeouts) {
        test("provider never answers → timeout, retried", async () => {
          const quick = await h.create(f.shortTimeouts);
          await withScenario(f, f.hang!, async () => expectFailure(await thrownBy(() => quick.video!.submit(request(), testCall())), { status: 504, retryable: true, kind: "timeout" }, "submit()"));
        });
      }
      if (f.jobFails) {
        test("a job the provider fails for good → state failed with a code, not retried", async () => {
          await withScenario(f, f.jobFails!, async () => {
            const last = await pollUntilFinal(await submit());
            expect(last.state).toBe("failed");
            if (last.state === "failed") expect(last.retryable ?? false).toBe(false);
          });
        });
      }
    });
  });
}
