/**
 * SSRF protection for the requests the service makes on a client's behalf (URL downloads,
 * job-finished callbacks).
 *
 *  - only http: and https: URLs, without user:password;
 *  - the host name is resolved once, and EVERY address it resolves to (A and AAAA) must be
 *    allowed: not loopback, private, shared (CGNAT), link-local, unique-local, multicast,
 *    unspecified, reserved/documentation, or a cloud metadata address; IPv4-mapped,
 *    IPv4-compatible, NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address they carry;
 *  - the connection is then made to the address that was checked (see guarded-http.ts), so a
 *    second DNS answer cannot rebind the host to a private address;
 *  - redirects are checked again, hop by hop, by the caller.
 *
 * On-prem deployments allow named hosts or CIDR ranges (config `URL_ALLOWLIST`): an
 * allowlisted CIDR admits the addresses inside it (metadata addresses only when the range
 * explicitly contains them); an allowlisted host name admits whatever it resolves to except
 * metadata addresses; a host or single address may name a port, and then admits only it.
 *
 * Refusals and failures say what the caller needs (not allowed; could not be reached) and
 * never which address a name resolved to or which socket error occurred: the detail is the
 * error's `cause`, for the server log.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { AurisError } from '../errors';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Host name -> every address (A and AAAA). Injectable (tests: a fake that never touches DNS). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo: /etc/hosts, then DNS), every address of both families. */
export const systemResolver: Resolver = async (hostname) => {
  const all = await lookup(hostname, { all: true, verbatim: true });
  return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

// ---------------------------------------------------------------------------------------
// IP addresses and CIDR ranges
// ---------------------------------------------------------------------------------------

export interface ParsedIp {
  family: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

/** Parses a literal IPv4 or IPv6 address (brackets and an IPv6 zone are accepted); null if it is not one. */
export function parseIp(text: string): ParsedIp | null {
  let s = text.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const kind = isIP(s);
  if (kind === 4) return { family: 4, bytes: Uint8Array.from(s.split('.').map(Number)) };
  if (kind !== 6) return null;
  // Expand "::" and a trailing dotted IPv4 part.
  let head = s;
  const tail: number[] = [];
  const lastColon = head.lastIndexOf(':');
  const maybeV4 = head.slice(lastColon + 1);
  if (maybeV4.includes('.')) {
    const v4 = maybeV4.split('.').map(Number);
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    head = head.slice(0, lastColon + 1);
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const [left, right] = head.includes('::') ? head.split('::') : [head, undefined];
  const parseGroups = (g: string | undefined): number[] => (g ? g.split(':').filter((x) => x !== '').map((x) => parseInt(x, 16)) : []);
  const l = parseGroups(left);
  const r = parseGroups(right);
  const fill = 8 - l.length - r.length - tail.length;
  const groups = right !== undefined ? [...l, ...new Array<number>(fill).fill(0), ...r, ...tail] : [...l, ...tail];
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return { family: 6, bytes };
}

export interface Cidr {
  family: 4 | 6;
  bytes: Uint8Array;
  prefix: number;
  text: string;
}

/** "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). Throws on anything else. */
export function parseCidr(text: string): Cidr {
  const t = text.trim();
  const slash = t.indexOf('/');
  const ip = parseIp(slash >= 0 ? t.slice(0, slash) : t);
  if (!ip) throw new Error(`not an IP address or CIDR range: ${JSON.stringify(text)}`);
  const max = ip.family === 4 ? 32 : 128;
  const prefixText = slash >= 0 ? t.slice(slash + 1) : String(max);
  const prefix = Number(prefixText);
  if (!/^\d+$/.test(prefixText) || prefix > max) throw new Error(`bad prefix length in ${JSON.stringify(text)}`);
  return { family: ip.family, bytes: ip.bytes, prefix, text: t };
}

export function inCidr(ip: ParsedIp, cidr: Cidr): boolean {
  if (ip.family !== cidr.family) return false;
  let bits = cidr.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip.bytes[i]! & mask) !== (cidr.bytes[i]! & mask)) return false;
  }
  return true;
}

/** Why an address may not be reached, or null when it is a public unicast address. */
export type BlockReason =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'documentation'
  | 'metadata';

/** Cloud metadata endpoints (AWS/GCP/Azure/OpenStack, AWS ECS, AWS IPv6, Alibaba, Oracle, Azure wire server). */
const METADATA: Cidr[] = [
  '169.254.169.254/32',
  '169.254.170.2/32',
  '169.254.169.123/32',
  '100.100.100.200/32',
  '192.0.0.192/32',
  '168.63.129.16/32',
  'fd00:ec2::254/128',
  'fd00:ec2::23/128',
].map(parseCidr);

const V4_RULES: Array<[Cidr, BlockReason]> = (
  [
    ['0.0.0.0/8', 'unspecified'],
    ['10.0.0.0/8', 'private'],
    ['100.64.0.0/10', 'shared'],
    ['127.0.0.0/8', 'loopback'],
    ['169.254.0.0/16', 'link-local'],
    ['172.16.0.0/12', 'private'],
    ['192.0.0.0/24', 'reserved'],
    ['192.0.2.0/24', 'documentation'],
    ['192.88.99.0/24', 'reserved'],
    ['192.168.0.0/16', 'private'],
    ['198.18.0.0/15', 'reserved'],
    ['198.51.100.0/24', 'documentation'],
    ['203.0.113.0/24', 'documentation'],
    ['224.0.0.0/4', 'multicast'],
    ['255.255.255.255/32', 'broadcast'],
    ['240.0.0.0/4', 'reserved'],
  ] as const
).map(([c, r]) => [parseCidr(c), r]);

const V6_RULES: Array<[Cidr, BlockReason]> = (
  [
    ['::/128', 'unspecified'],
    ['::1/128', 'loopback'],
    ['64:ff9b:1::/48', 'private'],
    ['100::/64', 'reserved'],
    ['2001::/23', 'reserved'],
    ['2001:db8::/32', 'documentation'],
    ['3fff::/20', 'documentation'],
    ['fc00::/7', 'unique-local'],
    ['fe80::/10', 'link-local'],
    ['fec0::/10', 'site-local'],
    ['ff00::/8', 'multicast'],
  ] as const
).map(([c, r]) => [parseCidr(c), r]);

const V4_MAPPED = parseCidr('::ffff:0:0/96');
const V4_TRANSLATED = parseCidr('::ffff:0:0:0/96');
const V4_COMPATIBLE = parseCidr('::/96');
const NAT64 = parseCidr('64:ff9b::/96');
const SIX_TO_FOUR = parseCidr('2002::/16');
const GLOBAL_UNICAST_V6 = parseCidr('2000::/3');

/** The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4), if any. */
export function embeddedIpv4(ip: ParsedIp): ParsedIp | null {
  if (ip.family !== 6) return null;
  if (inCidr(ip, V4_MAPPED) || inCidr(ip, V4_TRANSLATED) || inCidr(ip, NAT64)) return { family: 4, bytes: ip.bytes.slice(12, 16) };
  // ::a.b.c.d (deprecated IPv4-compatible), except :: and ::1 themselves.
  if (inCidr(ip, V4_COMPATIBLE) && !(ip.bytes.slice(0, 15).every((b) => b === 0) && ip.bytes[15]! <= 1)) return { family: 4, bytes: ip.bytes.slice(12, 16) };
  if (inCidr(ip, SIX_TO_FOUR)) return { family: 4, bytes: ip.bytes.slice(2, 6) };
  return null;
}

/** Classifies an address: null for a public unicast address, else why it is blocked. */
export function classifyIp(ip: ParsedIp): BlockReason | null {
  if (METADATA.some((m) => inCidr(ip, m))) return 'metadata';
  const v4 = embeddedIpv4(ip);
  if (v4) return classifyIp(v4);
  for (const [cidr, reason] of ip.family === 4 ? V4_RULES : V6_RULES) if (inCidr(ip, cidr)) return reason;
  // IPv6 outside 2000::/3 (global unicast) is unassigned or special-purpose.
  if (ip.family === 6 && !inCidr(ip, GLOBAL_UNICAST_V6)) return 'reserved';
  return null;
}

export function classifyAddress(address: string): BlockReason | null {
  const ip = parseIp(address);
  if (!ip) throw new Error(`not an IP address: ${address}`);
  return classifyIp(ip);
}

// ---------------------------------------------------------------------------------------
// Policy
// ---------------------------------------------------------------------------------------

export interface AddressPolicy {
  /** Host names allowed to resolve to private addresses ("files.corp", "*.corp.example"), lower case; with a port, only that port. */
  hosts: Array<{ pattern: string; port: number | null }>;
  /** Address ranges allowed even though they are private; a single address may name a port. */
  cidrs: Array<Cidr & { port: number | null }>;
}

export const EMPTY_POLICY: AddressPolicy = { hosts: [], cidrs: [] };

/** Splits a trailing ":port" off an allowlist entry ("files.corp:8443", "10.0.0.5:9000", "[fd00::5]:443"). */
function splitPort(entry: string): { base: string; port: number | null } {
  const m = /^(.*[^:]):(\d{1,5})$/.exec(entry);
  // A bare IPv6 address ends in ":digits" too; it needs brackets to name a port.
  if (!m || (parseIp(entry) && !entry.startsWith('['))) return { base: entry, port: null };
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new Error(`port out of range in ${JSON.stringify(entry)}`);
  if (m[1]!.includes('/')) throw new Error(`a CIDR range cannot name a port: ${JSON.stringify(entry)}`);
  return { base: m[1]!, port };
}

/**
 * Builds the policy from allowlist entries: each a CIDR range or address ("10.1.0.0/16",
 * "127.0.0.1", "[::1]") or a host name ("files.corp", "*.corp.example"); a host name or a
 * single address may name a port ("files.corp:8443", "127.0.0.1:9000", "[::1]:8080"), and
 * then admits that port only. Throws on a bad entry.
 */
export function parseAllowlist(entries: readonly string[]): AddressPolicy {
  const policy: AddressPolicy = { hosts: [], cidrs: [] };
  for (const raw of entries) {
    const e = raw.trim();
    if (e === '') continue;
    const { base, port } = splitPort(e);
    if (base.includes('/') || parseIp(base)) {
      policy.cidrs.push({ ...parseCidr(base), port });
      continue;
    }
    const host = base.toLowerCase().replace(/\.$/, '');
    if (!/^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/.test(host)) {
      throw new Error(`not a host name, address or CIDR range: ${JSON.stringify(raw)}`);
    }
    policy.hosts.push({ pattern: host, port });
  }
  return policy;
}

const portMatches = (entry: { port: number | null }, port: number | undefined): boolean => entry.port === null || entry.port === port;

function hostAllowlisted(policy: AddressPolicy, hostname: string, port: number | undefined): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return policy.hosts.some(
    (e) => portMatches(e, port) && (e.pattern.startsWith('*.') ? h.endsWith(e.pattern.slice(1)) && h.length > e.pattern.length - 1 : h === e.pattern),
  );
}

/**
 * Why `address` (reached through `hostname`, on `port`) is refused under `policy`, or null
 * when it is allowed. Without a port, allowlist entries that name one do not apply.
 */
export function refusal(address: string, hostname: string, policy: AddressPolicy, port?: number): BlockReason | null {
  const ip = parseIp(address);
  if (!ip) return 'reserved';
  const reason = classifyIp(ip);
  if (!reason) return null;
  const v4 = embeddedIpv4(ip);
  if (policy.cidrs.some((c) => portMatches(c, port) && (inCidr(ip, c) || (v4 !== null && inCidr(v4, c))))) return null;
  if (reason !== 'metadata' && hostAllowlisted(policy, hostname, port)) return null;
  return reason;
}

/** The port a URL connects to. */
export function urlPort(u: URL): number {
  return u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
}

/**
 * The refusal of a URL whose host is an address literal (or a localhost name), known
 * without any DNS lookup: callbacks are checked this way when a job is created. Null when
 * the host is a name (checked when it is used) or allowed.
 */
export function literalRefusal(u: URL, policy: AddressPolicy): BlockReason | null {
  const hostname = u.hostname.replace(/^\[|\]$/g, '');
  const port = urlPort(u);
  if (parseIp(hostname)) return refusal(hostname, hostname, policy, port);
  const lower = hostname.toLowerCase().replace(/\.$/, '');
  return (lower === 'localhost' || lower.endsWith('.localhost')) && !hostAllowlisted(policy, lower, port) ? 'loopback' : null;
}

/** The one message of a URL that could not be fetched, whatever the reason (no oracle of the network or the DNS). */
export const UNREACHABLE = 'Downloading the file URL failed: its host could not be reached, did not answer HTTP or failed the TLS check.';

export function notAllowed(message: string): AurisError {
  return new AurisError('URL_NOT_ALLOWED', message);
}

/** Parses and checks the form of a URL: absolute, http or https, no credentials. Throws URL_NOT_ALLOWED. */
export function checkUrlForm(url: string | URL): URL {
  let u: URL;
  try {
    u = typeof url === 'string' ? new URL(url) : url;
  } catch {
    throw notAllowed('The URL is not a valid absolute URL.');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw notAllowed(`Only http and https URLs are allowed (got ${u.protocol.replace(/:$/, '')}).`);
  if (u.username || u.password) throw notAllowed('URLs with a user name or password are not allowed.');
  if (!u.hostname) throw notAllowed('The URL has no host.');
  return u;
}

/**
 * Resolves the URL's host and checks every address. Returns the checked addresses (connect
 * to one of these, never resolve again). Throws URL_NOT_ALLOWED, or DOWNLOAD_FAILED when the
 * name does not resolve.
 */
export async function resolveChecked(u: URL, policy: AddressPolicy, resolver: Resolver): Promise<ResolvedAddress[]> {
  const hostname = u.hostname.replace(/^\[|\]$/g, '');
  const port = urlPort(u);
  const literal = parseIp(hostname);
  // The caller learns that the host is not allowed, or not reachable; never what a name resolves
  // to or why an address is refused (an oracle of the internal DNS). The cause keeps it for the log.
  // `resolved_name`: refused for what a name resolved to (the downloader tells that like an unreachable host).
  const refused = (detail: string, resolvedName = false): AurisError =>
    new AurisError('URL_NOT_ALLOWED', `The host ${u.host} is not allowed (not a public address, and not on the allowlist).`, resolvedName ? { resolved_name: true } : undefined, { cause: new Error(detail) });
  let addresses: ResolvedAddress[];
  if (literal) {
    addresses = [{ address: hostname, family: literal.family }];
  } else {
    const lower = hostname.toLowerCase().replace(/\.$/, '');
    if ((lower === 'localhost' || lower.endsWith('.localhost')) && !hostAllowlisted(policy, lower, port)) throw refused(`${hostname}: loopback`);
    try {
      addresses = await resolver(hostname);
    } catch (err) {
      throw new AurisError('DOWNLOAD_FAILED', UNREACHABLE, undefined, { cause: err });
    }
    if (addresses.length === 0) throw new AurisError('DOWNLOAD_FAILED', UNREACHABLE, undefined, { cause: new Error(`${hostname} has no address`) });
  }
  for (const a of addresses) {
    const why = refusal(a.address, hostname, policy, port);
    if (why) throw refused(`${literal ? a.address : `${hostname} resolves to ${a.address}`} (port ${port}): ${why}`, !literal);
  }
  return addresses;
}
