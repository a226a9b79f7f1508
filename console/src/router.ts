/** Hash routes (#/accounts/acct_1): the server serves one page, and nothing sensitive is in the path. */
import { useEffect, useState } from "preact/hooks";

export function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, "").split("?")[0]!.split("/").filter(Boolean).map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => setParts(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return parts;
}

export const go = (path: string) => {
  location.hash = "#/" + path;
};
