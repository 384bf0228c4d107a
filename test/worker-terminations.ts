/**
 * Counts `Worker.terminate()` calls on every worker thread of the process until restored: how the
 * tests see whether a thread was stopped from outside (the pool must never do it; a clustering lane
 * ends a thread whose running call was cancelled).
 */
import { Worker } from 'node:worker_threads';

export interface Terminations {
  /** Calls so far. */
  readonly count: number;
  /** Puts the real terminate back (call in `finally`). */
  restore(): void;
}

export function countTerminations(): Terminations {
  const terminate = Worker.prototype.terminate;
  const counter = {
    count: 0,
    restore: (): void => {
      Worker.prototype.terminate = terminate;
    },
  };
  Worker.prototype.terminate = function (this: Worker) {
    counter.count++;
    return terminate.call(this);
  };
  return counter;
}
