/**
 * Where the server may connect on a user's behalf (issue 39 §4, server-side request forgery): a `helm.url` is
 * fetched by the server, so without a check a writer reads the cloud's metadata service (169.254.169.254), the
 * server's own loopback ports or link-local IPv6 with the server's network position. Every address a URL's host
 * resolves to must lie outside SPECIAL_RANGES, unless the server's allow-list (`--allow-outbound CIDR`,
 * `$GANTRY_ALLOW_OUTBOUND`) covers it. Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are not refused:
 * in-cluster chart repositories live there. OWASP's SSRF Prevention Cheat Sheet asks to check every resolved
 * address, as here, and to connect to the checked one: outboundDispatcher checks each connection the server's chart
 * fetches make (a redirect's, an index.yaml's chart URL's) with the addresses it then connects to. checkOutboundUrl
 * only answers a request early with a 400 naming its field.
 */
import { lookup as lookupCallback, type LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { HttpError } from '../http/errors.ts';

/** Ranges refused unless allowed: unspecified, loopback, link-local (cloud metadata), CGNAT, multicast, reserved. */
export const SPECIAL_RANGES: readonly string[] = [
  '0.0.0.0/8',
  '127.0.0.0/8',
  '169.254.0.0/16',
  // Alibaba Cloud's metadata service is 100.100.100.200.
  '100.64.0.0/10',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/128',
  '::1/128',
  'fe80::/10',
  'ff00::/8',
];

/** The server's allow-list: CIDRs (`127.0.0.0/8`, `::1/128`) or single addresses. */
export interface OutboundPolicy {
  allow: readonly string[];
}

/** An address of a host the policy refuses; `address` is the resolved one. */
export class OutboundRefusedError extends Error {
  readonly host: string;
  readonly address: string;
  constructor(host: string, address: string) {
    super(
      `${host === address ? address : `${host} resolves to ${address}, which`} is a special address (loopback, link-local, ` +
        `multicast or reserved) the server does not connect to; an admin may allow it with --allow-outbound`,
    );
    this.host = host;
    this.address = address;
  }
}

const special = blockList(SPECIAL_RANGES);

/** @throws Error on a CIDR or address that is neither IPv4 nor IPv6. */
function blockList(ranges: readonly string[]): BlockList {
  const list = new BlockList();
  for (const range of ranges) {
    const [address = '', prefix] = range.split('/');
    const family = isIP(address) === 6 ? 'ipv6' : isIP(address) === 4 ? 'ipv4' : undefined;
    if (!family) throw new Error(`${range} is not an IPv4 or IPv6 address or CIDR`);
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

/** Whether the policy lets the server connect to `address` (an IP literal). */
export function addressAllowed(address: string, policy: OutboundPolicy): boolean {
  const family: 'ipv4' | 'ipv6' = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  // An IPv4-mapped IPv6 address (::ffff:127.0.0.1) reaches the IPv4 one: judge that.
  const mapped = family === 'ipv6' ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  const [checked, checkedFamily]: [string, 'ipv4' | 'ipv6'] = mapped ? [mapped, 'ipv4'] : [address, family];
  if (!special.check(checked, checkedFamily)) return true;
  return policy.allow.length > 0 && blockList(policy.allow).check(checked, checkedFamily);
}

/**
 * Every address `host` resolves to, once each is allowed.
 * @throws OutboundRefusedError naming the first refused address; the resolver's error when the name does not resolve.
 */
export async function checkedAddresses(host: string, policy: OutboundPolicy): Promise<LookupAddress[]> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  const addresses = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await lookup(bare, { all: true, verbatim: true });
  for (const { address } of addresses) if (!addressAllowed(address, policy)) throw new OutboundRefusedError(bare, address);
  return addresses;
}

/**
 * Checks the host of a URL the server is about to fetch for a request (`https://`, `http://`, `oci://`, `ssh://`,
 * and git's scp-like `user@host:path`; `file://` and other schemes reach no host and pass).
 * @param field the request's field holding the URL, e.g. `body.helm.url`.
 * @param unresolved what a host that does not resolve (yet) gets: a 400 (a chart, fetched now), or a pass (a git
 *   repository, fetched on every poll, whose health then says so).
 * @throws HttpError 400 naming the field, the host and the refused address, or the host that does not resolve.
 */
export async function checkOutboundUrl(
  url: string,
  policy: OutboundPolicy,
  field: string,
  unresolved: 'refuse' | 'pass' = 'refuse',
): Promise<void> {
  const host = hostOf(url);
  if (host === undefined) throw new HttpError(400, `${JSON.stringify(url)} is not a URL`, field);
  if (!host) return;
  try {
    await checkedAddresses(host, policy);
  } catch (error) {
    if (error instanceof OutboundRefusedError) throw new HttpError(400, `${url} refused: ${error.message}`, field);
    if (unresolved === 'refuse') throw new HttpError(400, `${url}: host ${host} does not resolve (${(error as Error).message})`, field);
  }
}

/** The host a URL names ('' for none), or undefined when it is not a URL. */
function hostOf(url: string): string | undefined {
  // git's scp-like syntax, `[user@]host:path` (git-clone(1), GIT URLS), where no scheme is given.
  const scpLike = /^(?:[^@/:]+@)?(\[[^\]]+\]|[^:/]+):(?!\/\/)/.exec(url);
  if (scpLike && !url.includes('://')) return scpLike[1]!;
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}

/**
 * An undici dispatcher for the fetches the server makes on a user's behalf (chart repositories): each connection,
 * the first and those of redirects alike, goes to an address the policy allows, the very one the name resolved to
 * for it (no second lookup for a name to resolve anew: DNS rebinding). fetch follows redirects through it, each on
 * a connection of its own. A refused connection fails its request with OutboundRefusedError as the cause.
 */
export function outboundDispatcher(policy: OutboundPolicy): Dispatcher {
  const connect = buildConnector({ lookup: allowedLookup(policy) });
  const checkedConnect: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[(.*)\]$/, '$1');
    // An IP literal is connected to without a lookup.
    if (isIP(host) && !addressAllowed(host, policy)) return callback(new OutboundRefusedError(host, host), null);
    connect(options, callback);
  };
  return new Agent({ connect: checkedConnect });
}

/** net.connect's lookup, failing with OutboundRefusedError when any address the name resolves to is refused. */
function allowedLookup(policy: OutboundPolicy): LookupFunction {
  return (hostname, options, callback) =>
    lookupCallback(hostname, { ...options, all: true, verbatim: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find(({ address }) => !addressAllowed(address, policy));
      if (refused) return callback(new OutboundRefusedError(hostname, refused.address), '', 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
}
