/**
 * Clients of the gRPC streaming API against the real server: the `auris stream` CLI, the
 * Python example (examples/stream-file.py, Python's own gRPC library with the proto file; run
 * when python3 with grpcio and grpc_tools is installed, e.g. Debian's python3-grpcio and
 * python3-grpc-tools), and the TypeScript microphone example (compiled here with tsc).
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { packageRoot } from '../../src/inference';
import { analyzeFile } from '../../src/pipeline';
import { envSkip } from '../env';
import { API_KEY, runAsync, sh, startServer, stereoSpeechWav, TestServer, tmpDir } from './helpers';

const ROOT = packageRoot();
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');

let ts: TestServer;
let wav16: string;

before(async () => {
  ts = await startServer();
  // 16 kHz mono 16-bit WAV of the first 9 s of the demo (speech, voices, music).
  wav16 = path.join(tmpDir(), 'demo-9s.wav');
  sh('sox', ['-V1', path.join(ROOT, 'test', 'fixtures', 'demo.flac'), '-b', '16', wav16, 'trim', '0', '9']);
});
after(async () => {
  await ts.close();
});

interface Line {
  timestamp?: number;
  results?: Record<string, { result: string; confidence: number }>;
  summary?: Record<string, Record<string, number>>;
}

/** The JSON lines but the provisional results ("final": false; test/streaming/provisional.test.ts checks those). */
const lines = (stdout: string): Line[] =>
  stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line & { final?: boolean })
    .filter((l) => l.final !== false)
    .map(({ final, ...l }) => {
      assert.equal(final, l.results ? true : undefined, 'a step line has "final": true (every client here prints it)');
      return l;
    });

async function fileLabels(file: string, models: string[], outputPeriodMs: number, channel?: number): Promise<string[][]> {
  const res = await analyzeFile({ path: file }, { models, outputPeriodMs, ...(channel !== undefined ? { channel } : {}) }, { engine: ts.srv.engine });
  return res.channels[String(channel ?? 0)]!.time_series.map((s) => models.map((m) => s.results[m]!.result));
}

describe('auris stream (CLI)', () => {
  it('prints one JSON line per step (timestamps 0, p, 2p, ...), labels equal to the file job, then the summary', async () => {
    const models = ['speech', 'gender'];
    const r = await runAsync(process.execPath, [CLI, 'stream', wav16, '--grpc', ts.address, '--api-key', API_KEY, '--models', models.join(','), '--output-period', '256', '--summary', '--chunk-ms', '37']);
    assert.equal(r.code, 0, r.stderr);
    const out = lines(r.stdout);
    const summary = out.pop()!;
    assert.ok(summary.summary && Object.keys(summary.summary).join() === models.join());
    out.forEach((l, i) => {
      assert.equal(l.timestamp, i * 256);
      assert.deepEqual(Object.keys(l.results!), models);
    });
    assert.deepEqual(
      out.map((l) => models.map((m) => l.results![m]!.result)),
      await fileLabels(wav16, models, 256),
    );
  });

  it('--realtime streams the whole file, results in order (the pacing itself: test/websocket/pacing.test.ts); a bad key exits 1 with the error code', async () => {
    const short = path.join(tmpDir(), 'short.wav');
    const seconds = 2;
    sh('sox', ['-V1', wav16, short, 'trim', '0', String(seconds)]);
    const chunkMs = 100;
    const ok = await runAsync(process.execPath, [CLI, 'stream', short, '--grpc', ts.address, '--api-key', API_KEY, '--models', 'speech', '--output-period', '64', '--chunk-ms', String(chunkMs), '--realtime']);
    assert.equal(ok.code, 0, ok.stderr);
    const got = lines(ok.stdout);
    assert.equal(got.length, Math.ceil(seconds / 0.064));
    got.forEach((l, i) => assert.equal(l.timestamp, i * 64, 'one line per step, in order'));
    const bad = await runAsync(process.execPath, [CLI, 'stream', short, '--grpc', ts.address, '--api-key', 'wrong-key-0000']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /auris: error \[INVALID_API_KEY\]/);
  });
});

/** A python3 that has grpcio and grpc_tools ($AURIS_PYTHON first, then Debian's, then PATH's), or undefined. */
function pythonWithGrpc(): string | undefined {
  const candidates = [process.env['AURIS_PYTHON'], '/usr/bin/python3', 'python3'].filter((c): c is string => !!c);
  for (const py of candidates) {
    const r = spawnSync(py, ['-c', 'import grpc, grpc_tools.protoc'], { encoding: 'utf8' });
    if (r.status === 0) return py;
  }
  return undefined;
}

describe('a client in another language', () => {
  const py = pythonWithGrpc();
  it('Python (grpcio + grpc_tools, stubs generated from the proto file) streams a file and reads the results', { skip: envSkip(py ? false : 'python3 with grpcio and grpc_tools not installed (Debian: python3-grpcio python3-grpc-tools)') }, async () => {
    const wav = stereoSpeechWav(); // 44.1 kHz stereo 16-bit: resampled on the server, channel 1 analysed
    const models = ['speech', 'arousal', 'gender'];
    const r = await runAsync(py!, [path.join(ROOT, 'examples', 'stream-file.py'), wav, '--grpc', ts.address, '--api-key', API_KEY, '--models', models.join(','), '--output-period', '512', '--channel', '1', '--summary', '--raw', '--chunk-ms', '77']);
    assert.equal(r.code, 0, r.stderr);
    const out = lines(r.stdout);
    const summary = out.pop()!;
    assert.deepEqual(Object.keys(summary.summary!).sort(), [...models].sort());
    out.forEach((l, i) => assert.equal(l.timestamp, i * 512));
    assert.deepEqual(
      out.map((l) => models.map((m) => l.results![m]!.result)),
      await fileLabels(wav, models, 512, 1),
    );
    const bad = await runAsync(py!, [path.join(ROOT, 'examples', 'stream-file.py'), wav, '--grpc', ts.address, '--api-key', API_KEY, '--output-period', '100']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /auris: error \[INVALID_ARGUMENT\]: config\.output_period must be a positive multiple of 64/);
    // Not a WAV (an MP3): a clear usage error, not a wave.Error traceback.
    const mp3 = path.join(tmpDir(), 'voice.mp3');
    sh('lame', ['--quiet', wav16, mp3]);
    const notWav = await runAsync(py!, [path.join(ROOT, 'examples', 'stream-file.py'), mp3, '--grpc', ts.address, '--api-key', API_KEY]);
    assert.equal(notWav.code, 2);
    assert.match(notWav.stderr, /voice\.mp3 is not a PCM WAV file .*auris stream/);
    assert.doesNotMatch(notWav.stderr, /Traceback/);
  });
});

describe('examples/stream-mic.ts', () => {
  it('compiles on its own and streams raw PCM from stdin', async () => {
    const outDir = path.join(tmpDir(), 'examples');
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const c = spawnSync(process.execPath, [tsc, '--module', 'commonjs', '--target', 'es2022', '--esModuleInterop', '--skipLibCheck', '--strict', '--types', 'node', '--typeRoots', path.join(ROOT, 'node_modules', '@types'), '--outDir', outDir, path.join(ROOT, 'examples', 'stream-mic.ts')], { encoding: 'utf8' });
    assert.equal(c.status, 0, c.stdout + c.stderr);
    const pcm = sh('sox', ['-V1', wav16, '-t', 'raw', '-b', '16', '-e', 'signed', '-r', '16000', '-c', '1', '-', 'trim', '0', '3']);
    const r = await runAsync(process.execPath, [path.join(outDir, 'stream-mic.js'), '--grpc', ts.address, '--api-key', API_KEY, '--models', 'speech', '--output-period', '512', '--proto', path.join(ROOT, 'proto', 'audioanalysis', 'v1', 'audio_analysis.proto')], {
      env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules') },
      input: pcm,
    });
    assert.equal(r.code, 0, r.stderr);
    const out = lines(r.stdout);
    assert.deepEqual(out.map((l) => l.timestamp), [0, 512, 1024, 1536, 2048, 2560]);
    assert.ok(out.every((l) => typeof l.results!['speech']!.result === 'string'));
    assert.ok(fs.existsSync(path.join(outDir, 'stream-mic.js')));
  });
});
