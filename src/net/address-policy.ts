/**
 * Which addresses a server-side download may connect to. Allow-list, not deny-list: an IPv4
 * address must be plain public unicast, an IPv6 address must be public unicast inside 2000::/3
 * (the only block IANA hands out for global routing). Every range ipaddr.js names (loopback,
 * private, link-local incl. 169.254.169.254, CGNAT, multicast, broadcast, reserved, unique-local,
 * documentation, benchmarking, ...) is therefore refused without listing it here.
 */
import ipaddr from "ipaddr.js";

/** IPv6 forms that carry an IPv4 address in their low 32 bits: judged by that IPv4 address. */
const EMBEDS_IPV4_LOW_32 = new Set(["ipv4Mapped", "rfc6145"]);
/** 64:ff9b::/96, the well-known NAT64 prefix (DNS64 networks hand these out for public hosts). */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/**
 * Names that point inside the machine or the cloud account whatever DNS says. `*.internal` covers
 * metadata.google.internal and cloud-internal zones; single-label names ("metadata", "redis") only
 * exist on search domains of private networks.
 */
export function isBlockedHostname(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  if (!name.includes(".")) return true;
  return [".localhost", ".internal", ".local", ".home.arpa", ".localdomain"].some(
    (suffix) => name.endsWith(suffix) || name === suffix.slice(1),
  );
}

/** True when `address` (an IP literal, brackets allowed) is a public unicast address. */
export function isPublicAddress(address: string): boolean {
  const literal = address.replace(/^\[|\]$/g, "");
  if (!ipaddr.isValid(literal)) return false;
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(literal);
  } catch {
    return false;
  }
  if (ip.kind() === "ipv4") {
    // ipaddr.isValid accepts legacy forms ("127.1", "0x7f.0.0.1"); only dotted-quad reaches here
    // from the WHATWG URL parser or getaddrinfo, anything else is refused rather than guessed.
    if (!ipaddr.IPv4.isValidFourPartDecimal(literal)) return false;
    return ip.range() === "unicast";
  }
  const v6 = ip as ipaddr.IPv6;
  const range = v6.range();
  if (EMBEDS_IPV4_LOW_32.has(range) || v6.match(NAT64_WELL_KNOWN)) {
    const bytes = v6.toByteArray();
    return new ipaddr.IPv4(bytes.slice(12, 16)).range() === "unicast";
  }
  // 6to4, Teredo and the local-use NAT64 prefix embed IPv4 in ways that let a caller smuggle a
  // private target through a relay; no image host needs them.
  return range === "unicast" && v6.match(GLOBAL_UNICAST_V6);
}
