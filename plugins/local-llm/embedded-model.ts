/**
 * The default model, stories260K (models/README.md), imported as a file: a path into the repository
 * under `bun run`, into the binary's virtual filesystem (/$bunfs/…) when compiled.
 */
import stories260K from "./models/stories260K.gguf" with { type: "file" };

export const embeddedModelPath: string = stories260K;

/** Inside `bun build --compile` output, embedded files live under /$bunfs/, which native code cannot open. */
export const runningCompiled: boolean = embeddedModelPath.startsWith("/$bunfs/");
