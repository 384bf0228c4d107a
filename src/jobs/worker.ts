/**
 * The bounded worker pool: `concurrency` loops pull job ids from the JobQueue and run
 * them through the Analyzer. Depends only on the Backends interfaces.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildEnvelope } from '../analysis/postprocess';
import type { AudioInfo, AudioSource } from '../audio/types';
import type { Config } from '../config';
import type { Analyzer, ChannelResults } from '../pipeline/analyzer';
import { AurisError, ERRORS } from '../errors';
import { errorKind, isJobVerdict, isTransientStorageError, toJobError } from './errors';
import { fetchSource, lazyDownloader, type SourceDownloader } from './fetch-source';
import type { JobMetrics } from './metrics';
import { ProgressWriter } from './progress-writer';
import { mutateJob } from './record';
import { analysisRequestOf } from './request';
import { resultsKey, resultsPath } from './service';
import { isTerminal, type Backends, type JobFinishedEvent, type JobWarning, type QueueMessage, type StoredJob } from './types';
import { StorageHealth } from './storage-health';
import { FairJobQueue } from './fair-queue';

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** A WAV whose data chunk ends before its header says: what is there is analysed (docs/api.md). */
export const TRUNCATED_AUDIO_WARNING: JobWarning = {
  code: 'TRUNCATED_AUDIO',
  message: 'The file ends before the length its header declares (cut off?): the audio that is there was analysed.',
};

/** The warnings with `w` added once (a job run again after a restart reports it again). */
function withWarning(warnings: JobWarning[], w: JobWarning): JobWarning[] {
  return warnings.some((x) => x.code === w.code) ? warnings : [...warnings, w];
}

/** Share of a URL job's progress that its download takes (docs/api.md). */
export const DOWNLOAD_SHARE = 0.2;
const HEARTBEAT_MS = 10_000;

class Shutdown extends Error {}
class Deleted extends Error {}

/** Processing failed for a reason that is not a verdict on the job: give it back for a later delivery. */
class GiveBack extends Error {
  constructor(
    /** What the worker was doing (told to the job's owner if it gives up). */
    readonly stage: string,
    cause: unknown,
    /** A storage fault that may pass: does not count towards the delivery limit. */
    readonly transient: boolean,
  ) {
    super(`failed while ${stage}`, { cause });
  }
}

/** Waits `ms` (nothing for 0), or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Longest wait before a job is delivered again, ms. */
const MAX_RETRY_DELAY_MS = 5 * 60_000;

/** What the stages of one delivery's run share. */
interface JobRun {
  msg: QueueMessage;
  jobId: string;
  /** Aborted with Shutdown, Deleted or an AurisError (the duration limit). */
  controller: AbortController;
  started: number;
  /** What the worker is doing (told to the job's owner if it gives up). */
  stage: string;
  progress: ProgressWriter;
  heartbeat: NodeJS.Timeout;
  /** Run at the end, in order, errors ignored. */
  cleanups: Array<() => Promise<void>>;
  /** Audio duration times analysed channels, once the header is read. */
  audioSeconds: number;
}

export class JobWorker {
  private readonly loops: Promise<void>[] = [];
  private readonly running = new Map<string, AbortController>();
  private stopController = new AbortController();
  private started = false;
  /** Transient storage faults in a row (any job): the backoff while storage is failing. */
  private storageFaults = 0;
  /** Storage faults the runs met, for /readyz and the records of waiting jobs (shared with REST by src/http/server.ts). */
  storage = new StorageHealth();
  /** Round-robin between projects over a window of deliveries pulled ahead (src/jobs/fair-queue.ts). */
  readonly fair: FairJobQueue;
  private readonly downloader: SourceDownloader;

  constructor(
    private readonly backends: Backends,
    private readonly analyzer: Analyzer,
    private readonly config: Config,
    private readonly metrics: JobMetrics,
    private readonly log: WorkerLogger,
    /** The URL method's signed, SSRF-safe downloader (src/download); default: built from config on first use. */
    downloader?: SourceDownloader,
  ) {
    this.downloader = downloader ?? lazyDownloader(config);
    const window = config.fairQueueWindow ?? 32;
    this.fair = new FairJobQueue(backends.queue, (id) => this.projectOf(id), Math.max(window, config.concurrency));
  }

  /** The scheduling unit of a job: its owner's organization and project. */
  private async projectOf(jobId: string): Promise<string> {
    const owner = (await this.backends.jobs.get(jobId))?.value.owner;
    return owner ? `${owner.organization_id}/${owner.project_id}` : '';
  }

  get isRunning(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopController = new AbortController();
    for (let i = 0; i < this.config.concurrency; i++) this.loops.push(this.loop());
  }

  /** Stops pulling; running jobs are interrupted and given back to the queue (picked up again on the next start). */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.stopController.abort();
    for (const c of this.running.values()) c.abort(new Shutdown('shutdown'));
    await Promise.all(this.loops.splice(0));
    await this.fair.release();
  }

  /** Stops a job of this process at once (it was deleted). */
  cancel(jobId: string): void {
    this.running.get(jobId)?.abort(new Deleted('deleted'));
  }

  /** Number of jobs being processed now. */
  get busy(): number {
    return this.running.size;
  }

  private async loop(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      let msg: QueueMessage | null;
      try {
        msg = await this.fair.pull(signal);
      } catch (err) {
        this.log.error({ err }, 'queue pull failed');
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (!msg) break;
      try {
        await this.process(msg);
        this.storageFaults = 0;
        this.storage.succeeded();
      } catch (err) {
        // Storage is failing: this loop waits too, instead of failing the next jobs at once.
        await pause(await this.retryOrGiveUp(msg, err), signal);
      }
    }
  }

  /** The delay before delivery number `n + 1`: JOB_RETRY_BACKOFF_MS, doubled each time, at most 5 minutes. */
  private retryDelay(n: number): number {
    return Math.min(MAX_RETRY_DELAY_MS, this.config.jobRetryBackoffMs * 2 ** Math.max(0, n - 1));
  }

  /**
   * A delivery that failed for a reason that is not the job's verdict. A transient storage
   * fault gives the job back with a backoff that grows while storage keeps failing (no
   * limit: the job is not at fault). Anything else gives it back with a backoff that grows
   * with its deliveries, until the queue's maximum: then the job fails with
   * PROCESSING_FAILED naming the cause and its queue entry is acked. Returns how long the
   * calling loop pauses, ms.
   */
  private async retryOrGiveUp(msg: QueueMessage, err: unknown): Promise<number> {
    const jobId = msg.jobId;
    const stage = err instanceof GiveBack ? err.stage : 'handling the job';
    const cause = err instanceof GiveBack ? err.cause : err;
    if (err instanceof GiveBack ? err.transient : isTransientStorageError(err)) {
      const delayMs = this.retryDelay(++this.storageFaults);
      this.storage.failed(cause);
      this.log.warn({ job_id: jobId, err: cause, stage, retry_in_ms: delayMs }, 'storage fault; the job is given back for later');
      await msg.nak({ delayMs, counted: false }).catch(() => undefined);
      return delayMs;
    }
    const n = msg.deliveryCount;
    if (n < this.backends.queue.maxDeliveries) {
      const delayMs = this.retryDelay(n);
      this.log.error({ job_id: jobId, err: cause, stage, delivery: n, retry_in_ms: delayMs }, 'job processing failed; it will be delivered again');
      await msg.nak({ delayMs }).catch(() => undefined);
      return 0;
    }
    this.log.error({ job_id: jobId, err: cause, stage, delivery: n }, 'job processing failed on every delivery; giving up');
    const message = `Processing failed on ${n} deliveries in a row, the last time while ${stage} (${errorKind(cause)}); the server log has the details.`;
    try {
      await this.finish(jobId, { code: 'PROCESSING_FAILED', message }, null);
    } catch (e) {
      // Not recorded: the start-up recovery finds the job unfinished and queues it again.
      this.log.error({ job_id: jobId, err: e }, 'could not record the failure of a job that was given up');
    }
    await msg.ack().catch(() => undefined);
    return 0;
  }

  /**
   * One delivery, in named stages: settle it without a run when it needs none, else mark the
   * job processing -> fetch its audio -> analyse -> store the results and finish; every
   * failure goes to settleFailure(), the one error exit.
   */
  private async process(msg: QueueMessage): Promise<void> {
    if (await this.settledWithoutRun(msg)) return;
    const run = this.beginRun(msg);
    try {
      const job = await this.markProcessing(run);
      const source = await this.fetchAudio(run, job);
      const channels = await this.analyze(run, job, source);
      await this.storeResults(run, channels);
      await msg.ack();
    } catch (thrown) {
      await this.settleFailure(run, thrown);
    } finally {
      await this.endRun(run);
    }
  }

  /** A delivery that needs no run: the job is gone, already finished or out of attempts. True when settled. */
  private async settledWithoutRun(msg: QueueMessage): Promise<boolean> {
    const cur = await this.backends.jobs.get(msg.jobId);
    if (!cur) {
      await msg.ack(); // deleted while queued
      return true;
    }
    if (isTerminal(cur.value.record.status)) {
      // Finished before a crash that came before the ack: make sure the event went out.
      await this.publishFinished(cur.value);
      await msg.ack();
      return true;
    }
    if (cur.value.attempts >= this.config.maxJobAttempts) {
      await this.finish(msg.jobId, { code: 'JOB_INTERRUPTED', message: ERRORS.JOB_INTERRUPTED.message }, null);
      await msg.ack();
      return true;
    }
    return false;
  }

  private beginRun(msg: QueueMessage): JobRun {
    const jobId = msg.jobId;
    const controller = new AbortController();
    this.running.set(jobId, controller);
    return {
      msg,
      jobId,
      controller,
      started: Date.now(),
      stage: 'starting the job',
      // Progress and audio facts go to the store, throttled; a vanished record means the job was deleted.
      progress: new ProgressWriter(this.backends.jobs, jobId, controller.signal, () => controller.abort(new Deleted('deleted'))),
      heartbeat: setInterval(() => void msg.working().catch(() => undefined), HEARTBEAT_MS),
      cleanups: [],
      audioSeconds: 0,
    };
  }

  private async markProcessing(run: JobRun): Promise<StoredJob> {
    const marked = await mutateJob(this.backends.jobs, run.jobId, (j) => {
      j.attempts += 1;
      j.record.status = 'processing';
      j.record.progress = 0;
      j.record.started_at = new Date().toISOString();
      return j;
    });
    if (!marked) throw new Deleted('deleted');
    this.log.info({ job_id: run.jobId, attempt: marked.value.attempts }, 'job processing');
    return marked.value;
  }

  /** The audio: the upload, or a download of the URL into a temporary file (its download is the first DOWNLOAD_SHARE of the progress). */
  private async fetchAudio(run: JobRun, job: StoredJob): Promise<AudioSource> {
    const { jobId } = run;
    if (job.record.source.method === 'upload') {
      run.stage = 'reading the upload';
      const file = job.upload_blob ? await this.backends.blobs.localFile(job.upload_blob) : null;
      if (!file) throw new AurisError('PROCESSING_FAILED', 'The uploaded audio is no longer available.');
      run.cleanups.push(file.release);
      return { path: file.path };
    }
    run.stage = 'downloading the file URL';
    const tmpDir = join(this.config.dataDir, 'tmp');
    await mkdir(tmpDir, { recursive: true });
    const tmpFile = join(tmpDir, `${jobId}-${randomBytes(4).toString('hex')}`);
    run.cleanups.push(() => rm(tmpFile, { force: true }));
    const got = await fetchSource(job.record.source.url ?? '', tmpFile, {
      downloader: this.downloader,
      signal: run.controller.signal,
      job: { jobId, organizationId: job.owner.organization_id, projectId: job.owner.project_id },
      maxDurationSec: this.config.limits.maxAudioDurationSec,
      channel: job.record.request.channel,
      onProgress: (bytes, total) => run.progress.report((bytes / total) * DOWNLOAD_SHARE),
    });
    await mutateJob(this.backends.jobs, jobId, (j) => {
      j.record.source.size_bytes = got.bytes;
      return j;
    });
    return { path: tmpFile };
  }

  /** Runs the analysis the job's record asks for; the audio's facts go to the record once its header is read. */
  private async analyze(run: JobRun, job: StoredJob, source: AudioSource): Promise<ChannelResults> {
    const { controller } = run;
    const request = analysisRequestOf(job.record.request);
    const analysisStart = job.record.source.method === 'url' ? DOWNLOAD_SHARE : 0;
    if (controller.signal.aborted) throw controller.signal.reason;
    run.stage = 'analysing the audio';
    const channels = await this.analyzer.analyze(source, request, {
      maxDurationSec: this.config.limits.maxAudioDurationSec,
      signal: controller.signal,
      onProgress: (p) => run.progress.report(analysisStart + p * (1 - analysisStart)),
      onInfo: (info) => this.recordAudio(run, info, request.channel !== undefined ? 1 : info.channels),
    });
    await run.progress.flush();
    if (controller.signal.aborted) throw controller.signal.reason;
    return channels;
  }

  /** The audio's facts from its header: over the duration limit -> DURATION_LIMIT_EXCEEDED; else into the record. */
  private recordAudio(run: JobRun, info: AudioInfo, processed: number): void {
    const limit = this.config.limits.maxAudioDurationSec;
    run.audioSeconds = info.durationSec * processed;
    if (run.audioSeconds > limit) {
      run.controller.abort(
        new AurisError('DURATION_LIMIT_EXCEEDED', `The audio is ${run.audioSeconds.toFixed(1)} s long over ${processed} channel(s); the limit is ${limit} s combined.`),
      );
    }
    run.progress.update((j) => {
      j.record.audio = { duration_sec: info.durationSec, channels: info.channels, sample_rate: info.sampleRate, format: info.format, processed_channels: processed };
      if (info.truncated) j.record.warnings = withWarning(j.record.warnings ?? [], TRUNCATED_AUDIO_WARNING);
      return j;
    });
  }

  /** The results envelope (buildEnvelope, as the CLI) into the blob store, then the job succeeds. */
  private async storeResults(run: JobRun, channels: ChannelResults): Promise<void> {
    const { jobId } = run;
    const body = JSON.stringify(buildEnvelope(jobId, channels));
    const size = Buffer.byteLength(body);
    if (size > this.config.limits.maxResultBytes) {
      throw new AurisError(
        'RESULT_TOO_LARGE',
        `The JSON result would be ${size} bytes, over the limit of ${this.config.limits.maxResultBytes} bytes; raise output_period or split the models over several jobs.`,
      );
    }
    const key = resultsKey(jobId);
    run.stage = 'storing the results';
    await this.backends.blobs.put(key, body);
    const done = await this.finish(jobId, null, { key, size });
    if (!done) {
      // Deleted meanwhile: drop the results. Finished by another worker (a redelivery): its record points at the same key.
      if (!(await this.backends.jobs.get(jobId))) await this.backends.blobs.delete(key);
      return;
    }
    const audio = done.record.audio;
    this.metrics.audioSeconds.inc(run.audioSeconds || (audio ? audio.duration_sec * audio.processed_channels : 0));
    this.metrics.processingSeconds.observe((Date.now() - run.started) / 1000);
  }

  /**
   * The one error exit of a run: a shutdown gives the job back uncounted, a deletion acks it,
   * a verdict on the job fails it, anything else (storage fault, unexpected exception) puts it
   * back to queued and throws GiveBack for retryOrGiveUp().
   */
  private async settleFailure(run: JobRun, thrown: unknown): Promise<void> {
    const { msg, jobId, controller } = run;
    const reason: unknown = controller.signal.aborted ? controller.signal.reason : thrown;
    if (reason instanceof Shutdown) {
      this.log.info({ job_id: jobId }, 'job interrupted by shutdown; it will run again on the next start');
      await msg.nak({ counted: false });
      return;
    }
    if (reason instanceof Deleted) {
      this.log.info({ job_id: jobId }, 'job deleted while processing');
      await msg.ack();
      return;
    }
    if (!isJobVerdict(reason)) {
      // A storage fault (disk full, NATS unreachable) or an unexpected exception: not a verdict on the job.
      await this.undoStart(jobId);
      throw new GiveBack(run.stage, reason, isTransientStorageError(reason));
    }
    const error = toJobError(reason);
    // What the caller is not told (a download's network error, a refused address) goes to the log.
    if (reason instanceof Error && reason.cause) this.log.warn({ job_id: jobId, code: error.code, err: reason.cause }, 'job failed; detail');
    const done = await this.finish(jobId, error, null);
    if (done) this.metrics.processingSeconds.observe((Date.now() - run.started) / 1000);
    await msg.ack();
  }

  /** Stops the run's timers and removes what it left (temporary file, local copy of the upload). */
  private async endRun(run: JobRun): Promise<void> {
    run.progress.stop();
    clearInterval(run.heartbeat);
    this.running.delete(run.jobId);
    for (const cleanup of run.cleanups) await cleanup().catch(() => undefined);
  }

  /** Puts a job given back into the queued state again; its attempt does not count (best effort: storage may be failing). */
  private async undoStart(jobId: string): Promise<void> {
    await mutateJob(this.backends.jobs, jobId, (j) => {
      if (j.record.status !== 'processing') return null;
      j.attempts = Math.max(0, j.attempts - 1);
      j.record.status = 'queued';
      j.record.progress = 0;
      j.record.started_at = null;
      return j;
    }).catch(() => undefined);
  }

  /** Moves the job to its final state, deletes the upload and publishes the job-finished event. */
  private async finish(
    jobId: string,
    error: { code: string; message: string } | null,
    results: { key: string; size: number } | null,
  ): Promise<StoredJob | null> {
    const now = new Date();
    const updated = await mutateJob(this.backends.jobs, jobId, (j) => {
      if (isTerminal(j.record.status)) return null;
      j.record.status = error ? 'failed' : 'succeeded';
      if (!error) j.record.progress = 1;
      j.record.finished_at = now.toISOString();
      j.record.expires_at = new Date(now.getTime() + this.config.retentionSec * 1000).toISOString();
      j.record.error = error;
      if (results) {
        j.results_blob = results.key;
        j.record.results_url = resultsPath(jobId);
        j.record.results_size_bytes = results.size;
      }
      j.event_id = randomUUID();
      return j;
    });
    if (!updated) return null;
    const job = updated.value;
    if (job.upload_blob) {
      await this.backends.blobs.delete(job.upload_blob);
      await mutateJob(this.backends.jobs, jobId, (j) => {
        j.upload_blob = null;
        return j;
      }).catch(() => undefined);
    }
    this.metrics.jobsFinished.inc({ status: job.record.status, code: job.record.error?.code ?? '' });
    this.log.info({ job_id: jobId, status: job.record.status, code: job.record.error?.code }, 'job finished');
    await this.publishFinished(job);
    return job;
  }

  private async publishFinished(job: StoredJob): Promise<void> {
    if (!job.event_id) return;
    const event: JobFinishedEvent = {
      type: 'job.finished',
      event_id: job.event_id,
      job_id: job.record.job_id,
      occurred_at: job.record.finished_at ?? new Date().toISOString(),
      record: job.record,
      callback: job.record.request.callback,
      project: { organization_id: job.owner.organization_id, project_id: job.owner.project_id },
    };
    await this.backends.events.publish(event);
  }
}
