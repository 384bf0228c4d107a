/**
 * The web console in Chromium against the real server: playback of the uploaded audio from a
 * clicked segment with a cursor over the lanes, job warnings (TRUNCATED_AUDIO) shown on the
 * job, the upload's file name kept in the job (a new tab lists it), the gender lane's
 * no_speech explained, and the default output period (1024 ms, as the CLI).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import type { AurisServer } from '../../src/http/server';
import { envSkip } from '../env';
import { api, buildConsole, chromiumUnavailable, KEY, launchBrowser, speechThenSilence, startServer, tempDir } from './helpers';

type HTMLElement = { dataset: Record<string, string | undefined>; hidden: boolean };
const STEP_TIMEOUT = 60_000;

describe('web console: playback, warnings, file names (Chromium, real server)', { timeout: 300_000, skip: envSkip(chromiumUnavailable()) }, () => {
  let server: AurisServer;
  let browser: { context: BrowserContext; close(): Promise<void> };
  const data = tempDir('auris-console-play-data-');
  const work = tempDir('auris-console-play-audio-');
  let wav: string;

  before(async () => {
    buildConsole();
    wav = speechThenSilence(work.path);
    server = await startServer(data.path);
    browser = await launchBrowser(); // no autoplay flag: the click is the user gesture that allows sound
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    data.cleanup();
    work.cleanup();
  });

  async function openConsole(): Promise<Page> {
    const page = await browser.context.newPage();
    page.setDefaultTimeout(STEP_TIMEOUT);
    await page.goto(server.url + '/');
    await page.getByLabel('API key').fill(KEY);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.locator('#key-status.ok').waitFor();
    await page.locator('#models input[value="speech"]').waitFor();
    return page;
  }

  async function upload(page: Page, file: string): Promise<string> {
    await page.getByLabel(/Drop an audio file/).setInputFiles(file);
    await page.getByRole('button', { name: 'Analyse' }).click();
    await page.locator('#job-status[data-status="succeeded"]').waitFor();
    return (await page.locator('#job-id').textContent())!.trim();
  }

  test('a click on a segment plays the upload from there, with a cursor that moves; Stop stops', async () => {
    const page = await openConsole();
    assert.equal(await page.getByLabel('Output period (ms)').inputValue(), '1024', 'the default output period is the CLI one');
    const jobId = await upload(page, wav);
    const rec = (await (await api(server)(`/file-processing/jobs/${jobId}`)).json()) as { request: { output_period: number }; warnings: unknown[] };
    assert.equal(rec.request.output_period, 1024);
    assert.deepEqual(rec.warnings, []);
    assert.equal(await page.locator('#job-warnings').isHidden(), true, 'no warnings, no warning box');

    const host = page.locator('.channel[data-channel="0"] .tracks-host');
    const silence = page.locator('.lane[data-model="speech"] .seg[data-label="silence"]').last();
    const start = Number(await silence.getAttribute('data-start'));
    assert.ok(start > 0);
    await silence.click();
    await page.locator('.tracks-host[data-playing="true"]').waitFor();
    const cursor = host.locator('.play-cursor');
    await cursor.waitFor({ state: 'visible' });
    assert.ok(Number(await cursor.getAttribute('data-ms')) >= start);
    // The cursor follows the sound: it moves on from the segment's start.
    await page.waitForFunction(
      ([s]) => Number((globalThis as unknown as { document: { querySelector(q: string): HTMLElement | null } }).document.querySelector('.play-cursor')?.dataset.ms) > s! + 100,
      [start],
    );
    // ... and sits over the lanes at that time: left edge of a lane + time / end × width.
    const geo = await page.evaluate(() => {
      const d = (globalThis as unknown as { document: { querySelector(q: string): { getBoundingClientRect(): { left: number; width: number }; dataset: Record<string, string> } } }).document;
      const lane = d.querySelector('.lane[data-model="speech"]').getBoundingClientRect();
      const segs = d.querySelector('.lane[data-model="speech"] .seg:last-child').dataset;
      const c = d.querySelector('.play-cursor');
      return { lane, end: Number(segs['end']), cursorX: c.getBoundingClientRect().left, ms: Number(c.dataset['ms']) };
    });
    const expectedX = geo.lane.left + (geo.ms / geo.end) * geo.lane.width;
    assert.ok(Math.abs(geo.cursorX - expectedX) < 3, `cursor at ${geo.cursorX}, expected about ${expectedX}`);
    assert.equal(await page.locator('.play-button').textContent(), 'Stop');
    await page.locator('.play-button').click();
    await page.locator('.tracks-host[data-playing="false"]').waitFor();
    assert.equal(await page.locator('.play-button').textContent(), 'Play');

    // Another tab (empty session storage) lists the upload by its file name, from the job's
    // metadata; there the audio is not available, and the page says why.
    const other = await openConsole();
    const row = other.locator(`#jobs-body tr[data-job-id="${jobId}"]`);
    await row.waitFor();
    assert.equal((await row.locator('.src').textContent())!.trim(), 'speech-then-silence.wav');
    await row.getByRole('button', { name: /^Open job/ }).click();
    await other.locator('#job-status[data-status="succeeded"]').waitFor();
    assert.match((await other.locator('#job-source').textContent())!, /^upload speech-then-silence\.wav/);
    await other.locator('.play-row .note', { hasText: 'the server does not keep the audio' }).waitFor();
    assert.equal(await other.locator('.play-button').count(), 0);
    await other.close();
    await page.close();
  });

  test('a WAV cut short: succeeded, with the TRUNCATED_AUDIO warning shown; the gender lane explains no_speech', async () => {
    // A 4 s tone (sound, no voice: gender says no_speech) whose file ends after 2 s of audio.
    const tone = join(work.path, 'tone.wav');
    const r = spawnSync('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', tone, 'synth', '4', 'sine', '440', 'vol', '0.5']);
    assert.equal(r.status, 0, String(r.stderr));
    const cut = join(work.path, 'cut-tone.wav');
    writeFileSync(cut, readFileSync(tone).subarray(0, 44 + 2 * 16000 * 2));
    const page = await openConsole();
    const jobId = await upload(page, cut);
    const rec = (await (await api(server)(`/file-processing/jobs/${jobId}`)).json()) as { warnings: Array<{ code: string; message: string }> };
    assert.deepEqual(rec.warnings.map((w) => w.code), ['TRUNCATED_AUDIO']);
    const box = page.locator('#job-warnings');
    await box.waitFor({ state: 'visible' });
    assert.equal((await box.locator('li code').allTextContents()).join(','), 'TRUNCATED_AUDIO');
    assert.ok((await box.textContent())!.includes(rec.warnings[0]!.message));

    await page.locator('.lane[data-model="gender"] .seg').first().waitFor();
    const gender = await page.locator('.lane[data-model="gender"] .seg').evaluateAll((els) => els.map((e) => (e as unknown as HTMLElement).dataset['label']));
    assert.ok(gender.includes('no_speech'), gender.join(','));
    await page.locator('.legend .legend-note', { hasText: 'gender no_speech: sound but no voice; the gender summary counts it as other' }).waitFor();
    await page.locator('.lane[data-model="gender"] .seg[data-label="no_speech"]').first().hover();
    await page.locator('#tooltip', { hasText: 'the gender summary counts it as other' }).waitFor();
    await page.close();
  });
});
