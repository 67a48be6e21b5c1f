/**
 * Which client address a request comes from, and the key its failed sign-ins are counted under
 * (spec §3.11): the socket's peer, or, when the peer is a trusted
 * proxy (SVC_TRUSTED_PROXIES), the nearest X-Forwarded-For entry that is not itself one. IPv4
 * addresses count one by one (/32); IPv6 addresses count by their /64, the smallest block one
 * subscriber is usually given, so walking through a subscriber's own addresses gains nothing.
 */

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
export type IpBytes = readonly number[];

export interface Cidr {
  readonly bytes: IpBytes;
  readonly prefix: number;
}

function parseV4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function parseV6(text: string): number[] | null {
  let s = text;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  const lastColon = s.lastIndexOf(':');
  if (lastColon >= 0 && s.slice(lastColon + 1).includes('.')) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (v4 === null) return null;
    s = `${s.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${((v4[2]! << 8) | v4[3]!).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groupsOf = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  const out: number[] = [];
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    out.push(n >> 8, n & 0xff);
  }
  return out;
}

/**
 * Parses an IPv4 or IPv6 address (an IPv6 zone and the brackets of `[::1]` are dropped); an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d, how a dual-stack socket reports an IPv4 peer) is
 * the IPv4 address. Null when it is neither.
 */
export function parseIp(text: string): IpBytes | null {
  let s = text.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (s.includes(':')) {
    const v6 = parseV6(s);
    if (v6 === null) return null;
    const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
    return mapped ? v6.slice(12) : v6;
  }
  return parseV4(s);
}

/** Parses `a.b.c.d/n` or `x::y/n` (a bare address is its /32 or /128). Null when malformed. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  const bytes = parseIp(slash >= 0 ? text.slice(0, slash) : text);
  if (bytes === null) return null;
  const max = bytes.length * 8;
  if (slash < 0) return { bytes, prefix: max };
  const p = text.slice(slash + 1).trim();
  if (!/^[0-9]{1,3}$/.test(p)) return null;
  const prefix = Number(p);
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is its IPv4 range.
  const mappedShift = bytes.length === 4 && text.includes(':') ? 96 : 0;
  if (prefix - mappedShift < 0 || prefix - mappedShift > max) return null;
  return { bytes, prefix: prefix - mappedShift };
}

/** Parses SVC_TRUSTED_PROXIES: CIDRs separated by commas or spaces. The malformed entries are returned to be named. */
export function parseCidrList(text: string): { cidrs: Cidr[]; malformed: string[] } {
  const cidrs: Cidr[] = [];
  const malformed: string[] = [];
  for (const entry of text.split(/[\s,]+/).filter((e) => e !== '')) {
    const cidr = parseCidr(entry);
    if (cidr === null) malformed.push(entry);
    else cidrs.push(cidr);
  }
  return { cidrs, malformed };
}

export function inCidr(ip: IpBytes, cidr: Cidr): boolean {
  if (ip.length !== cidr.bytes.length) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

const trusted = (ip: IpBytes, proxies: readonly Cidr[]) => proxies.some((c) => inCidr(ip, c));

/**
 * The client address of a request: the peer, unless the peer is a trusted proxy; then the
 * X-Forwarded-For entries are read from the right (the nearest hop first), skipping those that
 * are trusted proxies too, and the first other one is the client. A malformed entry, or a list
 * made only of trusted proxies, leaves the last trusted hop as the client: what an untrusted
 * party wrote further left is never believed. Null when the peer is unknown or unparsable.
 */
export function clientAddress(
  peer: string | null | undefined,
  forwardedFor: string | null | undefined,
  proxies: readonly Cidr[],
): IpBytes | null {
  const peerIp = peer ? parseIp(peer) : null;
  if (peerIp === null) return null;
  if (!trusted(peerIp, proxies) || !forwardedFor) return peerIp;
  let client = peerIp;
  const hops = forwardedFor.split(',').map((h) => h.trim());
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseIp(hops[i]!);
    if (hop === null) return client;
    client = hop;
    if (!trusted(hop, proxies)) return hop;
  }
  return client;
}

const hex = (b: number) => b.toString(16).padStart(2, '0');

/**
 * The key failed sign-ins are counted under: `4:` and the IPv4 address, or `6:` and the IPv6
 * address's first 64 bits. An unknown client address shares the key `unknown`.
 */
export function sourceKey(ip: IpBytes | null): string {
  if (ip === null) return 'unknown';
  if (ip.length === 4) return `4:${ip.join('.')}`;
  return `6:${ip.slice(0, 8).map(hex).join('')}`;
}
