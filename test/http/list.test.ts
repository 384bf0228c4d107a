/**
 * GET /file-processing/jobs: cursor pagination and filters over 250 real jobs, with jobs
 * created while paging; no gaps, no repeats, newest first, only the caller's project.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, FakeAnalyzer, KEY_A, KEY_A2, KEY_B, sleep, startServer, tempDir, type JobJson } from './helpers';

interface Page {
  jobs: JobJson[];
  next_cursor: string | null;
}

async function page(server: AurisServer, key: string, query: string): Promise<Page> {
  const res = await api(server, key)(`/file-processing/jobs?${query}`);
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as Page;
}

/** Every page of a query, following next_cursor. */
async function all(server: AurisServer, key: string, query: string, during?: (pageNo: number) => Promise<void>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p = await page(server, key, query + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''));
    ids.push(...p.jobs.map((j) => j.job_id));
    cursor = p.next_cursor;
    pages++;
    await during?.(pages);
  } while (cursor);
  return { ids, pages };
}

describe('job list: pagination and filters', () => {
  const dir = tempDir();
  let server: AurisServer;
  const created: JobJson[] = [];
  let middle = '';

  before(async () => {
    // concurrency 0: jobs stay queued, so the 250 are created quickly and nothing changes under the list
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { concurrency: 0 } });
    for (let i = 0; i < 250; i++) {
      const res = await createJob(server, i % 2 ? KEY_A : KEY_A2, {}); // two keys of one project
      assert.equal(res.status, 201);
      created.push((await res.json()) as JobJson);
      if (i === 124) {
        await sleep(5);
        middle = new Date().toISOString();
        await sleep(5);
      }
    }
    await createJob(server, KEY_B, {}); // another project
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('pages of 7 cover the 250 jobs exactly once, newest first, ending with next_cursor null', async () => {
    const { ids, pages } = await all(server, KEY_A, 'limit=7');
    assert.equal(pages, Math.ceil(250 / 7));
    assert.equal(ids.length, 250);
    assert.equal(new Set(ids).size, 250, 'no repeats');
    assert.deepEqual([...ids].sort(), created.map((j) => j.job_id).sort(), 'no gaps, no other project');
    const byId = new Map(created.map((j) => [j.job_id, j]));
    for (let i = 1; i < ids.length; i++) {
      const a = byId.get(ids[i - 1]!)!;
      const b = byId.get(ids[i]!)!;
      assert.ok(a.created_at > b.created_at || (a.created_at === b.created_at && a.job_id > b.job_id), 'newest first');
    }
  });

  it('jobs created while paging do not shift later pages (no repeats, no gaps)', async () => {
    const extra: string[] = [];
    const { ids } = await all(server, KEY_A, 'limit=50', async (n) => {
      if (n <= 2) extra.push(((await (await createJob(server, KEY_A, {})).json()) as JobJson).job_id);
    });
    assert.equal(ids.length, 250);
    assert.equal(new Set(ids).size, 250);
    assert.ok(!ids.some((id) => extra.includes(id)), 'newer jobs belong before the first page');
    const first = await page(server, KEY_A, 'limit=2');
    assert.deepEqual(first.jobs.map((j) => j.job_id), [...extra].reverse());
    for (const id of extra) await api(server, KEY_A)(`/file-processing/jobs/${id}`, { method: 'DELETE' });
  });

  it('created_after / created_before split the jobs at an instant; status filters', async () => {
    const newer = await all(server, KEY_A, `limit=100&created_after=${encodeURIComponent(middle)}`);
    const older = await all(server, KEY_A, `limit=100&created_before=${encodeURIComponent(middle)}`);
    assert.deepEqual(new Set(newer.ids), new Set(created.slice(125).map((j) => j.job_id)));
    assert.deepEqual(new Set(older.ids), new Set(created.slice(0, 125).map((j) => j.job_id)));
    const window = await all(server, KEY_A, `created_after=${encodeURIComponent(created[9]!.created_at)}&created_before=${encodeURIComponent(middle)}`);
    const c9 = Date.parse(created[9]!.created_at);
    const expected = created.filter((j) => Date.parse(j.created_at) > c9 && Date.parse(j.created_at) < Date.parse(middle)).map((j) => j.job_id);
    assert.ok(expected.length >= 100);
    assert.deepEqual(new Set(window.ids), new Set(expected));
    assert.equal((await page(server, KEY_A, 'status=queued&limit=1000')).jobs.length, 250);
    assert.deepEqual(await page(server, KEY_A, 'status=succeeded'), { jobs: [], next_cursor: null });
    assert.equal((await page(server, KEY_B, 'limit=1000')).jobs.length, 1);
  });

  it('a bad cursor, limit, status or date is a 400 INVALID_PARAMETER', async () => {
    for (const q of ['cursor=abc', 'cursor=' + Buffer.from('["x","y"]').toString('base64url'), 'limit=0', 'limit=1001', 'status=done', 'created_after=yesterday']) {
      const res = await api(server, KEY_A)(`/file-processing/jobs?${q}`);
      assert.equal(res.status, 400, q);
      assert.equal(((await res.json()) as { code: string }).code, 'INVALID_PARAMETER', q);
    }
  });
});
