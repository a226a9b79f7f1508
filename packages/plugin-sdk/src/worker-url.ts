/**
 * Where a worker's entry file is. Under `bun`, relative to the calling module. Inside reelay's
 * compiled binary every module is bundled into one file, so `import.meta.url` no longer points at
 * the worker's folder; a built-in plugin's worker is an extra entrypoint of the build (compile.sh)
 * and lives at its project-relative path in the binary's file store. (An external plugin ships its
 * worker as a second file beside its index.js and uses `new URL("./worker.js", import.meta.url)`.)
 */
export function workerUrl(callerUrl: string, relative: string, fromProjectRoot: string): string {
  const compiled = callerUrl.includes("/$bunfs/") || callerUrl.includes("%24bunfs");
  return compiled ? `./${fromProjectRoot}` : new URL(relative, callerUrl).href;
}
