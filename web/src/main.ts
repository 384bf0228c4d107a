/**
 * auris web console: enter a key, submit a file or URL, watch the job, see the timeline;
 * or analyse the microphone live (web/src/live.ts).
 * Uses only the public REST API (src/http, docs/api.md), so it works the same whichever
 * job backend the server runs (embedded or NATS).
 */
import { ApiProblem, AurisApi, type JobRecord, type JobRequestParams, type ResultsEnvelope, uploadContentType } from './api.js';
import { formatBytes, formatPercent, formatTime, segmentsCsv, SPEAKERS_MODEL } from './data.js';
import { initLive } from './live.js';
import { channelView, hideTooltip } from './timeline.js';

const KEY_STORAGE = 'auris.apiKey';
const JOBS_STORAGE = 'auris.jobs';
const CURRENT_STORAGE = 'auris.currentJob';
const DEFAULT_MODELS = ['speech', 'arousal', 'gender', 'emotions'];
const MAX_LOCAL_JOBS = 50;

interface LocalJob {
  job_id: string;
  name: string;
  created_at: string;
}

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing`);
  return e as T;
};

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

// ---------- storage (session storage only) ----------

const storage = {
  key: (): string => sessionStorage.getItem(KEY_STORAGE) ?? '',
  setKey: (k: string): void => (k ? sessionStorage.setItem(KEY_STORAGE, k) : sessionStorage.removeItem(KEY_STORAGE)),
  jobs(): LocalJob[] {
    try {
      const v = JSON.parse(sessionStorage.getItem(JOBS_STORAGE) ?? '[]') as unknown;
      return Array.isArray(v) ? (v as LocalJob[]).filter((j) => typeof j?.job_id === 'string') : [];
    } catch {
      return [];
    }
  },
  saveJobs: (jobs: LocalJob[]): void => sessionStorage.setItem(JOBS_STORAGE, JSON.stringify(jobs.slice(0, MAX_LOCAL_JOBS))),
  addJob(j: LocalJob): void {
    storage.saveJobs([j, ...storage.jobs().filter((x) => x.job_id !== j.job_id)]);
  },
  removeJob(id: string): void {
    storage.saveJobs(storage.jobs().filter((x) => x.job_id !== id));
  },
  nameOf: (id: string): string | undefined => storage.jobs().find((j) => j.job_id === id)?.name,
};

/** The metadata key the console stores an upload's file name under. */
const FILENAME_KEY = 'filename';
/** An upload's file name: from this tab's list, else the job's metadata (a reload, another tab). */
const uploadName = (rec: Pick<JobRecord, 'job_id' | 'metadata'>): string | undefined => storage.nameOf(rec.job_id) ?? rec.metadata?.[FILENAME_KEY];

const api = new AurisApi(() => storage.key());

/** Uploaded files of this page session, for the waveform (never stored). */
const files = new Map<string, File>();
const decoded = new Map<string, Promise<AudioBuffer>>();

// ---------- API key ----------

function initKey(): void {
  const input = $<HTMLInputElement>('api-key');
  input.value = storage.key();
  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    storage.setKey(input.value.trim());
    void checkKey();
  });
  $('key-forget').addEventListener('click', () => {
    storage.setKey('');
    input.value = '';
    setKeyStatus('No key: enter one to submit and list jobs.', false);
    $('jobs-body').replaceChildren();
    input.focus();
  });
}

function setKeyStatus(text: string, ok: boolean): void {
  const s = $('key-status');
  s.textContent = text;
  s.classList.toggle('ok', ok);
  s.classList.toggle('bad', !ok);
}

async function checkKey(): Promise<void> {
  if (!storage.key()) {
    setKeyStatus('No key: enter one to submit and list jobs.', false);
    return;
  }
  const ok = await refreshJobs();
  if (ok) setKeyStatus('Key accepted.', true);
}

// ---------- job form ----------

function initForm(): void {
  const radios = document.querySelectorAll<HTMLInputElement>('input[name="source"]');
  const sync = (): void => {
    const url = document.querySelector<HTMLInputElement>('input[name="source"]:checked')?.value === 'url';
    $('file-source').hidden = url;
    $('url-source').hidden = !url;
  };
  radios.forEach((r) => r.addEventListener('change', sync));
  sync();

  const fileInput = $<HTMLInputElement>('file-input');
  const zone = $('dropzone');
  const showFile = (): void => {
    const f = fileInput.files?.[0];
    $('file-info').textContent = f ? `${f.name} · ${formatBytes(f.size)} · sent as ${uploadContentType(f)}` : 'Direct upload is for testing: up to 15 MB.';
  };
  fileInput.addEventListener('change', showFile);
  zone.addEventListener('dragover', (ev) => {
    ev.preventDefault();
    zone.classList.add('over');
  });
  zone.addEventListener('dragleave', () => zone.classList.remove('over'));
  zone.addEventListener('drop', (ev) => {
    ev.preventDefault();
    zone.classList.remove('over');
    const dt = ev.dataTransfer;
    if (dt?.files.length) {
      fileInput.files = dt.files;
      showFile();
    }
  });

  // num_speakers / max_speakers: offered while the speakers model is selected.
  $('models').addEventListener('change', syncSpeakerOptions);

  $('job-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void submit();
  });
}

async function loadModels(): Promise<void> {
  const rank = (m: string): number => (DEFAULT_MODELS.includes(m) ? DEFAULT_MODELS.indexOf(m) : DEFAULT_MODELS.length);
  const names = [...((await api.models()) ?? DEFAULT_MODELS)].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const box = $('models');
  box.replaceChildren(
    ...names.map((m) => {
      const label = h('label');
      const cb = h('input', { type: 'checkbox', name: 'models', value: m });
      cb.checked = true;
      label.append(cb, document.createTextNode(` ${m}`));
      return label;
    }),
  );
  syncSpeakerOptions();
}

const selectedModels = (): string[] => [...document.querySelectorAll<HTMLInputElement>('input[name="models"]:checked')].map((c) => c.value);

function syncSpeakerOptions(): void {
  $('speaker-options').hidden = !selectedModels().includes(SPEAKERS_MODEL);
}

/** The speakers model's count parameters the form sets, or why they are wrong (the server's rules: 1..20, num <= max). */
function readSpeakerCounts(models: readonly string[]): { num_speakers?: number; max_speakers?: number } | string {
  if (!models.includes(SPEAKERS_MODEL)) return {};
  const out: { num_speakers?: number; max_speakers?: number } = {};
  for (const [id, key, name] of [['num-speakers', 'num_speakers', 'Number of speakers'], ['max-speakers', 'max_speakers', 'Maximum speakers']] as const) {
    const raw = $<HTMLInputElement>(id).value.trim();
    if (raw === '') continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 20) return `${name} (${key}) must be a whole number from 1 to 20.`;
    out[key] = n;
  }
  if (out.num_speakers !== undefined && out.max_speakers !== undefined && out.num_speakers > out.max_speakers) {
    return `Number of speakers (${out.num_speakers}) must not exceed the maximum (${out.max_speakers}).`;
  }
  return out;
}

function formError(text: string): void {
  $('form-error').textContent = text;
}

function readParams(): JobRequestParams | string {
  const models = selectedModels();
  if (!models.length) return 'Pick at least one model.';
  const period = Number($<HTMLInputElement>('output-period').value);
  if (!Number.isInteger(period) || period < 64 || period % 64 !== 0) return 'Output period must be a positive multiple of 64 ms.';
  const chRaw = $<HTMLInputElement>('channel').value.trim();
  const channel = chRaw === '' ? null : Number(chRaw);
  if (channel !== null && (!Number.isInteger(channel) || channel < 0 || channel > 255)) return 'Channel must be a whole number from 0 (or empty for every channel).';
  const vtRaw = $<HTMLInputElement>('volume-threshold').value.trim();
  const vt = vtRaw === '' ? null : Number(vtRaw);
  if (vt !== null && (!Number.isFinite(vt) || vt < -120 || vt > 0)) return 'Volume threshold must be between -120 and 0 dBFS.';
  const speakers = readSpeakerCounts(models);
  if (typeof speakers === 'string') return speakers;
  return {
    ...speakers,
    models,
    output_period: period,
    channel,
    include_summary: $<HTMLInputElement>('include-summary').checked,
    include_transitions: $<HTMLInputElement>('include-transitions').checked,
    include_raw_values: $<HTMLInputElement>('include-raw').checked,
    volume_threshold: vt,
  };
}

async function submit(): Promise<void> {
  formError('');
  if (!storage.key()) {
    formError('Enter an API key first.');
    $('api-key').focus();
    return;
  }
  const params = readParams();
  if (typeof params === 'string') return formError(params);
  const byUrl = document.querySelector<HTMLInputElement>('input[name="source"]:checked')?.value === 'url';
  const button = $<HTMLButtonElement>('submit');
  let name: string;
  let file: File | undefined;
  let url: string | undefined;
  if (byUrl) {
    url = $<HTMLInputElement>('url-input').value.trim();
    if (!/^https?:\/\/.+/i.test(url)) return formError('Enter an http(s) URL of the audio file.');
    name = url;
  } else {
    file = $<HTMLInputElement>('file-input').files?.[0];
    if (!file) return formError('Choose or drop an audio file.');
    name = file.name;
  }
  button.disabled = true;
  button.textContent = byUrl ? 'Submitting…' : 'Uploading…';
  try {
    // The file name travels in the job's metadata (FILENAME_KEY), so lists show it after a reload.
    const withName = { ...params, metadata: { [FILENAME_KEY]: name.slice(0, 512) } };
    const rec = await api.createJob(file ? { params: withName, file, contentType: uploadContentType(file) } : { params, url: url! });
    storage.addJob({ job_id: rec.job_id, name, created_at: rec.created_at });
    if (file) files.set(rec.job_id, file);
    void refreshJobs();
    void openJob(rec.job_id, rec);
    const panel = $('job-panel');
    if (panel.getBoundingClientRect().top < 0 || panel.getBoundingClientRect().top > window.innerHeight - 80) panel.scrollIntoView({ block: 'start' });
  } catch (err) {
    formError(problemText(err));
  } finally {
    button.disabled = false;
    button.textContent = 'Analyse';
  }
}

function problemText(err: unknown): string {
  if (err instanceof ApiProblem) {
    const details = Array.isArray(err.body.errors)
      ? (err.body.errors as Array<{ parameter?: string; message?: string }>).map((e) => `${e.parameter}: ${e.message}`).join('; ')
      : '';
    return `${err.code}: ${err.message}${details && !err.message.includes(details) ? ` (${details})` : ''}`;
  }
  return `Error: ${(err as Error).message}`;
}

// ---------- watching a job ----------

let watch: AbortController | null = null;
let currentJob: string | null = null;
let redraw: (() => void) | null = null;
const blobUrls: string[] = [];

function sourceText(rec: JobRecord): string {
  const name = uploadName(rec);
  if (rec.source.method === 'url') return `URL ${rec.source.url ?? ''}`;
  return `upload ${name ?? ''} ${rec.source.size_bytes !== null ? `(${formatBytes(rec.source.size_bytes)})` : ''}`.replace(/\s+/g, ' ').trim();
}

function renderJob(rec: JobRecord): void {
  $('job-empty').hidden = true;
  $('job-view').hidden = false;
  $('job-id').textContent = rec.job_id;
  $('job-source').textContent = sourceText(rec);
  const badge = $('job-status');
  badge.textContent = rec.status;
  badge.dataset.status = rec.status;
  const a = rec.audio;
  $('job-audio').textContent = a
    ? `${a.format}, ${a.channels} channel${a.channels === 1 ? '' : 's'}, ${a.sample_rate} Hz, ${formatTime(a.duration_sec * 1000)}`
    : '—';
  const progress = $<HTMLProgressElement>('job-progress');
  progress.value = rec.progress;
  $('job-progress-text').textContent = formatPercent(rec.progress).replace('.00', '');
  renderWarnings(rec.warnings ?? []);
  const errBox = $('job-error');
  if (rec.status === 'failed' && rec.error) {
    errBox.hidden = false;
    $('job-error-code').textContent = rec.error.code;
    $('job-error-message').textContent = rec.error.message;
  } else {
    errBox.hidden = true;
  }
}

/** Problems the job got past (e.g. TRUNCATED_AUDIO): shown with their code, whatever the status. */
function renderWarnings(warnings: JobRecord['warnings']): void {
  $('job-warnings').hidden = warnings.length === 0;
  $('job-warnings-list').replaceChildren(
    ...warnings.map((w) => {
      const li = h('li');
      li.append(h('code', {}, w.code), document.createTextNode(` ${w.message}`));
      return li;
    }),
  );
}

function clearResults(): void {
  $('results-panel').hidden = true;
  $('channels').replaceChildren();
  $('results-note').textContent = '';
  redraw = null;
  for (const u of blobUrls.splice(0)) URL.revokeObjectURL(u);
  for (const id of ['download-json', 'download-csv']) {
    const a = $<HTMLAnchorElement>(id);
    a.hidden = true;
    a.removeAttribute('href');
  }
  hideTooltip();
}

async function openJob(id: string, initial?: JobRecord): Promise<void> {
  watch?.abort();
  const ctl = new AbortController();
  watch = ctl;
  currentJob = id;
  sessionStorage.setItem(CURRENT_STORAGE, id);
  clearResults();
  $('job-error').hidden = true;
  let delay = 400;
  let rec: JobRecord | undefined = initial;
  let lastStatus = '';
  while (!ctl.signal.aborted) {
    try {
      if (!rec) rec = await api.getJob(id);
      if (ctl.signal.aborted) return;
      renderJob(rec);
      if (rec.status !== lastStatus) {
        if (lastStatus) void refreshJobs();
        lastStatus = rec.status;
      }
      if (rec.status === 'succeeded') {
        await showResults(rec, ctl.signal);
        return;
      }
      if (rec.status === 'failed') return;
    } catch (err) {
      if (ctl.signal.aborted) return;
      if (err instanceof ApiProblem && err.code === 'JOB_NOT_FOUND') {
        storage.removeJob(id);
        jobGone(id);
        return;
      }
      if (!(err instanceof ApiProblem && (err.status === 429 || err.status === 503 || err.status === 0))) {
        showJobError(err);
        return;
      }
      const retry = Number((err as ApiProblem).body.retry_after);
      delay = Number.isFinite(retry) && retry > 0 ? retry * 1000 : 2000;
    }
    rec = undefined;
    await sleep(delay, ctl.signal);
    delay = Math.min(2000, delay * 1.3);
  }
}

function showJobError(err: unknown): void {
  $('job-view').hidden = false;
  $('job-empty').hidden = true;
  $('job-error').hidden = false;
  const code = err instanceof ApiProblem ? err.code : 'ERROR';
  $('job-error-code').textContent = code;
  $('job-error-message').textContent = err instanceof Error ? err.message : String(err);
}

function jobGone(id: string): void {
  if (currentJob === id) {
    watch?.abort();
    currentJob = null;
    sessionStorage.removeItem(CURRENT_STORAGE);
    clearResults();
    $('job-view').hidden = true;
    $('job-empty').hidden = false;
    $('job-empty').textContent = `Job ${id} no longer exists (deleted or expired).`;
  }
  void refreshJobs();
}

async function decodeFor(jobId: string): Promise<AudioBuffer | null> {
  const file = files.get(jobId);
  if (!file) return null;
  let p = decoded.get(jobId);
  if (!p) {
    p = file.arrayBuffer().then((buf) => new OfflineAudioContext(1, 1, 8000).decodeAudioData(buf));
    decoded.set(jobId, p);
  }
  return p;
}

async function showResults(rec: JobRecord, signal: AbortSignal): Promise<void> {
  const { text, envelope } = await api.getResults(rec.job_id);
  if (signal.aborted) return;
  let audio: AudioBuffer | null = null;
  // The server keeps no audio: waveform and playback need the file uploaded from this tab.
  let note =
    rec.source.method === 'url'
      ? 'No waveform or playback for URL jobs: the audio is not kept (the file stays on its server).'
      : 'No waveform or playback: the server does not keep the audio, and the uploaded file is not in this browser tab.';
  try {
    audio = await decodeFor(rec.job_id);
  } catch (err) {
    note = `No waveform or playback: this browser could not decode the file (${(err as Error).message || 'decode error'}).`;
  }
  if (signal.aborted) return;
  renderResults(rec, envelope, text, audio, note);
}

function renderResults(rec: JobRecord, env: ResultsEnvelope, text: string, audio: AudioBuffer | null, note: string): void {
  clearResults();
  const durationSec = rec.audio?.duration_sec ?? null;
  const container = $('channels');
  const redraws: Array<() => void> = [];
  for (const [chId, ch] of Object.entries(env.result.channels)) {
    const idx = Number(chId);
    const samples = audio && idx < audio.numberOfChannels ? { data: audio.getChannelData(idx), sampleRate: audio.sampleRate } : null;
    const view = channelView({
      jobId: rec.job_id,
      channelId: chId,
      channel: ch,
      requestedModels: rec.request.models,
      durationSec,
      samples,
      waveformNote: note,
    });
    container.append(view.root);
    redraws.push(view.redraw);
  }
  const parts = [`${Object.keys(env.result.channels).length} channel(s)`, `output period ${rec.request.output_period} ms`];
  if (!rec.request.include_transitions) parts.push('lanes collapsed from the time series (transitions not requested)');
  if (rec.request.num_speakers !== undefined) parts.push(`num_speakers ${rec.request.num_speakers}`);
  if (rec.request.max_speakers !== undefined) parts.push(`max_speakers ${rec.request.max_speakers}`);
  $('results-note').textContent = parts.join(' · ');
  $('results-panel').hidden = false;
  redraw = () => redraws.forEach((r) => r());
  requestAnimationFrame(() => redraw?.());

  const base = `auris-${rec.job_id}`;
  setDownload('download-json', new Blob([text], { type: 'application/json' }), `${base}.json`);
  setDownload('download-csv', new Blob([segmentsCsv(env, durationSec)], { type: 'text/csv' }), `${base}-segments.csv`);
}

function setDownload(id: string, blob: Blob, filename: string): void {
  const a = $<HTMLAnchorElement>(id);
  const url = URL.createObjectURL(blob);
  blobUrls.push(url);
  a.href = url;
  a.download = filename;
  a.hidden = false;
}

// ---------- delete ----------

/** Two-step delete: the first activation arms the button for 5 s, the second deletes. */
const disarmTimers = new WeakMap<HTMLButtonElement, ReturnType<typeof setTimeout>>();

function disarm(button: HTMLButtonElement, label: string): void {
  clearTimeout(disarmTimers.get(button));
  disarmTimers.delete(button);
  delete button.dataset.armed;
  button.textContent = button.dataset.text ?? 'Delete';
  button.setAttribute('aria-label', `Delete ${label}`);
}

function armDelete(button: HTMLButtonElement, id: string, label: string): void {
  if (button.dataset.armed === '1') {
    button.disabled = true;
    void deleteJob(id).finally(() => {
      button.disabled = false;
      disarm(button, label);
    });
    return;
  }
  button.dataset.armed = '1';
  button.textContent = 'Confirm delete';
  button.setAttribute('aria-label', `Confirm deleting ${label}`);
  disarmTimers.set(button, setTimeout(() => disarm(button, label), 5000));
}

async function deleteJob(id: string): Promise<void> {
  $('jobs-error').textContent = '';
  try {
    await api.deleteJob(id);
  } catch (err) {
    if (!(err instanceof ApiProblem && err.code === 'JOB_NOT_FOUND')) {
      $('jobs-error').textContent = problemText(err);
      return;
    }
  }
  storage.removeJob(id);
  files.delete(id);
  decoded.delete(id);
  jobGone(id);
  $('jobs-note').textContent = `Deleted job ${id}.`;
}

// ---------- jobs list ----------

let listTimer: ReturnType<typeof setTimeout> | null = null;
let listSeq = 0;

/** Reloads the jobs list; false when the key was refused. */
async function refreshJobs(): Promise<boolean> {
  const seq = ++listSeq;
  if (listTimer) clearTimeout(listTimer);
  listTimer = null;
  $('jobs-error').textContent = '';
  if (!storage.key()) return false;
  let jobs: JobRecord[];
  let fromServer = true;
  try {
    const listed = await api.listJobs();
    if (listed) jobs = listed;
    else {
      fromServer = false;
      const local = storage.jobs();
      const got = await Promise.all(
        local.map((j) =>
          api.getJob(j.job_id).catch((err: unknown) => {
            if (err instanceof ApiProblem && err.code === 'JOB_NOT_FOUND') storage.removeJob(j.job_id);
            else throw err;
            return null;
          }),
        ),
      );
      jobs = got.filter((j): j is JobRecord => j !== null);
    }
  } catch (err) {
    if (seq !== listSeq) return false;
    if (err instanceof ApiProblem && (err.code === 'INVALID_API_KEY' || err.code === 'MISSING_API_KEY')) {
      setKeyStatus(`${err.code}: ${err.message}`, false);
      $('jobs-body').replaceChildren();
      return false;
    }
    $('jobs-error').textContent = problemText(err);
    return true;
  }
  if (seq !== listSeq) return true;
  jobs.sort((a, b) => b.created_at.localeCompare(a.created_at));
  $('jobs-note').textContent = fromServer
    ? `${jobs.length} job(s) of this key's project.`
    : `${jobs.length} job(s) created in this browser tab (this server has no job list endpoint).`;
  renderJobs(jobs);
  if (jobs.some((j) => j.status === 'queued' || j.status === 'processing')) listTimer = setTimeout(() => void refreshJobs(), 3000);
  return true;
}

function renderJobs(jobs: JobRecord[]): void {
  const body = $('jobs-body');
  if (!jobs.length) {
    const tr = h('tr');
    tr.append(h('td', { colspan: '3', class: 'help' }, 'No jobs yet.'));
    body.replaceChildren(tr);
    return;
  }
  body.replaceChildren(
    ...jobs.map((j) => {
      const tr = h('tr', { 'data-job-id': j.job_id });
      if (j.job_id === currentJob) tr.classList.add('current');
      const created = new Date(j.created_at);
      const src = j.source.method === 'url' ? (j.source.url ?? 'URL') : (uploadName(j) ?? 'upload');
      const tdJob = h('td', { class: 'job-cell' });
      tdJob.append(h('span', { class: 'src', title: `${src} · ${j.job_id}` }, src));
      const meta = h('span', { class: 'meta' });
      meta.append(
        h('time', { datetime: j.created_at, title: j.created_at }, created.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })),
        document.createTextNode(` · ${j.request.models.join(', ')}`),
      );
      tdJob.append(meta);
      const tdStatus = h('td');
      const badge = h('span', { class: 'badge', 'data-status': j.status }, j.status === 'processing' ? `processing ${Math.round(j.progress * 100)}%` : j.status);
      tdStatus.append(badge);
      if (j.error) tdStatus.append(h('code', { class: 'err-code' }, j.error.code));
      const tdAct = h('td', { class: 'row-actions' });
      const label = `job ${src} (${j.job_id.slice(0, 8)})`;
      const open = h('button', { type: 'button', class: 'secondary', 'aria-label': `Open ${label}` }, 'Open');
      open.addEventListener('click', () => void openJob(j.job_id));
      const del = h('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${label}`, 'data-text': 'Delete' }, 'Delete');
      del.addEventListener('click', () => armDelete(del, j.job_id, label));
      tdAct.append(open, del);
      tr.append(tdJob, tdStatus, tdAct);
      return tr;
    }),
  );
}

// ---------- start ----------

function init(): void {
  initKey();
  initForm();
  initLive({
    api,
    models: selectedModels,
    speakerCounts: () => readSpeakerCounts(selectedModels()),
    outputPeriodMs: () => {
      const p = Number($<HTMLInputElement>('output-period').value);
      return Number.isInteger(p) && p >= 64 && p % 64 === 0 ? p : 1024;
    },
  });
  void loadModels();
  $('jobs-refresh').addEventListener('click', () => void refreshJobs());
  const del = $<HTMLButtonElement>('job-delete');
  del.dataset.text = 'Delete job';
  del.addEventListener('click', () => {
    if (currentJob) armDelete(del, currentJob, `job ${currentJob}`);
  });
  let resizeTimer: ReturnType<typeof setTimeout> | undefined;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => redraw?.(), 100);
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') hideTooltip();
  });
  void checkKey().then(() => {
    const last = sessionStorage.getItem(CURRENT_STORAGE);
    if (last && storage.key()) void openJob(last);
  });
}

init();
