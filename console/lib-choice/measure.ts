#!/usr/bin/env bun
/**
 * How the console's libraries were chosen: the same minimal view (a searchable 50-row table with a
 * button) in Preact and in Lit, and the same time-series chart with uPlot and with Chart.js, each
 * bundled the way console/build.ts bundles the console (Bun.build, minified, browser, ESM), then
 * gzip -9. Prints one table; see console/README.md.
 *
 * Lit and Chart.js are not reelay dependencies; install them without saving first:
 *   npm install --no-save lit@3 chart.js@4 && bun console/lib-choice/measure.ts
 */
import { join } from "node:path";

const HERE = import.meta.dir;
const entries: Array<[string, string]> = [
  ["Preact view", "view-preact.tsx"],
  ["Lit view", "view-lit.ts"],
  ["uPlot chart", "chart-uplot.ts"],
  ["Chart.js chart", "chart-chartjs.ts"],
];

for (const pkg of ["lit", "chart.js"]) {
  try {
    require.resolve(pkg, { paths: [HERE] });
  } catch {
    console.error(`${pkg} is not installed: npm install --no-save lit@3 chart.js@4`);
    process.exit(1);
  }
}

const version = (pkg: string) => require(require.resolve(`${pkg}/package.json`, { paths: [HERE] })).version as string;
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
console.log(`preact ${version("preact")}, lit ${version("lit")}, uplot ${version("uplot")}, chart.js ${version("chart.js")}; Bun ${Bun.version}\n`);
console.log("| bundle | minified | gzip -9 |\n|---|---:|---:|");
for (const [name, file] of entries) {
  const r = await Bun.build({ entrypoints: [join(HERE, file)], minify: true, target: "browser", format: "esm", define: { "process.env.NODE_ENV": '"production"' } });
  if (!r.success) throw new AggregateError(r.logs, `${file} did not build`);
  const js = await r.outputs.find((o) => o.kind === "entry-point")!.text();
  console.log(`| ${name} | ${kb(js.length)} | ${kb(Bun.gzipSync(new TextEncoder().encode(js), { level: 9 }).length)} |`);
}
