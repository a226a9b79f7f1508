/** Test-only: ffprobe a file (never used by product code). */
export async function ffprobe(bytes: Uint8Array): Promise<{ streams: any[]; format: any }> {
  const path = `/tmp/reelay-ffprobe-${process.pid}-${crypto.randomUUID()}.mp4`;
  await Bun.write(path, bytes);
  try {
    const proc = Bun.spawn(["ffprobe", "-v", "error", "-count_frames", "-show_streams", "-show_format", "-of", "json", path], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0 || err.trim()) throw new Error(`ffprobe failed (${code}): ${err}`);
    return JSON.parse(out);
  } finally {
    await Bun.file(path).delete();
  }
}
