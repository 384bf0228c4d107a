/**
 * Benchmark inputs, generated with espeak-ng, sox and lame into bench/out/ (gitignored):
 *  - a 16 kHz mono 16-bit WAV (1 hour; 5 minutes with --quick),
 *  - a 44.1 kHz stereo 128 kbit/s MP3 (10 minutes; 2 minutes with --quick).
 * Both repeat a 2-minute pattern of speech (two synthetic voices), music-like tones,
 * noise, silence and speech over music. Files are reused when they already exist
 * (the name carries the generator version and the duration).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const GEN_VERSION = 1;
const PATTERN_SEC = 120;

export interface BenchInput {
  id: 'wav' | 'mp3';
  path: string;
  description: string;
  durationSec: number;
  sampleRate: number;
  channels: number;
  /** Audio seconds the service analyses: duration x channels. */
  channelSec: number;
  bytes: number;
}

const TEXT_A =
  'The committee met on Tuesday morning to discuss the budget for the coming year. ' +
  'Several members raised concerns about the cost of the new building, and the chair asked for a detailed report. ' +
  'After a short break, the discussion moved on to the schedule for the summer festival, which will take place in the park. ' +
  'Volunteers are still needed for the ticket booth and for cleaning up afterwards.';
const TEXT_B =
  'Good evening, and welcome to the weather report. Tomorrow will start cloudy in the north, ' +
  'with a few showers spreading east during the afternoon. In the south it stays dry and bright, ' +
  'with temperatures reaching twenty two degrees. Over the weekend a band of rain arrives from the west, ' +
  'so keep an umbrella close at hand if you are heading out on Saturday.';

function run(cmd: string, args: string[]): void {
  execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** sox: any input -> 16 kHz mono float WAV of exactly `sec` seconds (padded or trimmed). */
function fit(input: string, output: string, sec: number, extra: string[] = []): void {
  run('sox', ['-V1', input, '-r', '16000', '-c', '1', '-e', 'floating-point', '-b', '32', output, ...extra, 'pad', '0', String(sec), 'trim', '0', String(sec)]);
}

function speech(dir: string, name: string, text: string, voice: string, pitch: number, speed: number, sec: number): string {
  const raw = path.join(dir, `${name}.raw.wav`);
  // say the text twice so that it surely fills `sec` seconds
  run('espeak-ng', ['-v', voice, '-p', String(pitch), '-s', String(speed), '-w', raw, `${text} ${text}`]);
  const out = path.join(dir, `${name}.wav`);
  fit(raw, out, sec, ['gain', '-n', '-3']);
  return out;
}

/** Plucked chords, one per 0.5 s, over a slow progression: music-like, harmonic, rhythmic. */
function music(dir: string, name: string, sec: number): string {
  const chords = [
    ['C3', 'E3', 'G3', 'C4'],
    ['A2', 'C3', 'E3', 'A3'],
    ['F2', 'A2', 'C3', 'F3'],
    ['G2', 'B2', 'D3', 'G3'],
  ];
  const parts: string[] = [];
  for (let i = 0; i < chords.length; i++) {
    const f = path.join(dir, `${name}.c${i}.wav`);
    run('sox', ['-V1', '-n', '-r', '16000', '-c', '4', f, 'synth', '0.5', ...chords[i].flatMap((n) => ['pluck', n]), 'remix', '-', 'gain', '-n', '-6']);
    parts.push(f, f, f, f);
  }
  const bar = path.join(dir, `${name}.bar.wav`);
  run('sox', ['-V1', ...parts, bar]); // 8 s
  const out = path.join(dir, `${name}.wav`);
  fit(bar, out, sec, ['repeat', String(Math.ceil(sec / 8)), 'reverb', '30']);
  return out;
}

/** Sine arpeggio with vibrato: a second kind of music. */
function tones(dir: string, name: string, sec: number): string {
  const notes = ['A4', 'C5', 'E5', 'A5', 'E5', 'C5'];
  const parts: string[] = [];
  for (let i = 0; i < notes.length; i++) {
    const f = path.join(dir, `${name}.n${i}.wav`);
    run('sox', ['-V1', '-n', '-r', '16000', '-c', '1', f, 'synth', '0.25', 'sine', notes[i], 'fade', 'q', '0.01', '0.25', '0.05', 'gain', '-12']);
    parts.push(f);
  }
  const bar = path.join(dir, `${name}.bar.wav`);
  run('sox', ['-V1', ...parts, bar]); // 1.5 s
  const out = path.join(dir, `${name}.wav`);
  fit(bar, out, sec, ['repeat', String(Math.ceil(sec / 1.5)), 'tremolo', '5', '30']);
  return out;
}

function noise(dir: string, name: string, sec: number): string {
  const out = path.join(dir, `${name}.wav`);
  // pink noise swelling like waves, then brown noise with short beeps ("other" sounds)
  const a = path.join(dir, `${name}.a.wav`);
  const b = path.join(dir, `${name}.b.wav`);
  run('sox', ['-V1', '-n', '-r', '16000', '-c', '1', a, 'synth', String(sec / 2), 'pinknoise', 'tremolo', '0.2', '80', 'gain', '-n', '-12']);
  run('sox', ['-V1', '-n', '-r', '16000', '-c', '1', b, 'synth', String(sec / 2), 'brownnoise', 'synth', 'square', 'amod', '2', '90', 'gain', '-n', '-10']);
  run('sox', ['-V1', a, b, '-e', 'floating-point', '-b', '32', out]);
  return out;
}

function silence(dir: string, name: string, sec: number, noiseDb?: number): string {
  const out = path.join(dir, `${name}.wav`);
  if (noiseDb === undefined) {
    run('sox', ['-V1', '-n', '-r', '16000', '-c', '1', '-e', 'floating-point', '-b', '32', out, 'trim', '0', String(sec)]);
  } else {
    run('sox', ['-V1', '-n', '-r', '16000', '-c', '1', '-e', 'floating-point', '-b', '32', out, 'synth', String(sec), 'whitenoise', 'gain', '-n', String(noiseDb)]);
  }
  return out;
}

/** The 2-minute pattern, 16 kHz mono float, and its segment list (for reference). */
function makePattern(dir: string): { file: string; segments: { startSec: number; sec: number; kind: string }[] } {
  const plan: [string, number, () => string][] = [
    ['speech (male voice)', 20, () => speech(dir, 'sp_a', TEXT_A, 'en-us', 40, 165, 20)],
    ['silence', 5, () => silence(dir, 'sil_a', 5)],
    ['music (plucked chords)', 20, () => music(dir, 'mus_a', 20)],
    ['noise + beeps', 15, () => noise(dir, 'noi_a', 15)],
    ['speech (female voice)', 20, () => speech(dir, 'sp_b', TEXT_B, 'en-us+f3', 70, 155, 20)],
    ['near silence (-70 dBFS noise)', 5, () => silence(dir, 'sil_b', 5, -70)],
    ['speech over music', 25, () => mix(dir, 'spmus', 25)],
    ['music (sine arpeggio)', 10, () => tones(dir, 'mus_b', 10)],
  ];
  const segments: { startSec: number; sec: number; kind: string }[] = [];
  const files: string[] = [];
  let t = 0;
  for (const [kind, sec, make] of plan) {
    files.push(make());
    segments.push({ startSec: t, sec, kind });
    t += sec;
  }
  if (t !== PATTERN_SEC) throw new Error(`pattern is ${t} s, expected ${PATTERN_SEC}`);
  const file = path.join(dir, 'pattern.wav');
  run('sox', ['-V1', ...files, file]);
  return { file, segments };
}

function mix(dir: string, name: string, sec: number): string {
  const sp = speech(dir, `${name}.sp`, TEXT_B + ' ' + TEXT_A, 'en-gb', 50, 170, sec);
  const mu = music(dir, `${name}.mu`, sec);
  const out = path.join(dir, `${name}.wav`);
  run('sox', ['-V1', '-m', '-v', '1.0', sp, '-v', '0.35', mu, '-e', 'floating-point', '-b', '32', out]);
  return out;
}

function probe(file: string): { durationSec: number; sampleRate: number; channels: number } {
  const out = execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=sample_rate,channels:format=duration', '-of', 'json', file], { encoding: 'utf8' });
  const j = JSON.parse(out) as { streams: { sample_rate: string; channels: number }[]; format: { duration: string } };
  return { durationSec: Number(j.format.duration), sampleRate: Number(j.streams[0].sample_rate), channels: j.streams[0].channels };
}

/** Ten espeak-ng voices (voice, pitch, speed) for the speaker map's conversation. */
const TEN_VOICES: [string, number, number][] = [
  ['en-us+m3', 40, 165], ['en-us+f3', 70, 155], ['en-gb+m1', 30, 150], ['en+f4', 80, 170], ['de+m2', 45, 160],
  ['fr+f2', 65, 150], ['es+m4', 35, 175], ['it+f1', 75, 160], ['nl+m5', 50, 145], ['pl+f5', 60, 165],
];

/**
 * A conversation of ten voices for the speaker map (`speakers`): a 5-minute round of turns of 2-8 s,
 * every voice several times, with pauses of 0.3-1 s, repeated to `minutes` (16 kHz mono WAV).
 */
export function ensureTenVoices(outDir: string, minutes: number, log: (msg: string) => void = () => {}): string {
  const out = path.join(outDir, `bench-v${GEN_VERSION}-${minutes}min-10-voices.wav`);
  if (fs.existsSync(out)) return out;
  log(`generating ${path.basename(out)}`);
  const work = fs.mkdtempSync(path.join(outDir, 'gen-'));
  try {
    let seed = 7;
    const rand = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const files: string[] = [];
    let t = 0;
    for (let i = 0; t < 300; i++) {
      const [voice, pitch, speed] = TEN_VOICES[i % 10 === 0 ? Math.floor(rand() * 10) : (i * 3) % 10]!;
      const sec = 2 + Math.round(rand() * 6);
      files.push(speech(work, `t${i}`, i % 2 ? TEXT_A : TEXT_B, voice, pitch, speed, sec));
      const pause = 0.3 + Math.round(rand() * 7) / 10;
      files.push(silence(work, `p${i}`, pause));
      t += sec + pause;
    }
    const round = path.join(work, 'round.wav');
    run('sox', ['-V1', ...files, round]);
    const tmp = `${out}.tmp.wav`;
    run('sox', ['-V1', round, '-e', 'signed-integer', '-b', '16', tmp, 'repeat', String(Math.ceil((minutes * 60) / t) - 1), 'trim', '0', String(minutes * 60)]);
    fs.renameSync(tmp, out);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return out;
}

/** Generates (or reuses) the benchmark inputs in `outDir`. */
export function ensureInputs(outDir: string, quick: boolean, log: (msg: string) => void = () => {}): BenchInput[] {
  fs.mkdirSync(outDir, { recursive: true });
  const wavMin = quick ? 5 : 60;
  const mp3Min = quick ? 2 : 10;
  const wavPath = path.join(outDir, `bench-v${GEN_VERSION}-${wavMin}min-16k-mono.wav`);
  const mp3Path = path.join(outDir, `bench-v${GEN_VERSION}-${mp3Min}min-44k-stereo.mp3`);
  if (!fs.existsSync(wavPath) || !fs.existsSync(mp3Path)) {
    const t0 = Date.now();
    const work = fs.mkdtempSync(path.join(outDir, 'gen-'));
    try {
      const { file: pattern, segments } = makePattern(work);
      fs.writeFileSync(path.join(outDir, 'pattern-segments.json'), JSON.stringify({ patternSec: PATTERN_SEC, segments }, null, 2));
      if (!fs.existsSync(wavPath)) {
        log(`generating ${path.basename(wavPath)}`);
        const tmp = `${wavPath}.tmp.wav`;
        const reps = Math.ceil((wavMin * 60) / PATTERN_SEC);
        run('sox', ['-V1', pattern, '-e', 'signed-integer', '-b', '16', tmp, 'repeat', String(reps - 1), 'trim', '0', String(wavMin * 60)]);
        fs.renameSync(tmp, wavPath);
      }
      if (!fs.existsSync(mp3Path)) {
        log(`generating ${path.basename(mp3Path)}`);
        // right channel: the pattern rotated by 37 s, so the two channels differ
        const r1 = path.join(work, 'right1.wav');
        const r2 = path.join(work, 'right2.wav');
        const rot = path.join(work, 'rot.wav');
        run('sox', ['-V1', pattern, r1, 'trim', '37']);
        run('sox', ['-V1', pattern, r2, 'trim', '0', '37']);
        run('sox', ['-V1', r1, r2, rot]);
        const stereo = path.join(work, 'stereo.wav');
        const reps = Math.ceil((mp3Min * 60) / PATTERN_SEC);
        run('sox', ['-V1', '-M', pattern, rot, '-r', '44100', '-e', 'signed-integer', '-b', '16', stereo, 'repeat', String(reps - 1), 'trim', '0', String(mp3Min * 60)]);
        const tmp = `${mp3Path}.tmp.mp3`;
        run('lame', ['--quiet', '-b', '128', stereo, tmp]);
        fs.renameSync(tmp, mp3Path);
      }
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
    log(`inputs ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const inputs: BenchInput[] = [];
  for (const [id, p, description] of [
    ['wav', wavPath, `${wavMin} min, 16 kHz mono 16-bit WAV`],
    ['mp3', mp3Path, `${mp3Min} min, 44.1 kHz stereo 128 kbit/s MP3`],
  ] as const) {
    const info = probe(p);
    inputs.push({
      id,
      path: p,
      description,
      ...info,
      channelSec: info.durationSec * info.channels,
      bytes: fs.statSync(p).size,
    });
  }
  return inputs;
}
