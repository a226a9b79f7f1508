// Tests read many JSON bodies of known shape; let `res.json()` be `any` there instead of `unknown`
// (an overload merged into the global Response; product code under src/ is unaffected at run time).
declare global {
  interface Response {
    json(): Promise<any>;
  }
}
export {};
