/**
 * Temporary files are removed on every error path (docs/reliability.md): uploads aborted
 * at any moment (a Content-Length larger than what is sent, the socket closed after 0..20 ms)
 * leave no `.tmp-*` file and no job behind.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { api, FakeAnalyzer, KEY_A, sleep, startServer, tempDir, waitFor } from '../http/helpers';

/** Sends the headers and a few bytes of a 100 000-byte upload, then closes the socket after `ms`. */
function abortedUpload(port: number, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(
        `POST /file-processing/jobs?models=speech&output_period=1024 HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${KEY_A}\r\n` +
          'content-type: audio/wav\r\ncontent-length: 100000\r\n\r\nRIFF\x00\x00\x00\x00WAVE',
      );
      setTimeout(() => {
        s.destroy();
        resolve();
      }, ms);
    });
    s.on('error', reject);
  });
}

describe('temporary files', () => {
  const dir = tempDir('auris-tmpfiles-');
  after(() => dir.cleanup());

  it('uploads aborted at any moment leave no .tmp-* file and no job', async () => {
    const server = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
    try {
      const port = Number(new URL(server.url).port);
      for (let i = 0; i < 60; i++) await abortedUpload(port, i % 20);
      const uploads = join(dir.path, 'blobs', 'uploads');
      const leftovers = (): string[] => (existsSync(uploads) ? readdirSync(uploads) : []);
      await waitFor(() => leftovers().length === 0, 5000, 'no file left in blobs/uploads').catch(() => undefined);
      assert.deepEqual(leftovers(), []);
      await sleep(100);
      const list = (await (await api(server, KEY_A)('/file-processing/jobs')).json()) as { jobs: unknown[] };
      assert.equal(list.jobs.length, 0);
    } finally {
      await server.close();
    }
  });

  it('a URL download left by a killed process (data/tmp) is removed at the next start', async () => {
    const data = join(dir.path, 'killed');
    mkdirSync(join(data, 'tmp'), { recursive: true });
    writeFileSync(join(data, 'tmp', '3f1c2b9e-0000-4000-8000-000000000000-1a2b3c4d'), Buffer.alloc(4096));
    const server = await startServer(data, { analyzer: new FakeAnalyzer() });
    try {
      assert.deepEqual(existsSync(join(data, 'tmp')) ? readdirSync(join(data, 'tmp')) : [], []);
    } finally {
      await server.close();
    }
  });
});
