/**
 * One list of audio formats (src/audio/formats.ts): every listed container decodes (files made
 * here with sox, ffmpeg and lame from one tone), the decoder's own UNSUPPORTED_FORMAT message
 * names the same list, and so do the error catalogue, the CLI help, the web console and the docs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { AudioError, probe } from '../../src/audio';
import { SUPPORTED_FORMATS, SUPPORTED_FORMATS_TEXT } from '../../src/audio/formats';
import { ERRORS } from '../../src/errors';

const ROOT = path.join(__dirname, '..', '..', '..');
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-formats-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
}

/** A 1 s tone in the container `name` names; the format probe() reports for it. */
const MAKERS: Record<(typeof SUPPORTED_FORMATS)[number], Array<{ file: string; make: (src: string, out: string) => void; format: string }>> = {
  WAV: [{ file: 't.wav', make: (s, o) => fs.copyFileSync(s, o), format: 'WAV' }],
  FLAC: [{ file: 't.flac', make: (s, o) => run('sox', [s, o]), format: 'FLAC' }],
  MP3: [{ file: 't.mp3', make: (s, o) => run('lame', ['--quiet', s, o]), format: 'MP3' }],
  'Ogg Vorbis/Opus': [
    { file: 't.ogg', make: (s, o) => run('ffmpeg', ['-v', 'error', '-i', s, '-c:a', 'libvorbis', o]), format: 'OGG' },
    { file: 't.opus', make: (s, o) => run('ffmpeg', ['-v', 'error', '-i', s, '-c:a', 'libopus', o]), format: 'OGG' },
  ],
  AIFF: [{ file: 't.aiff', make: (s, o) => run('sox', [s, o]), format: 'AIFF' }],
  AU: [{ file: 't.au', make: (s, o) => run('sox', [s, o]), format: 'AU' }],
  CAF: [{ file: 't.caf', make: (s, o) => run('ffmpeg', ['-v', 'error', '-i', s, o]), format: 'CAF' }],
  W64: [{ file: 't.w64', make: (s, o) => run('sox', [s, o]), format: 'W64' }],
  RF64: [{ file: 't-rf64.wav', make: (s, o) => run('ffmpeg', ['-v', 'error', '-i', s, '-rf64', 'always', o]), format: 'RF64' }],
};

describe('supported formats: one list', () => {
  it('every listed format decodes', async () => {
    const tone = path.join(tmp, 'tone.wav');
    run('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', tone, 'synth', '1', 'sine', '440', 'vol', '0.5']);
    for (const name of SUPPORTED_FORMATS) {
      for (const m of MAKERS[name]) {
        const out = path.join(tmp, m.file);
        m.make(tone, out);
        const info = await probe({ path: out });
        assert.equal(info.format, m.format, `${name} (${m.file})`);
        assert.ok(info.durationSec > 0.9 && info.durationSec < 1.2, `${name}: ${info.durationSec} s`);
      }
    }
  });

  it("is the decoder's own list in its UNSUPPORTED_FORMAT message", async () => {
    await assert.rejects(probe({ buffer: Buffer.from('this is not audio at all') }), (e: unknown) => {
      assert.ok(e instanceof AudioError && e.code === 'UNSUPPORTED_FORMAT');
      assert.ok(e.message.includes(`(expected ${SUPPORTED_FORMATS_TEXT})`), e.message);
      return true;
    });
  });

  it('is the list of the error catalogue, the CLI help, the web console and the docs', () => {
    assert.ok(ERRORS.UNSUPPORTED_FORMAT.message.includes(SUPPORTED_FORMATS_TEXT));
    for (const cmd of ['analyze', 'stream']) {
      const help = spawnSync(process.execPath, [CLI, cmd, '--help'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
      assert.ok(help.includes(SUPPORTED_FORMATS_TEXT), `auris ${cmd} --help: ${help}`);
    }
    for (const file of ['web/index.html', 'docs/errors.md', 'docs/api.md', 'docs/audio.md']) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\s+/g, ' ');
      assert.ok(text.includes(SUPPORTED_FORMATS_TEXT), `${file} does not name the supported formats as "${SUPPORTED_FORMATS_TEXT}"`);
      assert.doesNotMatch(text, /\(WAV, FLAC, MP3\)|WAV\/FLAC\/MP3/, file);
    }
  });
});
