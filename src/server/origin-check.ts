/**
 * Cross-site request forgery: a page on another site can make a logged-in browser send a request carrying the
 * session cookie. SameSite=Strict already keeps the cookie off such requests in current browsers; this check does
 * not rely on it (older browsers, a sibling subdomain on the same site, a cookie set without it by a proxy). It
 * follows OWASP's CSRF Prevention Cheat Sheet ("Verifying Origin With Standard Headers" and "Fetch Metadata"):
 *
 *  - it looks at requests that change something (every method but GET, HEAD and OPTIONS) and carry no
 *    `Authorization` header: bearer-token clients (the CLI, agents, the operator) are not ambient credentials a
 *    browser adds by itself, and a page cannot add that header across origins without a CORS preflight, which this
 *    server never grants;
 *  - `Origin`, when sent, must be the server's own origin, else 403; without `Origin`, `Referer`'s origin is held to
 *    the same; without either, `Sec-Fetch-Site` must be `same-origin` or `none` (a browser's own navigation);
 *  - a request with none of the three comes from no browser (curl, the CLI's `gantry login --username`, a git
 *    host's webhook) and is let through: what a browser sends on every cross-origin POST is what is checked.
 *
 * The server's own origin is `--public-url`'s when given. Without it, it is the request's as the server sees it:
 * its Host (X-Forwarded-Host from a proxy named by `--trust-proxy`), and its protocol, except that a request that
 * reached the server as plain http may come from an https origin: a TLS terminator the server was not told of
 * (`--trust-proxy`) is then in front, and only a machine in the middle could serve a page at the other scheme of
 * the same host and port.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isMutating } from './audit-log.ts';

/** Registers the check as an onRequest hook of every route; refusals are 403 `{message}`. */
export function registerOriginCheck(app: FastifyInstance, publicUrl: URL | undefined): void {
  app.addHook('onRequest', async (request, reply) => {
    const refusal = crossOriginRefusal(request, publicUrl?.origin);
    if (refusal) return reply.code(403).send({ message: refusal });
  });
}

/** Why a browser's request from another origin is refused, or undefined when it is not one. */
export function crossOriginRefusal(request: FastifyRequest, publicOrigin: string | undefined): string | undefined {
  if (!isMutating(request.method) || request.headers.authorization !== undefined) return undefined;
  const own = publicOrigin ?? `${request.protocol}://${request.host}`;
  const sender = request.headers.origin ?? refererOrigin(request.headers.referer);
  if (sender !== undefined) {
    if (sender === own || (publicOrigin === undefined && request.protocol === 'http' && sender === `https://${request.host}`))
      return undefined;
    return `cross-origin request refused: ${request.method} from ${sender}, not ${own} (send Authorization: Bearer <token> from scripts)`;
  }
  const site = request.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return undefined;
  return `cross-origin request refused: ${request.method} from a ${site} page without Origin (send Authorization: Bearer <token> from scripts)`;
}

/** The origin of a Referer header, or undefined when there is none or it is no URL. */
function refererOrigin(referer: string | undefined): string | undefined {
  if (referer === undefined) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return 'an unreadable Referer';
  }
}
