/**
 * Where a worker's entry file is. Under `bun`, relative to the calling module. Inside the compiled
 * binary every module is bundled into one file, so `import.meta.url` no longer points at the
 * worker's folder; the worker is an extra entrypoint of the build (compile.sh) and lives at its
 * project-relative path in the binary's file store.
 */
export function workerUrl(callerUrl: string, relative: string, fromProjectRoot: string): string {
  const compiled = callerUrl.includes("/$bunfs/") || callerUrl.includes("%24bunfs");
  return compiled ? `./${fromProjectRoot}` : new URL(relative, callerUrl).href;
}
