/** Which methods a path accepts, from the app's own route table (for 405 answers). */
export function routeMethodIndex(routes: Array<{ method: string; path: string }>) {
  const patterns = routes
    .filter((r) => r.method !== "ALL")
    .map((r) => ({ method: r.method, re: new RegExp("^" + r.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+").replace(/\*/g, ".*") + "/?$") }));
  return (path: string) => [...new Set(patterns.filter((p) => p.re.test(path)).map((p) => p.method))];
}
