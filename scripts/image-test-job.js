#!/usr/bin/env node
// Part of scripts/image-test.sh: checks a running `auris serve` (here: the container image)
// from outside. Waits for /readyz, creates one job from a file, waits for it to succeed and
// checks its results. Usage: node scripts/image-test-job.js <base-url> <api-key> <audio-file>
// Exit 0 when all of that worked; otherwise 1 with the reason on stderr. Plain JavaScript so
// it runs without the TypeScript build.
'use strict';
const fs = require('node:fs');

const [base, apiKey, file] = process.argv.slice(2);
// Bounds in attempts of 1 s: a start-up or a job taking longer than this is a failure.
const READY_ATTEMPTS = 120;
const JOB_ATTEMPTS = 120;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitReady() {
  let last = 'no answer';
  for (let i = 0; i < READY_ATTEMPTS; i++) {
    try {
      const res = await fetch(`${base}/readyz`);
      last = `${res.status} ${await res.text()}`;
      if (res.ok) return last;
    } catch (e) {
      last = String(e.cause?.code ?? e);
    }
    await sleep(1000);
  }
  throw new Error(`/readyz never answered 200 (last: ${last})`);
}

async function runJob() {
  const headers = { 'x-api-key': apiKey, 'content-type': 'audio/flac' };
  const created = await fetch(`${base}/file-processing/jobs?models=speech,gender&output_period=1024&include_summary=true`, {
    method: 'POST',
    headers,
    body: fs.readFileSync(file),
  });
  if (created.status !== 201) throw new Error(`POST /file-processing/jobs answered ${created.status}: ${await created.text()}`);
  const { job_id: id } = await created.json();
  for (let i = 0; i < JOB_ATTEMPTS; i++) {
    const job = await (await fetch(`${base}/file-processing/jobs/${id}`, { headers })).json();
    if (job.status === 'failed') throw new Error(`job failed: ${JSON.stringify(job.error)}`);
    if (job.status === 'succeeded') {
      const results = await (await fetch(`${base}/file-processing/jobs/${id}/results`, { headers })).json();
      const channel = results.result.channels['0'];
      const steps = channel.time_series;
      if (!steps.length || !('gender' in steps[0].results)) throw new Error('results without gender steps');
      return `${id}: ${steps.length} steps, speech summary ${JSON.stringify(channel.summary.speech)}`;
    }
    await sleep(1000);
  }
  throw new Error(`job ${id} did not finish`);
}

(async () => {
  console.error(`[image-test] /readyz: ${await waitReady()}`);
  console.error(`[image-test] job ${await runJob()}`);
})().catch((e) => {
  console.error(`[image-test] ${e.message}`);
  process.exit(1);
});
