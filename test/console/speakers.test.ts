/**
 * The console's speakers model in Chromium against the real service: a file job on
 * test/fixtures/demo.flac (two espeak-ng voices) shows one lane per speaker label the results
 * hold, named like the labels, with only that speaker's segments, and a legend equal to the
 * summary's speaker fractions; the job form sends max_speakers only with the speakers model and
 * checks the counts. The Live view (fake microphone playing the same voices) grows one lane per
 * speaker, whose blocks never change once shown, with a legend of the talk time so far.
 * The number of speakers the model finds is not asserted (its thresholds are tuned elsewhere).
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { AurisServer } from '../../src/http/server';
import { envSkip } from '../env';
import { KEY_A, startStreamingApp } from '../websocket/helpers';
import { api, buildConsole, chromiumUnavailable, KEY, launchBrowser, openConsolePage, outPath, ROOT, startServer, tempDir } from './helpers';

const DEMO = join(ROOT, 'test', 'fixtures', 'demo.flac');
const STEP_TIMEOUT = 60_000;

interface Segment {
  timestamp_start: number;
  timestamp_end: number;
  result: string;
  confidence: number;
}
interface Channel {
  time_series: Array<{ timestamp: number; results: Record<string, { result: string }> }>;
  summary?: Record<string, Record<string, number>>;
  transitions?: Record<string, Segment[]>;
}

// The page functions run in the browser; the project compiles without the DOM lib.
type El = { dataset: Record<string, string | undefined>; style: Record<string, string>; textContent: string | null };

const isSpeaker = (label: string): boolean => /^speaker_[1-9]\d*$/.test(label);
const bySpeakerNumber = (a: string, b: string): number => Number(a.slice(8)) - Number(b.slice(8));

/** Only the given models checked in the New job form. */
async function chooseModels(page: Page, models: readonly string[]): Promise<void> {
  await page.locator('#models input[value="speakers"]').waitFor();
  for (const box of await page.locator('#models input').all()) {
    if (models.includes((await box.getAttribute('value'))!)) await box.check();
    else await box.uncheck();
  }
}

describe('console: the speakers model (Chromium, real server)', { timeout: 300_000, skip: envSkip(chromiumUnavailable()) }, () => {
  let server: AurisServer;
  let browser: { context: BrowserContext; close(): Promise<void> };
  const data = tempDir('auris-console-speakers-');

  before(async () => {
    buildConsole();
    server = await startServer(data.path);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    data.cleanup();
  });

  test('a file job with two voices: one lane per speaker label, named like it, and a legend equal to the summary', async () => {
    const { page, problems } = await openConsolePage(browser.context, server.url, KEY, STEP_TIMEOUT);

    // The speaker counts are offered only while the speakers model is selected, and checked.
    await chooseModels(page, ['speech']);
    assert.equal(await page.locator('#speaker-options').isHidden(), true);
    await chooseModels(page, ['speech', 'speakers']);
    await page.locator('#speaker-options').waitFor();
    await page.getByLabel(/Drop an audio file/).setInputFiles(DEMO);
    await page.getByLabel('Output period (ms)').fill('256');
    await page.getByLabel('Number of speakers').fill('3');
    await page.getByLabel('Maximum speakers').fill('2');
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#form-error', { hasText: 'must not exceed the maximum' }).waitFor();
    await page.getByLabel('Number of speakers').fill('');
    await page.getByLabel('Maximum speakers').fill('21');
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#form-error', { hasText: 'from 1 to 20' }).waitFor();
    await page.getByLabel('Maximum speakers').fill('5');
    await page.getByRole('button', { name: 'Analyse' }).click();

    await page.locator('#job-status[data-status="succeeded"], #job-status[data-status="failed"]').waitFor();
    assert.equal(await page.locator('#job-status').getAttribute('data-status'), 'succeeded', (await page.locator('#job-error').textContent()) ?? '');
    const jobId = (await page.locator('#job-id').textContent())!.trim();
    const rec = (await (await api(server)(`/file-processing/jobs/${jobId}`)).json()) as { request: Record<string, unknown> };
    assert.deepEqual(rec.request.models, ['speech', 'speakers']);
    assert.equal(rec.request.max_speakers, 5);
    assert.equal('num_speakers' in rec.request, false, 'an empty field is not sent');
    const ch = ((await (await api(server)(`/file-processing/jobs/${jobId}/results`)).json()) as { result: { channels: Record<string, Channel> } }).result.channels['0']!;
    const segs = ch.transitions!['speakers']!;
    const labels = [...new Set(segs.map((s) => s.result).filter(isSpeaker))].sort(bySpeakerNumber);
    assert.ok(labels.length >= 1, `speakers found: ${JSON.stringify(ch.summary)}`);

    // One lane per speaker label, in number order, named like the label, with only its segments.
    await page.locator('.lane[data-model="speakers"] .seg').first().waitFor();
    const lanes = await page.locator('.channel[data-channel="0"] .lane[data-model="speakers"]').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.speaker!));
    assert.deepEqual(lanes, labels);
    const names = await page.locator('.channel[data-channel="0"] .speaker-label').allTextContents();
    assert.deepEqual(names.map((n) => n.trim()), labels);
    const colours = new Map<string, string>();
    for (const label of labels) {
      const shown = await page.locator(`.lane[data-speaker="${label}"] .seg`).evaluateAll((els) =>
        els.map((e) => {
          const d = (e as unknown as El).dataset;
          return { timestamp_start: Number(d.start), timestamp_end: Number(d.end), result: d.label!, confidence: Number(d.confidence) };
        }),
      );
      assert.deepEqual(shown, segs.filter((s) => s.result === label), `lane ${label}`);
      const bg = await page.locator(`.lane[data-speaker="${label}"] .seg`).evaluateAll((els) => [...new Set(els.map((e) => (e as unknown as El).style.backgroundColor))]);
      assert.equal(bg.length, 1, `${label}: one colour`);
      colours.set(label, bg[0]!);
    }
    assert.equal(new Set(colours.values()).size, labels.length, 'each speaker its own colour');
    assert.equal(await page.locator('.lane[data-model="speakers"] .seg[data-label="no_speech"], .lane[data-model="speakers"] .seg[data-label="silence"]').count(), 0);
    // The other models' lanes are as before: the speech lane equals its transitions.
    const speech = await page.locator('.lane[data-model="speech"] .seg').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.label));
    assert.deepEqual(speech, ch.transitions!['speech']!.map((s) => s.result));

    // The legend: the summary's speakers with their share and talk time.
    const summary = ch.summary!['speakers']!;
    const summarySpeakers = Object.keys(summary).map((k) => k.replace(/_fraction$/, '')).filter(isSpeaker).sort(bySpeakerNumber);
    const legend = await page.locator('.channel[data-channel="0"] .speaker-legend li').evaluateAll((els) =>
      els.map((e) => ({ speaker: (e as unknown as El).dataset.speaker!, fraction: Number((e as unknown as El).dataset.fraction), text: (e as unknown as El).textContent ?? '' })),
    );
    assert.deepEqual(legend.map((l) => l.speaker), summarySpeakers);
    for (const l of legend) {
      assert.equal(l.fraction, summary[`${l.speaker}_fraction`]);
      assert.ok(l.text.startsWith(l.speaker) && l.text.includes(`${(l.fraction * 100).toFixed(2)} %`), l.text);
      assert.match(l.text, / s · /);
    }
    for (const label of labels) assert.ok(summarySpeakers.includes(label), `${label} in the summary`);
    // The summary box lists the speakers model's fractions too.
    for (const [key, value] of Object.entries(summary)) {
      assert.equal(await page.locator(`.summary-model[data-model="speakers"] li[data-key="${key}"]`).getAttribute('data-value'), String(value));
    }
    assert.match((await page.locator('#results-note').textContent())!, /max_speakers 5/);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: outPath('console-speakers.png'), fullPage: true });
    assert.deepEqual(problems, []);
    await page.close();
  });

  test('with gender beside speakers: the legend gives each speaker\'s gender, the summary box only shares of the audio', async () => {
    const { page, problems } = await openConsolePage(browser.context, server.url, KEY, STEP_TIMEOUT);
    await chooseModels(page, ['speech', 'gender', 'speakers']);
    await page.locator('#speaker-options').waitFor();
    // two espeak-ng voices taking turns: a male one, then a female one (test/fixtures/models/make.sh)
    await page.getByLabel(/Drop an audio file/).setInputFiles(join(ROOT, 'test', 'fixtures', 'models', 'two-voices.flac'));
    await page.getByLabel('Output period (ms)').fill('256');
    await page.getByLabel('Number of speakers').fill('2');
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#job-status[data-status="succeeded"], #job-status[data-status="failed"]').waitFor();
    assert.equal(await page.locator('#job-status').getAttribute('data-status'), 'succeeded', (await page.locator('#job-error').textContent()) ?? '');
    await page.locator('.speaker-legend li').first().waitFor();
    const legend = await page.locator('.channel[data-channel="0"] .speaker-legend li').evaluateAll((els) =>
      els.map((e) => ({ speaker: (e as unknown as El).dataset.speaker!, gender: (e as unknown as El).dataset['gender'], text: (e as unknown as El).textContent ?? '' })),
    );
    assert.deepEqual(legend.map((l) => [l.speaker, l.gender]), [['speaker_1', 'male'], ['speaker_2', 'female']], JSON.stringify(legend));
    for (const l of legend) assert.match(l.text, new RegExp(`${l.gender} \\d+\\.\\d{2} %`), l.text);
    const keys = await page.locator('.summary-model[data-model="speakers"] li').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset['key']!));
    assert.deepEqual(keys, ['speaker_1_fraction', 'speaker_2_fraction', 'no_speech_fraction', 'silence_fraction']);
    assert.deepEqual(problems, []);
    await page.close();
  });
});

describe('console Live view: the speakers model (Chromium, fake microphone, real service)', { timeout: 240_000, skip: envSkip(chromiumUnavailable()) }, () => {
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  const work = tempDir('auris-console-speakers-live-');
  let wav: string;
  before(async () => {
    buildConsole();
    app = await startStreamingApp();
    wav = join(work.path, 'demo.wav'); // the fake microphone reads WAV only
    execFileSync('sox', [DEMO, '-r', '16000', '-b', '16', '-c', '1', wav], { timeout: 30_000 });
  });
  after(async () => {
    await app?.cleanup();
    work.cleanup();
  });

  test('speaker lanes appear as speakers appear; shown steps never change; the legend counts their talk time', async () => {
    const browser = await launchBrowser(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wav}`]);
    try {
      const { page, problems } = await openConsolePage(browser.context, app.url, KEY_A, STEP_TIMEOUT);
      await chooseModels(page, ['speech', 'speakers']);
      await page.getByLabel('Output period (ms)').fill('512');
      await page.getByRole('button', { name: 'Start' }).click();
      await page.locator('#live-status', { hasText: 'Listening' }).waitFor();

      // final blocks: a provisional block (lighter, .live-provisional) is replaced by its step's final by design
      const FINAL = '.live-lane[data-model="speakers"] .live-step:not(.live-provisional)';
      const blocks = (): Promise<Array<{ lane: string; label: string; t: number }>> =>
        page.locator(FINAL).evaluateAll((els) =>
          els.map((e) => {
            const el = e as unknown as El & { parentElement: El };
            return { lane: el.parentElement.dataset.speaker!, label: el.dataset.label!, t: Number(el.dataset.t) };
          }),
        );
      await page.locator(FINAL).first().waitFor({ timeout: 90_000 });
      const early = await blocks();
      await page.waitForTimeout(4_000);
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.locator('#live-status', { hasText: 'Stopped.' }).waitFor();
      const late = await blocks();

      // A block shown stays as it was; each block sits in its own speaker's lane; one speaker per step.
      for (const b of early) assert.ok(late.some((x) => x.t === b.t && x.label === b.label && x.lane === b.lane), `block ${JSON.stringify(b)} changed`);
      for (const b of late) assert.equal(b.lane, b.label);
      assert.equal(new Set(late.map((b) => b.t)).size, late.length, 'one speaker block per step');
      for (const b of late) assert.ok(isSpeaker(b.label), b.label);

      // Lanes per speaker label, in number order, named like the label beside the lanes.
      const lanes = await page.locator('.live-lane[data-model="speakers"]').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.speaker!));
      const seen = [...new Set(late.map((b) => b.label))].sort(bySpeakerNumber);
      assert.deepEqual(lanes, seen);
      const names = await page.locator('.live-name[data-model="speakers"] .live-model').allTextContents();
      assert.deepEqual(names, seen);
      // The lane order: speech, then the speakers (request order).
      const allLanes = await page.locator('.live-lane').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.speaker ?? (e as unknown as El).dataset.model!));
      assert.deepEqual(allLanes, ['speech', ...seen]);

      // The legend: each speaker's talk time so far (its steps x 512 ms), and no speaker label in the other legend.
      const legend = await page.locator('#live-results .live-speaker-legend li').evaluateAll((els) =>
        els.map((e) => ({ speaker: (e as unknown as El).dataset.speaker!, steps: Number((e as unknown as El).dataset.steps), text: (e as unknown as El).textContent ?? '' })),
      );
      assert.deepEqual(legend.map((l) => l.speaker), seen);
      for (const l of legend) {
        assert.equal(l.steps, late.filter((b) => b.label === l.speaker).length, l.speaker);
        assert.ok(l.text.startsWith(l.speaker) && l.text.includes(`${((l.steps * 512) / 1000).toFixed(2)} s`), l.text);
      }
      const otherLegend = await page.locator('#live-results .live-legend li[data-label]').evaluateAll((els) => els.map((e) => (e as unknown as El).dataset.label!));
      assert.equal(otherLegend.filter(isSpeaker).length, 0, otherLegend.join(','));
      assert.match((await page.locator('.live-summary dd[data-model="speakers"]').textContent())!, /speaker_1 \d+\.\d\d %/);
      await page.screenshot({ path: outPath('console-live-speakers.png'), fullPage: true });
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});
