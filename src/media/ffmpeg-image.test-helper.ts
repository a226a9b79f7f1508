/** Test-only: a real camera-sized image made by ffmpeg (testsrc2 pattern), so no large fixture is committed. */
export type GeneratedFormat = "jpeg-444" | "jpeg-420" | "png" | "webp";

const ARGS: Record<GeneratedFormat, { ext: string; args: string[] }> = {
  "jpeg-444": { ext: "jpg", args: ["-pix_fmt", "yuvj444p", "-q:v", "3"] },
  "jpeg-420": { ext: "jpg", args: ["-pix_fmt", "yuvj420p", "-q:v", "3"] }, // how phones save photos
  png: { ext: "png", args: ["-pix_fmt", "rgb24"] },
  webp: { ext: "webp", args: ["-c:v", "libwebp", "-quality", "80"] },
};

export async function ffmpegImage(width: number, height: number, format: GeneratedFormat): Promise<Uint8Array> {
  const { ext, args } = ARGS[format];
  const path = `/tmp/reelay-img-${process.pid}-${crypto.randomUUID()}.${ext}`;
  try {
    const proc = Bun.spawn(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=${width}x${height}`, "-frames:v", "1", "-vf", `scale=${width}:${height}`, ...args, path], { stdout: "ignore", stderr: "pipe" });
    const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`ffmpeg could not make a ${width}x${height} ${format}: ${err}`);
    return await Bun.file(path).bytes();
  } finally {
    await Bun.file(path).delete().catch(() => {});
  }
}
