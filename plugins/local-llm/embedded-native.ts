/**
 * node-llama-cpp's prebuilt CPU binaries for linux-x64 (the addon, llama.cpp, ggml and ggml's CPU
 * backend variants, one per instruction-set level: ggml picks the best one for the CPU at load),
 * imported as files so `bun build --compile` embeds them (~30 MB). The native loader cannot read the
 * binary's virtual filesystem, so load-llama.ts writes them to a private temporary directory, loads
 * them and deletes the directory. Imported only inside the compiled binary (dynamic import), so
 * `bun run` on another platform never resolves these paths.
 */
import buildMetadata from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/_nlcBuildMetadata.json" with { type: "file" };
import ggmlBase from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so" with { type: "file" };
import ggmlCpuAlderlake from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-alderlake.so" with { type: "file" };
import ggmlCpuCannonlake from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-cannonlake.so" with { type: "file" };
import ggmlCpuCascadelake from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-cascadelake.so" with { type: "file" };
import ggmlCpuCooperlake from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-cooperlake.so" with { type: "file" };
import ggmlCpuHaswell from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-haswell.so" with { type: "file" };
import ggmlCpuIcelake from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-icelake.so" with { type: "file" };
import ggmlCpuIvybridge from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-ivybridge.so" with { type: "file" };
import ggmlCpuPiledriver from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-piledriver.so" with { type: "file" };
import ggmlCpuSandybridge from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-sandybridge.so" with { type: "file" };
import ggmlCpuSapphirerapids from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-sapphirerapids.so" with { type: "file" };
import ggmlCpuSkylakex from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-skylakex.so" with { type: "file" };
import ggmlCpuSse42 from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-sse42.so" with { type: "file" };
import ggmlCpuX64 from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-x64.so" with { type: "file" };
import ggmlCpuZen4 from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-zen4.so" with { type: "file" };
import ggml from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml.v0.5.0.so" with { type: "file" };
import llamaCommon from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama-common.so" with { type: "file" };
import llama from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so" with { type: "file" };
import addon from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node" with { type: "file" };

/** file name (as the addon's RUNPATH $ORIGIN and ggml's backend search expect it) → embedded path */
export const embeddedNativeFiles: Record<string, string> = {
  "_nlcBuildMetadata.json": buildMetadata as unknown as string,
  "libggml-base.so": ggmlBase as unknown as string,
  "libggml-cpu-alderlake.so": ggmlCpuAlderlake as unknown as string,
  "libggml-cpu-cannonlake.so": ggmlCpuCannonlake as unknown as string,
  "libggml-cpu-cascadelake.so": ggmlCpuCascadelake as unknown as string,
  "libggml-cpu-cooperlake.so": ggmlCpuCooperlake as unknown as string,
  "libggml-cpu-haswell.so": ggmlCpuHaswell as unknown as string,
  "libggml-cpu-icelake.so": ggmlCpuIcelake as unknown as string,
  "libggml-cpu-ivybridge.so": ggmlCpuIvybridge as unknown as string,
  "libggml-cpu-piledriver.so": ggmlCpuPiledriver as unknown as string,
  "libggml-cpu-sandybridge.so": ggmlCpuSandybridge as unknown as string,
  "libggml-cpu-sapphirerapids.so": ggmlCpuSapphirerapids as unknown as string,
  "libggml-cpu-skylakex.so": ggmlCpuSkylakex as unknown as string,
  "libggml-cpu-sse42.so": ggmlCpuSse42 as unknown as string,
  "libggml-cpu-x64.so": ggmlCpuX64 as unknown as string,
  "libggml-cpu-zen4.so": ggmlCpuZen4 as unknown as string,
  "libggml.v0.5.0.so": ggml as unknown as string,
  "libllama-common.so": llamaCommon as unknown as string,
  "libllama.v0.5.0.so": llama as unknown as string,
  "llama-addon.node": addon as unknown as string,
};
