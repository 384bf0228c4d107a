/**
 * End-to-end tests of the web console in a real browser: Debian's Chromium, headless, driven
 * by playwright-core, against the real server (real models) on a loopback port, once on the
 * embedded backends and once on NATS JetStream (a real nats-server; skipped without one).
 * The console only uses the public REST API, so both must behave the same.
 * Screenshots go to test/out/.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { AurisServer } from '../../src/http/server';
import { defaultModelsDir } from '../../src/inference/env';
import { modelsIn } from '../../src/inference/registry';
import { openNatsBackends } from '../../src/jobs/nats';
import { envSkip } from '../env';
import { natsUnavailable, TestNatsServer } from '../nats/server';
import { api, buildConsole, chromiumUnavailable, KEY, launchBrowser, outPath, serveFile, speechThenSilence, startServer, tempDir, truncatedWav } from './helpers';

interface Segment {
  timestamp_start: number;
  timestamp_end: number;
  result: string;
  confidence: number;
}
interface Envelope {
  job_id: string;
  result: { channels: Record<string, { time_series: unknown[]; summary?: Record<string, Record<string, number>>; transitions?: Record<string, Segment[]> }> };
}

const STEP_TIMEOUT = 60_000;
/** The installed models in the console's order: speech, arousal, gender first, then the others. */
const FIRST = ['speech', 'arousal', 'gender'];
const MODELS = [...FIRST, ...modelsIn(defaultModelsDir()).filter((m) => !FIRST.includes(m)).sort()];

// The page functions run in the browser; the project compiles without the DOM lib, so these
// few DOM shapes are declared here (module scope only).
type HTMLElement = { dataset: Record<string, string | undefined> };
type HTMLInputElement = HTMLElement & { value: string };
type HTMLProgressElement = HTMLElement & { value: number };
type HTMLCanvasElement = HTMLElement & {
  width: number;
  height: number;
  getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
};
declare const document: { activeElement: unknown; documentElement: { scrollWidth: number; clientWidth: number } };

const browserSkip = envSkip(chromiumUnavailable());
const natsSkip = browserSkip || envSkip(natsUnavailable());

for (const mode of ['embedded', 'nats'] as const) describe(`web console (Chromium, real server, ${mode})`, { timeout: 300_000, skip: mode === 'nats' ? natsSkip : browserSkip }, () => {
  let server: AurisServer;
  let nats: TestNatsServer | null = null;
  let browser: { context: BrowserContext; close(): Promise<void> };
  const data = tempDir('auris-console-data-');
  const work = tempDir('auris-console-audio-');
  const shot = (name: string): string => outPath(`console${mode === 'nats' ? '-nats' : ''}-${name}`);
  let wav: string;

  before(async () => {
    buildConsole();
    wav = speechThenSilence(work.path);
    if (mode === 'nats') {
      nats = await TestNatsServer.start();
      const backends = await openNatsBackends({ servers: nats.url, prefix: 'console', retentionSec: 3600, tmpDir: data.path, reconnectWaitMs: 100 });
      server = await startServer(data.path, backends);
    } else {
      server = await startServer(data.path);
    }
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await nats?.close();
    data.cleanup();
    work.cleanup();
  });

  async function openConsole(): Promise<Page> {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    (page as Page & { problems?: string[] }).problems = problems;
    await page.goto(server.url + '/');
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.locator('#key-status.ok').waitFor();
    return page;
  }

  const problemsOf = (page: Page): string[] => (page as Page & { problems?: string[] }).problems ?? [];

  /** Waits until the job shown has finished; fails at once, with its error, when it failed. */
  async function waitSucceeded(page: Page): Promise<void> {
    await page.locator('#job-status[data-status="succeeded"], #job-status[data-status="failed"]').waitFor();
    if ((await page.locator('#job-status').getAttribute('data-status')) === 'failed') {
      assert.fail(`the job failed: ${await page.locator('#job-error').textContent()}`);
    }
  }

  test('upload speech + silence: lanes, summary, tooltip, keyboard, downloads, jobs list, delete', async () => {
    const page = await openConsole();
    // Models come from /readyz; every installed model is offered and checked.
    await page.locator('#models input[value="speech"]').waitFor();
    assert.deepEqual(await page.locator('#models input').evaluateAll((els) => els.map((e) => (e as unknown as HTMLInputElement).value)), MODELS);

    await page.getByLabel(/Drop an audio file/).setInputFiles(wav);
    await page.getByLabel('Output period (ms)').fill('256');
    await page.getByLabel('Raw values').check();
    await page.getByRole('button', { name: 'Analyse' }).click();

    await waitSucceeded(page);
    const jobId = (await page.locator('#job-id').textContent())!.trim();
    assert.match(jobId, /^[0-9a-f-]{36}$/);
    assert.equal(await page.locator('#job-progress').evaluate((e) => (e as unknown as HTMLProgressElement).value), 1);

    // The request the console sent.
    const rec = (await (await api(server)(`/file-processing/jobs/${jobId}`)).json()) as {
      request: Record<string, unknown>;
      audio: { duration_sec: number };
    };
    assert.deepEqual(rec.request.models, MODELS);
    assert.equal(rec.request.output_period, 256);
    assert.equal(rec.request.include_summary, true);
    assert.equal(rec.request.include_transitions, true);
    assert.equal(rec.request.include_raw_values, true);
    assert.equal(rec.request.channel, null);

    const resultsRes = await api(server)(`/file-processing/jobs/${jobId}/results`);
    assert.equal(resultsRes.status, 200);
    const resultsText = await resultsRes.text();
    const env = JSON.parse(resultsText) as Envelope;
    const ch = env.result.channels['0']!;

    // Lanes: one per model, segments equal to the transitions of the results endpoint; the
    // speakers model: one lane per speaker, without no_speech and silence (test/console/speakers.test.ts).
    await page.locator('.lane[data-model="speech"] .seg').first().waitFor();
    for (const model of MODELS) {
      const shown = await page.locator(`.channel[data-channel="0"] .lane[data-model="${model}"] .seg`).evaluateAll((els) =>
        els.map((e) => {
          const d = (e as unknown as HTMLElement).dataset;
          return { timestamp_start: Number(d.start), timestamp_end: Number(d.end), result: d.label!, confidence: Number(d.confidence) };
        }),
      );
      const expected = model === 'speakers' ? ch.transitions![model]!.filter((s) => /^speaker_\d+$/.test(s.result)) : ch.transitions![model];
      assert.deepEqual(shown, expected, `lane ${model}`);
    }
    // Speech-like then silent: the speech lane says speech first and ends with silence.
    const speechLabels = ch.transitions!.speech!.map((s) => s.result);
    assert.ok(speechLabels.includes('speech'), `speech lane: ${speechLabels.join(',')}`);
    assert.equal(speechLabels[speechLabels.length - 1], 'silence');
    assert.ok(ch.transitions!.speech!.at(-1)!.timestamp_end - ch.transitions!.speech!.at(-1)!.timestamp_start >= 2000);
    const visibleText = await page.locator('.lane[data-model="speech"] .seg-text').allTextContents();
    assert.ok(visibleText.includes('speech') && visibleText.includes('silence'), visibleText.join(','));

    // Summary numbers match the results endpoint (the shares of the audio; with gender beside speakers,
    // each speaker's gender is in the speakers' legend instead: test/console/speakers.test.ts).
    for (const [model, fractions] of Object.entries(ch.summary!)) {
      for (const [key, value] of Object.entries(fractions)) {
        if (!key.endsWith('_fraction')) continue;
        const li = page.locator(`.channel[data-channel="0"] .summary-model[data-model="${model}"] li[data-key="${key}"]`);
        assert.equal(await li.getAttribute('data-value'), String(value), `${model}.${key}`);
        assert.equal((await li.locator('.value').textContent())!.trim(), `${(value * 100).toFixed(2)} %`, `${model}.${key} shown`);
      }
    }

    // The waveform was decoded in the browser and drawn; raw curves are drawn too.
    const inked = (sel: string): Promise<number> =>
      page.locator(sel).first().evaluate((c) => {
        const canvas = c as unknown as HTMLCanvasElement;
        const px = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) n++;
        return n;
      });
    assert.ok((await inked('canvas.waveform')) > 500, 'waveform drawn');
    assert.equal(await page.locator('canvas.curve').count(), MODELS.length, 'one raw curve per model');
    assert.ok((await inked('canvas.curve[data-model="speech"]')) > 200, 'raw curve drawn');

    // Hover: time, label and confidence.
    const firstSpeech = page.locator('.lane[data-model="speech"] .seg').first();
    await firstSpeech.hover();
    const tip = page.locator('#tooltip');
    await tip.waitFor({ state: 'visible' });
    const tipText = (await tip.textContent())!;
    assert.match(tipText, /speech: speech/);
    assert.match(tipText, /at \d+\.\d\d s/);
    assert.match(tipText, new RegExp(`confidence ${ch.transitions!.speech![0]!.confidence.toFixed(4)}`));

    // Keyboard: Tab reaches the lane, arrows move between segments, the tooltip follows focus.
    // Tab order: after the job's buttons comes the play bar, then the first speech segment, then the next lane.
    const activeSeg = (): Promise<string> =>
      page.evaluate(() => {
        const a = document.activeElement as { dataset: Record<string, string>; parentElement: { dataset: Record<string, string> } };
        return `${a.parentElement.dataset.model}:${a.dataset.label}@${a.dataset.start}`;
      });
    await page.locator('#job-delete').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => (document.activeElement as unknown as { className: string }).className), 'secondary play-button');
    await page.keyboard.press('Tab');
    assert.equal(await activeSeg(), `speech:${ch.transitions!.speech![0]!.result}@0`);
    await page.keyboard.press('Tab');
    assert.equal(await activeSeg(), `arousal:${ch.transitions!.arousal![0]!.result}@0`);
    await page.keyboard.press('Shift+Tab');
    assert.equal(await activeSeg(), `speech:${ch.transitions!.speech![0]!.result}@0`);
    await page.keyboard.press('End');
    const lastLabel = await page.evaluate(() => (document.activeElement as HTMLElement).dataset.label);
    assert.equal(lastLabel, 'silence');
    assert.match((await tip.textContent())!, /speech: silence/);
    await page.keyboard.press('Home');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).dataset.start), '0');
    assert.match((await firstSpeech.getAttribute('aria-label'))!, /^speech: speech, 0\.00 s to/);
    await page.keyboard.press('Escape');

    // Downloads: JSON identical to the results endpoint; CSV one row per segment.
    const [jsonDl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download JSON' }).click()]);
    assert.equal(jsonDl.suggestedFilename(), `auris-${jobId}.json`);
    const jsonPath = shot(`results.json`);
    await jsonDl.saveAs(jsonPath);
    assert.equal(readFileSync(jsonPath, 'utf8'), resultsText);
    const [csvDl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
    const csvPath = shot(`segments.csv`);
    await csvDl.saveAs(csvPath);
    const csv = readFileSync(csvPath, 'utf8').trimEnd().split('\r\n');
    assert.equal(csv[0], 'job_id,channel,model,timestamp_start,timestamp_end,start_sec,end_sec,result,confidence');
    const nSegs = Object.values(ch.transitions!).reduce((n, s) => n + s.length, 0);
    assert.equal(csv.length, nSegs + 1);
    const s0 = ch.transitions!.speech![0]!;
    assert.equal(csv[1], [jobId, '0', 'speech', s0.timestamp_start, s0.timestamp_end, (s0.timestamp_start / 1000).toFixed(3), (s0.timestamp_end / 1000).toFixed(3), s0.result, s0.confidence].join(','));

    // Jobs list shows the job as succeeded.
    const row = page.locator(`#jobs-body tr[data-job-id="${jobId}"]`);
    await row.locator('.badge[data-status="succeeded"]').waitFor();
    assert.match((await row.textContent())!, /speech-then-silence\.wav/);
    assert.match((await row.textContent())!, /speech, arousal, gender/);

    // Screenshots: 1280x800 and a narrow phone-sized screen (no horizontal overflow there).
    await page.mouse.move(0, 0);
    await page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await page.screenshot({ path: shot('1280x800.png') });
    await page.screenshot({ path: shot('1280-full.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `horizontal overflow on a narrow screen: ${overflow}px`);
    await page.screenshot({ path: shot('narrow-390.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });

    // Delete from the list (two steps), the job is gone on the server.
    const del = row.getByRole('button', { name: /^Delete job/ });
    await del.click();
    await row.getByRole('button', { name: /^Confirm deleting/ }).click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(server)(`/file-processing/jobs/${jobId}`)).status, 404);
    await page.locator('#job-empty', { hasText: 'no longer exists' }).waitFor();

    assert.deepEqual(problemsOf(page), []);
    await page.close();
  });

  test('a corrupt file: the failed job shows its error code and message', async () => {
    const page = await openConsole();
    await page.getByLabel(/Drop an audio file/).setInputFiles(truncatedWav(wav, work.path));
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#job-status[data-status="failed"]').waitFor();
    const jobId = (await page.locator('#job-id').textContent())!.trim();
    const rec = (await (await api(server)(`/file-processing/jobs/${jobId}`)).json()) as { error: { code: string; message: string } };
    assert.equal(rec.error.code, 'CORRUPT_AUDIO');
    const alert = page.locator('#job-error');
    await alert.waitFor({ state: 'visible' });
    assert.equal(await alert.getAttribute('role'), 'alert');
    assert.equal((await page.locator('#job-error-code').textContent())!.trim(), 'CORRUPT_AUDIO');
    assert.equal((await page.locator('#job-error-message').textContent())!.trim(), rec.error.message);
    assert.equal(await page.locator('#results-panel').isHidden(), true);
    await page.locator(`#jobs-body tr[data-job-id="${jobId}"] .err-code`, { hasText: 'CORRUPT_AUDIO' }).waitFor();
    await page.screenshot({ path: shot('failed.png') });
    assert.deepEqual(problemsOf(page), []);
    await page.close();
  });

  test('a URL job: lanes without a waveform; reload keeps the key and the job; open from the list', async () => {
    const file = await serveFile(wav);
    try {
      const page = await openConsole();
      await page.getByRole('radio', { name: 'By URL' }).check();
      await page.getByLabel('File URL').fill(file.url);
      await page.getByLabel('Output period (ms)').fill('512');
      await page.locator('#models input[value="arousal"]').uncheck();
      await page.getByRole('button', { name: 'Analyse' }).click();
      await waitSucceeded(page);
      const jobId = (await page.locator('#job-id').textContent())!.trim();
      const env = (await (await api(server)(`/file-processing/jobs/${jobId}/results`)).json()) as Envelope;
      const ch = env.result.channels['0']!;
      const withoutArousal = MODELS.filter((m) => m !== 'arousal');
      assert.deepEqual(Object.keys(ch.transitions!), withoutArousal);
      await page.locator('.wave-track.no-wave', { hasText: 'No waveform or playback for URL jobs: the audio is not kept' }).waitFor();
      assert.equal(await page.locator('canvas.waveform').count(), 0);
      const laneModels = await page.locator('.lane').evaluateAll((els) => els.map((e) => (e as unknown as HTMLElement).dataset.model!));
      assert.deepEqual([...new Set(laneModels)], withoutArousal, 'one lane per model (per speaker for speakers, one after the other)');
      const labels = await page.locator('.lane[data-model="gender"] .seg').evaluateAll((els) => els.map((e) => (e as unknown as HTMLElement).dataset.label));
      assert.deepEqual(labels, ch.transitions!.gender!.map((x) => x.result));
      assert.match((await page.locator('#job-source').textContent())!, new RegExp(`URL ${file.url.replace(/[.]/g, '\\.')}`));

      // A reload keeps the key (session storage) and reopens the job.
      await page.reload();
      await page.locator('#key-status.ok').waitFor();
      await waitSucceeded(page);
      assert.equal((await page.locator('#job-id').textContent())!.trim(), jobId);
      await page.locator('.lane[data-model="speech"] .seg').first().waitFor();

      // Open the same job from the list with the keyboard.
      const row = page.locator(`#jobs-body tr[data-job-id="${jobId}"]`);
      await row.getByRole('button', { name: /^Open job/ }).focus();
      await page.keyboard.press('Enter');
      await waitSucceeded(page);
      await page.locator('.lane[data-model="gender"] .seg').first().waitFor();
      assert.deepEqual(problemsOf(page), []);
      await page.close();
    } finally {
      await file.close();
    }
  });

  test('a wrong key and a rejected parameter show their problem codes', async () => {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    await page.goto(server.url + '/');
    await page.getByLabel('API key').fill('not-a-key');
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.locator('#key-status.bad', { hasText: 'INVALID_API_KEY' }).waitFor();

    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.locator('#key-status.ok').waitFor();
    // Out of the server's range but accepted by the form's own check? No: the form checks it.
    await page.getByLabel('Volume threshold (dBFS)').fill('5');
    await page.getByLabel(/Drop an audio file/).setInputFiles(wav);
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#form-error', { hasText: 'Volume threshold' }).waitFor();
    // A server-side rejection (empty upload) is shown with its code.
    await page.getByLabel('Volume threshold (dBFS)').fill('');
    await page.getByLabel(/Drop an audio file/).setInputFiles({ name: 'empty.wav', mimeType: 'audio/wav', buffer: Buffer.alloc(0) });
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#form-error', { hasText: /^INVALID_BODY: / }).waitFor();
    await page.close();
  });
});
