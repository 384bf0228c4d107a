/**
 * The onRequest stage of the job endpoints and POST /stream-tokens: the failed-authentication
 * throttle per client address, the API key, then the per-key rate limit.
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
    const blocked = throttle.blockedFor(req.ip);
    if (blocked > 0) {
      void reply.header('retry-after', String(blocked));
      throw new ApiError('TOO_MANY_AUTH_FAILURES', `Too many requests with a missing or invalid API key from this address; retry after ${blocked} s.`, { retry_after: blocked }, blocked);
    }
    const raw = req.headers['x-api-key'];
    const key = Array.isArray(raw) ? raw[0] : raw;
    const owner = key ? registry.lookup(key) : null;
    if (!owner) {
      if (throttle.fail(req.ip)) app.log.warn({ client: req.ip, failures: throttle.limit }, 'too many failed authentications: address throttled');
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
