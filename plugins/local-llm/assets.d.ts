// Files imported `with { type: "file" }` (embedded-model.ts, embedded-native.ts) evaluate to their path.
declare module "*.gguf" {
  const path: string;
  export default path;
}
declare module "*.so" {
  const path: string;
  export default path;
}
declare module "*.node" {
  const path: string;
  export default path;
}
