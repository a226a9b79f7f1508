/** Bundle a plugin's source into one ES module, as a provider's `bun build` does (it carries its own copy of the SDK). */
export async function bundlePlugin(entry: string, outfile: string): Promise<void> {
  const out = await Bun.build({ entrypoints: [entry], target: "bun", format: "esm" });
  if (!out.success) throw new AggregateError(out.logs, `bundling ${entry} failed`);
  await Bun.write(outfile, await out.outputs[0]!.text());
}
