/**
 * The console's wire types (web/src/wire.ts, written without imports for the browser build)
 * against the server's: each pair must be assignable both ways. Nothing runs here; the check
 * is the compilation (`npm run build:ts`, the pretest step of `npm test` and CI), which fails
 * with "Type 'false' does not satisfy the constraint 'true'" at the pair that drifted apart:
 * a field renamed, removed, added or retyped on one side only.
 */
import type * as Server from '../../src/analysis/postprocess';
import type * as Jobs from '../../src/jobs/types';
import type * as Console from '../../web/src/wire';

/** true when A and B are assignable to each other (not distributed over unions). */
type Mutual<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** true when A and B are the same type member for member, optionality and readonly included (an extra optional field counts). */
type Identical<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Same<A, B> = Mutual<A, B> extends true ? Identical<A, B> : false;
type Assert<T extends true> = T;

export type WireTypesMatch = [
  Assert<Same<Console.JobStatus, Jobs.JobStatus>>,
  Assert<Same<Console.JobRequest, Jobs.JobRequest>>,
  Assert<Same<Console.JobRecord, Jobs.JobRecord>>,
  Assert<Same<Console.ModelResult, Server.ModelResult>>,
  Assert<Same<Console.TimeStep, Server.TimeStepResult>>,
  Assert<Same<Console.Segment, Server.Segment>>,
  Assert<Same<Console.ChannelResult, Server.ChannelResult>>,
  Assert<Same<Console.ResultsEnvelope, Server.ResultsEnvelope>>,
];
