/**
 * 405 METHOD_NOT_ALLOWED with `Allow` for a known path asked with a method it does not
 * serve (e.g. PUT on a job), instead of 404: the path exists, the method is wrong.
 * Registered after the real routes; reads their methods from Fastify's route table.
 */
import type { FastifyInstance, HTTPMethods, RouteOptions } from 'fastify';
import { ApiError } from './errors';

const CHECKED: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Collects path -> methods while routes are added; call before registering the routes. */
export function trackRouteMethods(app: FastifyInstance, prefixes: readonly string[]): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!prefixes.some((p) => route.url.startsWith(p))) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = byPath.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m);
    byPath.set(route.url, set);
  });
  return byPath;
}

/** Answers the other methods of every tracked path with 405 and Allow. */
export function addMethodNotAllowed(app: FastifyInstance, byPath: Map<string, Set<string>>): void {
  for (const [url, methods] of [...byPath]) {
    const served = [...methods].filter((m) => CHECKED.includes(m as HTTPMethods));
    const others = CHECKED.filter((m) => !methods.has(m));
    if (!served.length || !others.length) continue;
    const allow = [...served, ...(methods.has('GET') ? ['HEAD'] : [])].join(', ');
    app.route({
      method: others,
      url,
      schema: { hide: true },
      handler: async (req, reply) => {
        void reply.header('allow', allow);
        throw new ApiError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${url}; allowed: ${allow}.`, { allow: allow.split(', ') });
      },
    });
  }
}
