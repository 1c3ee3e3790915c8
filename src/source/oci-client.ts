/**
 * A small client of the OCI distribution API (opencontainers/distribution-spec, "pull" and "push" workflows) over
 * undici: manifests by tag or digest, blobs streamed to files with their digest checked, monolithic blob uploads and
 * manifest pushes. No npm library fits (the maintained ones are sigstore's attachment helper and clients of the old
 * Docker API), and the part Gantry needs is these few requests plus authentication as go-containerregistry (Kluctl's
 * and Flux's client) does it: anonymous first, then on a 401 the challenge's scheme — Basic with the username and
 * password, or Bearer with a token from the challenge's realm (fetched with the username and password, an identity
 * token, or none); a configured registry token is sent as a bearer token from the start.
 *
 * Registries on loopback addresses (localhost, 127.0.0.0/8, ::1) and entries with `plainHttp` are spoken to over
 * HTTP, as go-containerregistry does for them; all others over HTTPS. Errors name the oci:// URL and the registry's
 * reason, never a credential.
 */
import { createHash } from 'node:crypto';
import { Agent, interceptors, request, type Dispatcher } from 'undici';
import { writeHashed } from '../files.ts';
import { splitOnce, type RegistryAuth } from './oci-credentials.ts';

/** Longest wait for a registry's headers, and between two chunks of a body, in ms. */
const HTTP_TIMEOUT_MS = 60_000;

export const OCI_MANIFEST_MEDIA_TYPE = 'application/vnd.oci.image.manifest.v1+json';
const DOCKER_MANIFEST_MEDIA_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';

/** A repository on a registry, and optionally a tag and/or digest in it (`oci://host[:port]/repo[:tag][@digest]`). */
export interface OciReference {
  /** `host[:port]`. */
  registry: string;
  /** Path of the repository on the registry, e.g. `org/app`. */
  repository: string;
  tag?: string | undefined;
  /** `sha256:<hex>`. */
  digest?: string | undefined;
}

/** A content descriptor (OCI image spec descriptor.md). */
export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** An image manifest (OCI image spec manifest.md). */
export interface OciManifest {
  schemaVersion: 2;
  mediaType?: string;
  config: OciDescriptor;
  layers: OciDescriptor[];
  annotations?: Record<string, string>;
}

/**
 * Splits an `oci://` URL into registry, repository, tag and digest.
 * @throws Error naming the URL when it is not `oci://host/repository[:tag][@sha256:…]`.
 */
export function parseOciUrl(url: string): OciReference {
  const invalid = (why: string) => new Error(`'${url}' is not a valid OCI URL (${why}; expected oci://<host>/<repository>)`);
  if (!url.startsWith('oci://')) throw invalid("it must start with 'oci://'");
  const [withoutDigest, digest] = splitOnce(url.slice('oci://'.length), '@');
  const [registry, rest] = splitOnce(withoutDigest, '/');
  if (!registry || !rest) throw invalid('it has no repository');
  const tagAt = rest.lastIndexOf(':');
  const [repository, tag] = tagAt < 0 ? [rest, undefined] : [rest.slice(0, tagAt), rest.slice(tagAt + 1)];
  if (!/^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/.test(repository))
    throw invalid(`'${repository}' is not a repository name`);
  if (tag !== undefined && !/^[\w][\w.-]{0,127}$/.test(tag)) throw invalid(`'${tag}' is not a tag`);
  if (digest !== undefined && !/^sha256:[0-9a-f]{64}$/.test(digest)) throw invalid(`'${digest}' is not a sha256 digest`);
  return { registry, repository, tag, digest };
}

/** `oci://registry/repository`, the URL of the repository without tag or digest. */
function repositoryUrl(reference: Pick<OciReference, 'registry' | 'repository'>): string {
  return `oci://${reference.registry}/${reference.repository}`;
}

/** `sha256:<hex>` of `bytes`. */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** Whether go-containerregistry would speak plain HTTP to `registry`: loopback hosts, or when asked to. */
export function usesPlainHttp(registry: string, auth: RegistryAuth | undefined): boolean {
  if (auth?.plainHttp) return true;
  const host = registry.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** What a request sends: headers and a body that can be sent again after an authentication challenge. */
interface Send {
  method: Dispatcher.HttpMethod;
  /** Path below the registry's base URL, or an absolute URL (an upload location). */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

/** One repository of one registry, with the credentials for it; `close` when done. */
export class OciClient {
  readonly reference: OciReference;
  private readonly auth: RegistryAuth | undefined;
  private readonly baseUrl: string;
  private readonly actions: string;
  private readonly signal: AbortSignal | undefined;
  private readonly dispatcher: Dispatcher;
  /** The client's own connections, closed with it; none when they go through a given egress. */
  private readonly agent: Agent | undefined;
  private authorization: string | undefined;

  /**
   * @param access `pull`, or `push` (which asks a token service for `pull,push`).
   * @param egress what to connect through instead of connections of its own (the fleet server's checked ones); the
   *   auth's TLS options do not apply then, and close() leaves it open.
   */
  constructor(reference: OciReference, auth: RegistryAuth | undefined, access: 'pull' | 'push', signal?: AbortSignal, egress?: Dispatcher) {
    this.reference = reference;
    this.auth = auth;
    this.baseUrl = `${usesPlainHttp(reference.registry, auth) ? 'http' : 'https'}://${reference.registry}`;
    this.actions = access === 'push' ? 'pull,push' : 'pull';
    this.signal = signal;
    this.agent = egress ? undefined : new Agent({ connect: tlsOptions(auth) });
    this.dispatcher = (egress ?? this.agent!).compose(interceptors.redirect({ maxRedirections: 5 }));
    this.authorization = auth?.registryToken ? `Bearer ${auth.registryToken}` : undefined;
  }

  /** The repository's oci:// URL, for messages. */
  get url(): string {
    return repositoryUrl(this.reference);
  }

  /**
   * The manifest `tagOrDigest` names and its digest (checked against a requested digest).
   * @throws Error naming the URL when the registry refuses, the manifest does not exist or is no image manifest.
   */
  async manifest(tagOrDigest: string): Promise<{ digest: string; manifest: OciManifest }> {
    const accept = [OCI_MANIFEST_MEDIA_TYPE, DOCKER_MANIFEST_MEDIA_TYPE].join(', ');
    const response = await this.send({ method: 'GET', path: `manifests/${tagOrDigest}`, headers: { accept } });
    const bytes = Buffer.from(await response.body.arrayBuffer());
    const digest = sha256Digest(bytes);
    if (tagOrDigest.startsWith('sha256:') && digest !== tagOrDigest)
      throw new Error(`${this.url}@${tagOrDigest}: the registry sent a manifest whose digest is ${digest}`);
    const manifest = JSON.parse(bytes.toString('utf8')) as OciManifest;
    if (!Array.isArray(manifest.layers)) throw new Error(`${this.url}:${tagOrDigest} is not an image manifest (no layers)`);
    return { digest, manifest };
  }

  /**
   * Streams the blob `digest` into `file`.
   * @throws Error naming the URL when it cannot be downloaded or its content does not match the digest.
   */
  async downloadBlob(digest: string, file: string): Promise<void> {
    const response = await this.send({ method: 'GET', path: `blobs/${digest}` });
    const actual = `sha256:${await writeHashed(response.body, file)}`;
    if (actual !== digest) throw new Error(`${this.url}: blob ${digest} arrived with digest ${actual}`);
  }

  /**
   * Uploads `bytes` as a blob unless the registry has it already (one monolithic upload).
   * @throws Error naming the URL when the registry refuses.
   */
  async uploadBlob(bytes: Buffer): Promise<OciDescriptor['digest']> {
    const digest = sha256Digest(bytes);
    const exists = await this.send({ method: 'HEAD', path: `blobs/${digest}` }, [200, 404]);
    await exists.body.dump();
    if (exists.statusCode === 200) return digest;
    const started = await this.send({ method: 'POST', path: 'blobs/uploads/' }, [202]);
    await started.body.dump();
    const location = new URL(String(started.headers['location'] ?? ''), `${this.baseUrl}/v2/`);
    location.searchParams.set('digest', digest);
    const headers = { 'content-type': 'application/octet-stream', 'content-length': String(bytes.byteLength) };
    const put = await this.send({ method: 'PUT', path: location.href, headers, body: bytes }, [201]);
    await put.body.dump();
    return digest;
  }

  /**
   * Pushes `manifest` under `tag`; returns its digest.
   * @throws Error naming the URL when the registry refuses.
   */
  async pushManifest(tag: string, manifest: OciManifest): Promise<string> {
    const bytes = Buffer.from(JSON.stringify(manifest));
    const headers = { 'content-type': manifest.mediaType ?? OCI_MANIFEST_MEDIA_TYPE };
    const response = await this.send({ method: 'PUT', path: `manifests/${tag}`, headers, body: bytes }, [201]);
    await response.body.dump();
    return sha256Digest(bytes);
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  /**
   * Sends a request, answering one authentication challenge; returns the response when its status is one of `ok`.
   * @throws Error naming the URL and the registry's reason otherwise.
   */
  private async send(send: Send, ok: readonly number[] = [200]): Promise<Dispatcher.ResponseData> {
    let response = await this.attempt(send);
    // Refused Basic credentials stay refused; a bearer token may lack this request's scope (push after pull) or have
    // expired, so a new challenge is answered again.
    if (response.statusCode === 401 && !this.authorization?.startsWith('Basic')) {
      const challenge = String(response.headers['www-authenticate'] ?? '');
      await response.body.dump();
      this.authorization = await this.answer(challenge);
      response = await this.attempt(send);
    }
    if (ok.includes(response.statusCode)) return response;
    throw await this.failure(send, response);
  }

  private async attempt(send: Send): Promise<Dispatcher.ResponseData> {
    const url = /^https?:\/\//.test(send.path) ? send.path : `${this.baseUrl}/v2/${this.reference.repository}/${send.path}`;
    const headers = { 'user-agent': 'gantry', ...send.headers, ...(this.authorization ? { authorization: this.authorization } : {}) };
    return request(url, {
      method: send.method,
      headers,
      body: send.body,
      dispatcher: this.dispatcher,
      signal: this.signal,
      headersTimeout: HTTP_TIMEOUT_MS,
      bodyTimeout: HTTP_TIMEOUT_MS,
    }).catch((error: Error) => {
      this.signal?.throwIfAborted();
      throw new Error(`${this.url}: ${this.baseUrl} could not be reached: ${describeCause(error)}`);
    });
  }

  /**
   * The Authorization header answering `challenge` (RFC 7235 `Basic realm=…` or `Bearer realm=…,service=…`).
   * @throws Error when the registry wants credentials and none are configured, or the token service refuses them.
   */
  private async answer(challenge: string): Promise<string> {
    const [scheme] = splitOnce(challenge.trim(), ' ');
    const { username, password, identityToken } = this.auth ?? {};
    const basic = username !== undefined || password !== undefined ? basicAuth(username ?? '', password ?? '') : undefined;
    if (scheme.toLowerCase() === 'basic') {
      if (!basic) throw this.missingCredentials();
      return basic;
    }
    if (scheme.toLowerCase() !== 'bearer') throw new Error(`${this.url}: the registry asks for unsupported authentication '${challenge}'`);
    return `Bearer ${await this.token(challengeParams(challenge), basic, identityToken)}`;
  }

  /** A token from the challenge's realm for this repository's scope (docker's token authentication). */
  private async token(params: Record<string, string>, basic: string | undefined, identityToken: string | undefined): Promise<string> {
    const realm = params['realm'];
    if (!realm) throw new Error(`${this.url}: the registry's bearer challenge has no realm`);
    const scope = params['scope'] ?? `repository:${this.reference.repository}:${this.actions}`;
    const form = new URLSearchParams({ scope, ...(params['service'] ? { service: params['service'] } : {}) });
    const options: Parameters<typeof request>[1] = {
      dispatcher: this.dispatcher,
      signal: this.signal,
      headersTimeout: HTTP_TIMEOUT_MS,
      bodyTimeout: HTTP_TIMEOUT_MS,
    };
    const tokenUrl = new URL(realm);
    if (identityToken) {
      form.set('grant_type', 'refresh_token');
      form.set('refresh_token', identityToken);
      form.set('client_id', 'gantry');
      Object.assign(options, { method: 'POST', body: form.toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    } else {
      for (const [key, value] of form) tokenUrl.searchParams.append(key, value);
      if (basic) options.headers = { authorization: basic };
    }
    const response = await request(tokenUrl, options).catch((error: Error) => {
      throw new Error(`${this.url}: the token service ${tokenUrl.origin} could not be reached: ${describeCause(error)}`);
    });
    const body = (await response.body.json().catch(() => ({}))) as { token?: string; access_token?: string };
    const token = body.token ?? body.access_token;
    if (response.statusCode === 200 && token) return token;
    throw new Error(
      `${this.url}: the token service ${tokenUrl.origin} refused ${basic || identityToken ? `the credentials for ${this.reference.registry}` : 'anonymous access'} (HTTP ${response.statusCode})`,
    );
  }

  private missingCredentials(): Error {
    return new Error(
      `${this.url}: the registry requires authentication and no credentials are configured for ${this.reference.registry} ` +
        '(--registry-creds, KLUCTL_REGISTRY_* variables, docker login, or spec.credentials.oci)',
    );
  }

  /** An Error naming the URL, the status and the registry's own error codes and messages. */
  private async failure(send: Send, response: Dispatcher.ResponseData): Promise<Error> {
    const text = await response.body.text().catch(() => '');
    const reason = registryErrors(text);
    const status = `HTTP ${response.statusCode}${reason ? `: ${reason}` : ''}`;
    const where = send.path.startsWith('manifests/') ? `${this.url}:${send.path.slice('manifests/'.length)}` : this.url;
    if (response.statusCode === 401 || response.statusCode === 403) {
      const who = this.authorization ? `the credentials for ${this.reference.registry}` : 'anonymous access';
      return new Error(`${where}: the registry refused ${who} (${status})`);
    }
    if (response.statusCode === 404) return new Error(`${where}: not found (${status})`);
    return new Error(`${where}: ${send.method} failed (${status})`);
  }
}

/** TLS options of undici's connector for an entry's CA, client certificate and verification setting. */
function tlsOptions(auth: RegistryAuth | undefined): Agent.Options['connect'] {
  return {
    ...(auth?.ca ? { ca: auth.ca } : {}),
    ...(auth?.cert && auth.key ? { cert: auth.cert, key: auth.key } : {}),
    ...(auth?.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
  };
}

/** The Authorization header of HTTP basic credentials (RFC 7617). */
export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** The `key="value"` parameters of a WWW-Authenticate challenge. */
function challengeParams(challenge: string): Record<string, string> {
  return Object.fromEntries([...challenge.matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1]!, match[2]!]));
}

/** `CODE: message; …` of a distribution error body ({"errors":[{code,message}]}), or the body's first line. */
function registryErrors(text: string): string {
  try {
    const body = JSON.parse(text) as { errors?: Array<{ code?: string; message?: string }> };
    if (body.errors?.length) return body.errors.map((error) => `${error.code ?? 'ERROR'}: ${error.message ?? ''}`).join('; ');
  } catch {
    // not JSON: the text itself
  }
  return text.split('\n')[0]?.slice(0, 200) ?? '';
}

/** undici wraps socket errors; their cause says what happened (ECONNREFUSED, a TLS error). */
function describeCause(error: Error): string {
  const cause = error.cause instanceof Error ? error.cause : undefined;
  return cause ? `${error.message} (${cause.message})` : error.message;
}
