/**
 * Request checks that Node would otherwise answer itself with an empty body, and query-string
 * checks that apply to every route:
 *
 *   - an HTTP/1.1 request without Host: 400 MALFORMED_REQUEST (Node's own check is off, it
 *     answered with an empty body);
 *   - an Expect header other than 100-continue: 417 EXPECTATION_FAILED (Node answered with an
 *     empty body);
 *   - a query parameter given more than once: 400 INVALID_PARAMETER naming it (it reached the
 *     schema as an array and was reported as a type error);
 *   - a JSON body with a `__proto__` or `constructor` key: 400 INVALID_BODY naming the key
 *     (Fastify's parser refused it as "not valid JSON").
 */
import type { Server, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, PROBLEM_CONTENT_TYPE } from './errors';

/** Lets an unread upload body flow to nowhere so the client can read the error answer. */
function drain(req: FastifyRequest): void {
  const body = req.body as { resume?: () => void } | undefined;
  if (body && typeof body.resume === 'function') body.resume();
}

export function addRequestChecks(app: FastifyInstance): void {
  app.addHook('onRequest', async (req) => {
    if (req.raw.httpVersion === '1.1' && req.headers.host === undefined) {
      throw new ApiError('MALFORMED_REQUEST', 'An HTTP/1.1 request must carry a Host header.');
    }
  });
  app.addHook('preValidation', async (req) => {
    const query = (req.query ?? {}) as Record<string, unknown>;
    const repeated = Object.keys(query).filter((k) => Array.isArray(query[k]));
    if (repeated.length === 0) return;
    drain(req);
    const errors = repeated.map((parameter) => ({ parameter, message: 'given more than once' }));
    throw new ApiError('INVALID_PARAMETER', errors.map((e) => `${e.parameter}: ${e.message}`).join('; '), { errors });
  });
}

/** Answers an unsupported Expect header with problem+json (Node's default is an empty 417). */
export function answerExpectations(server: Server): void {
  server.on('checkExpectation', (req, res: ServerResponse) => {
    const err = new ApiError('EXPECTATION_FAILED', `The Expect header ${JSON.stringify(String(req.headers.expect).slice(0, 100))} is not supported (only 100-continue is).`);
    const body = JSON.stringify(err.toProblem((req.url ?? '').split('?')[0]!.slice(0, 200)));
    res.writeHead(err.status, { 'content-type': PROBLEM_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  });
}

/** Keys a JSON body may not hold at any depth (prototype pollution in code that merges objects). */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The path of the first forbidden key in a parsed JSON value, else null (iterative: a body may nest deeply). */
function forbiddenKey(root: unknown): string | null {
  const todo: Array<{ v: unknown; path: string }> = [{ v: root, path: '' }];
  for (let item = todo.pop(); item; item = todo.pop()) {
    if (typeof item.v !== 'object' || item.v === null) continue;
    for (const [k, child] of Object.entries(item.v)) {
      const here = item.path ? `${item.path}.${k}` : k;
      if (FORBIDDEN_KEYS.has(k)) return here;
      todo.push({ v: child, path: here });
    }
  }
  return null;
}

/** The JSON body parser: JSON.parse (which makes `__proto__` an own key, never the prototype), then the forbidden keys named. */
export function addJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    let value: unknown;
    try {
      value = JSON.parse(body as string);
    } catch {
      return done(new ApiError('INVALID_BODY', 'The body must be a JSON object: {"url": "..."}.'), undefined);
    }
    const key = forbiddenKey(value);
    if (key) return done(new ApiError('INVALID_BODY', `${key}: unknown field (not allowed in a body).`, { errors: [{ parameter: key, message: 'unknown field' }] }), undefined);
    done(null, value);
  });
}
