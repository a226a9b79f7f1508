/**
 * Files read at run time, imported so `bun build --compile` embeds them in the binary.
 * Under plain `bun` these are paths on disk; in the binary they are paths into its embedded store.
 */
// @ts-ignore: file imports
import pgliteWasm from "../../node_modules/@electric-sql/pglite/dist/pglite.wasm" with { type: "file" };
// @ts-ignore
import initdbWasm from "../../node_modules/@electric-sql/pglite/dist/initdb.wasm" with { type: "file" };
// @ts-ignore
import pgliteData from "../../node_modules/@electric-sql/pglite/dist/pglite.data" with { type: "file" };

export const pgliteAssets = { pgliteWasm: pgliteWasm as string, initdbWasm: initdbWasm as string, pgliteData: pgliteData as string };
