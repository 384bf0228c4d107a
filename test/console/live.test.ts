/**
 * The console's Live view in Chromium against the whole service (src/app.ts): a fake
 * microphone plays a committed speech + silence recording (test/fixtures/live-speech-silence.wav)
 * through getUserMedia and the AudioWorklet, over the WebSocket opened with a stream token;
 * the Live panel (results column) shows speech and then silence on a time axis, with a legend,
 * the level and the summary so far. A refused microphone gives a clear message.
 */
import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { envSkip } from '../env';
import { KEY_A, startStreamingApp } from '../websocket/helpers';
import { buildConsole, chromiumUnavailable, launchBrowser, openConsolePage, outPath, ROOT } from './helpers';

const FIXTURE = join(ROOT, 'test', 'fixtures', 'live-speech-silence.wav');

describe('console Live view (Chromium, fake microphone, real service)', { timeout: 180_000, skip: envSkip(chromiumUnavailable()) }, () => {
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  before(async () => {
    buildConsole();
    app = await startStreamingApp();
  });
  after(async () => {
    await app?.cleanup();
  });

  async function openConsole(context: Awaited<ReturnType<typeof launchBrowser>>['context'], models: readonly string[] = ['speech']): Promise<{ page: Page; problems: string[] }> {
    const { page, problems } = await openConsolePage(context, app.url, KEY_A, 60_000);
    await page.locator('#models input[value="speech"]').waitFor();
    // Speech only unless asked, 256 ms steps: the fastest timeline.
    for (const box of await page.locator('#models input').all()) {
      if (models.includes((await box.getAttribute('value'))!)) await box.check();
      else await box.uncheck();
    }
    await page.getByLabel('Output period (ms)').fill('256');
    return { page, problems };
  }

  test('the fake microphone streams speech then silence: the timeline grows with speech, then silence; Stop ends cleanly', async () => {
    const browser = await launchBrowser(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${FIXTURE}`]);
    try {
      const { page, problems } = await openConsole(browser.context);
      const started = app.hub!.snapshot().streamsStarted;
      await page.getByRole('button', { name: 'Start' }).click();
      await page.locator('#live-status', { hasText: 'Listening' }).waitFor();
      // Speech first, then a silence step after it.
      await page.locator('[data-model="speech"] .live-step[data-label="speech"]').first().waitFor();
      await page.locator('[data-model="speech"] .live-step[data-label="speech"]:not(.live-provisional) ~ .live-step[data-label="silence"]:not(.live-provisional)').first().waitFor();
      const labels = await page.locator('[data-model="speech"] .live-step:not(.live-provisional)').evaluateAll((els) => els.map((e) => (e as unknown as { dataset: { label: string; t: string } }).dataset));
      const firstSpeech = labels.findIndex((l) => l.label === 'speech');
      const silenceAfter = labels.findIndex((l, i) => i > firstSpeech && l.label === 'silence');
      assert.ok(firstSpeech >= 0 && silenceAfter > firstSpeech, JSON.stringify(labels));
      labels.forEach((l, i) => assert.equal(Number(l.t), i * 256, 'consecutive steps, 256 ms apart'));
      assert.equal(app.hub!.snapshot().streamsStarted, started + 1, 'one stream, opened with a token');
      // The Live panel uses the results column: beside the form, most of the page's width.
      const panel = (await page.locator('#live-results').boundingBox())!;
      const form = (await page.locator('#new-job-panel').boundingBox())!;
      assert.ok(panel.x >= form.x + form.width, `Live panel at x=${panel.x}, the form ends at ${form.x + form.width}`);
      assert.ok(panel.width > 500, `Live panel ${panel.width} px wide`);
      // Blocks sit at their time on the time axis: 40 px per second, ticks every second, labelled every 5 s.
      const lefts = await page.locator('[data-model="speech"] .live-step:not(.live-provisional)').evaluateAll((els) => els.map((e) => (e as unknown as { style: { left: string; width: string } }).style));
      lefts.forEach((st, i) => {
        assert.equal(st.left, `${(i * 256 * 40) / 1000}px`, `block ${i}`);
        assert.equal(st.width, `${(256 * 40) / 1000}px`);
      });
      assert.equal((await page.locator('.live-tick[data-s="0"]').textContent())!.trim(), '0 s');
      assert.ok((await page.locator('.live-tick').count()) >= Math.floor((labels.length * 256) / 1000), 'a tick per second streamed');
      // The legend names the labels seen; the summary so far gives their shares; the level is shown in dBFS.
      const legend = await page.locator('#live-results .live-legend li[data-label]').evaluateAll((els) => els.map((e) => (e as unknown as { dataset: { label: string } }).dataset.label));
      assert.ok(legend.includes('speech') && legend.includes('silence'), legend.join(','));
      assert.match((await page.locator('.live-summary dd[data-model="speech"]').textContent())!, /speech \d+\.\d\d %.*silence \d+\.\d\d %|silence \d+\.\d\d %.*speech \d+\.\d\d %/);
      assert.match((await page.locator('.live-level-text').textContent())!, /^-?\d+ dBFS$/);
      await page.screenshot({ path: outPath('console-live.png'), fullPage: true });
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.locator('#live-status', { hasText: 'Stopped.' }).waitFor();
      assert.equal(await page.locator('#live-start').isEnabled(), true);
      assert.equal(app.hub!.active(), 0, 'the stream ended');
      assert.equal((await page.locator('#live-error').textContent())!.trim(), '');
      await page.getByRole('button', { name: 'Clear' }).click();
      assert.equal(await page.locator('.live-step').count(), 0);
      assert.equal(await page.locator('.live-tick').count(), 0);
      assert.equal(await page.locator('.live-legend li').count(), 0);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });

  test('speech, gender and speakers: the later provisional message of a step replaces the earlier one, and the final replaces both', async () => {
    const browser = await launchBrowser(['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${FIXTURE}`]);
    try {
      const { page, problems } = await openConsole(browser.context, ['speech', 'gender', 'speakers']);
      await page.getByRole('button', { name: 'Start' }).click();
      await page.locator('#live-status', { hasText: 'Listening' }).waitFor();
      // finals of both lanes, several steps in (gender's finals come 24 steps after the audio)
      await page.locator('[data-model="gender"] .live-step:not(.live-provisional)').nth(3).waitFor({ timeout: 60_000 });
      for (const model of ['speech', 'gender']) {
        const blocks = await page.locator(`[data-model="${model}"] .live-step`).evaluateAll((els) =>
          els.map((e) => ({ t: (e as unknown as { dataset: { t: string } }).dataset.t, provisional: (e as unknown as { classList: { contains(c: string): boolean } }).classList.contains('live-provisional') })),
        );
        const perStep = new Map<string, number>();
        for (const b of blocks) perStep.set(b.t, (perStep.get(b.t) ?? 0) + 1);
        for (const [t, n] of perStep) assert.equal(n, 1, `${model}: ${n} blocks at ${t} ms (a provisional block left behind)`);
        assert.ok(blocks.some((b) => !b.provisional), `${model}: no final block`);
      }
      // the speaker lanes together: one block per step there too (a provisional speaker's block goes when its final comes)
      await page.locator(`[data-model="speakers"] .live-step:not(.live-provisional)`).nth(3).waitFor({ timeout: 60_000 });
      const speakerSteps = await page.locator('.live-lane[data-model="speakers"] .live-step').evaluateAll((els) =>
        els.map((e) => (e as unknown as { dataset: { t: string } }).dataset.t),
      );
      assert.equal(new Set(speakerSteps).size, speakerSteps.length, `speakers: ${speakerSteps.length} blocks over ${new Set(speakerSteps).size} steps (a provisional block left behind)`);
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.locator('#live-status', { hasText: 'Stopped.' }).waitFor();
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });

  test('a refused microphone: a clear message, no stream', async () => {
    const browser = await launchBrowser(['--use-fake-device-for-media-stream']);
    try {
      await browser.context.clearPermissions();
      const { page } = await openConsole(browser.context);
      const started = app.hub!.snapshot().streamsStarted;
      await page.getByRole('button', { name: 'Start' }).click();
      await page.locator('#live-error', { hasText: /refused/ }).waitFor();
      assert.match((await page.locator('#live-error').textContent())!, /Allow the microphone/);
      assert.equal(await page.locator('#live-start').isEnabled(), true);
      assert.equal(app.hub!.snapshot().streamsStarted, started, 'no stream');
    } finally {
      await browser.close();
    }
  });
});
