/**
 * The onRequest stage of the job endpoints and POST /stream-tokens: the API key (a failure
 * counts against the client address, which is answered 429 beyond its limit), then the per-key
 * rate limit.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiKeyRegistry, RateLimiter } from './auth';
import type { AuthFailureThrottle } from './auth-throttle';
import { ApiError } from './errors';

export interface AuthenticateOptions {
  registry: ApiKeyRegistry;
  limiter: RateLimiter;
  throttle: AuthFailureThrottle;
}

/** Paths that need an API key; a CORS preflight (OPTIONS) never does (browsers send no credentials on it). */
const needsKey = (url: string, method: string): boolean =>
  (url.startsWith('/file-processing/') || url.startsWith('/stream-tokens')) && method !== 'OPTIONS';

export function addAuthentication(app: FastifyInstance, { registry, limiter, throttle }: AuthenticateOptions): void {
  app.addHook('onRequest', async (req, reply) => {
    if (!needsKey(req.url, req.method)) return;
    const raw = req.headers['x-api-key'];
    const key = Array.isArray(raw) ? raw[0] : raw;
    const owner = key ? registry.lookup(key) : null;
    if (!owner) {
      // Valid keys always pass; only the failures of an address are throttled (auth-throttle.ts).
      const { retryAfter, reachedLimit } = throttle.failure(req.ip);
      if (reachedLimit) app.log.warn({ client: req.ip, failures: throttle.limit }, 'too many failed authentications: address throttled');
      if (retryAfter > 0) {
        void reply.header('retry-after', String(retryAfter));
        throw new ApiError('TOO_MANY_AUTH_FAILURES', `Too many requests with a missing or invalid API key from this address; retry after ${retryAfter} s.`, { retry_after: retryAfter }, retryAfter);
      }
      if (!key) throw new ApiError('MISSING_API_KEY', 'The x-api-key header is required.');
      throw new ApiError('INVALID_API_KEY', 'The x-api-key is not valid.');
    }
    req.owner = owner;
    const wait = limiter.take(owner.key_id);
    void reply.headers(limiter.headers(owner.key_id)); // RateLimit-Policy / RateLimit beside Retry-After
    if (wait > 0) {
      void reply.header('retry-after', String(wait));
      throw new ApiError('RATE_LIMITED', `Too many requests for this API key; retry after ${wait} s.`, { retry_after: wait }, wait);
    }
  });
}
