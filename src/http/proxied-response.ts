/**
 * The headers a proxied Kubernetes API answer is given on Gantry's origin (the auth proxy, cluster-proxy.ts, and
 * `gantry webui`, webui/server.ts). The API server's answers are Kubernetes objects, but its proxy subresources
 * (`pods/NAME/proxy`, `services/NAME/proxy`, `nodes/NAME/proxy`) pass on whatever a workload serves, and an agent
 * could send anything: served as they come, an HTML page from a pod would run script on Gantry's origin, beside the
 * session cookie, and its Set-Cookie would set cookies there. So:
 *
 *  - only headers on an allow-list pass (PASSED_HEADERS): none that sets cookies (Set-Cookie), clears them
 *    (Clear-Site-Data), navigates (Location, Refresh, Link), grants other origins access (Access-Control-*),
 *    installs workers (Service-Worker-Allowed), or asks for a password (WWW-Authenticate);
 *  - Content-Type passes only when it is one of the Kubernetes API's own (API_MEDIA_TYPES); anything else (HTML,
 *    SVG, XML, none) is sent as `application/octet-stream` with `Content-Disposition: attachment`, so a browser
 *    saves it instead of showing it;
 *  - every answer gets `X-Content-Type-Options: nosniff` (no guessing HTML from the bytes),
 *    `Content-Security-Policy: default-src 'none'; sandbox` (opened anyway, nothing loads or runs, and the document
 *    gets an opaque origin) and `Cross-Origin-Resource-Policy: same-origin` (no other site embeds it).
 */

/**
 * Media types (without parameters) of the Kubernetes API's answers, from its docs ("API Concepts": alternate
 * representations, watch streams, CBOR; pod logs; OpenAPI v2 and v3; the service account issuer's JWKS). Their
 * parameters pass as sent: `application/json;stream=watch`, `application/json;as=Table;v=v1;g=meta.k8s.io`,
 * `text/plain; charset=utf-8`.
 */
const API_MEDIA_TYPES = new Set([
  'application/json',
  'application/yaml',
  'application/vnd.kubernetes.protobuf',
  'application/cbor',
  'application/cbor-seq',
  'application/jwk-set+json',
  'application/com.github.proto-openapi.spec.v2@v1.0+protobuf',
  'application/com.github.proto-openapi.spec.v3@v1.0+protobuf',
  // Pod logs, and the health and metrics endpoints.
  'text/plain',
]);

/** Response headers passed on, lower case: content and caching, and the API server's own diagnostics. */
const PASSED_HEADERS = new Set([
  'content-encoding',
  'cache-control',
  'etag',
  'last-modified',
  'expires',
  'vary',
  'retry-after',
  'warning',
  'audit-id',
  'x-kubernetes-pf-flowschema-uid',
  'x-kubernetes-pf-prioritylevel-uid',
]);

/** Added to every proxied answer. */
const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cross-origin-resource-policy': 'same-origin',
};

/**
 * The headers to answer with for an upstream answer's `headers` (names in any case): the allow-listed ones, the
 * content type if it is the Kubernetes API's (else `application/octet-stream` as an attachment), and the security
 * headers.
 */
export function proxiedResponseHeaders(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): Record<string, string | string[]> {
  const kept: Record<string, string | string[]> = {};
  let contentType: string | string[] | undefined;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined) continue;
    if (lower === 'content-type') contentType = value;
    else if (PASSED_HEADERS.has(lower)) kept[lower] = value;
  }
  // Several Content-Type headers are no type one can vouch for.
  if (typeof contentType === 'string' && API_MEDIA_TYPES.has(mediaType(contentType))) kept['content-type'] = contentType;
  else Object.assign(kept, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment' });
  return { ...kept, ...SECURITY_HEADERS };
}

/** `type/subtype` of a Content-Type value, lower case, without parameters (RFC 9110, section 8.3.1). */
function mediaType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}
