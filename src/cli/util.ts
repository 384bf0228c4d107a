/** Helpers shared by the CLI subcommands. */
import * as path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { AudioSource } from '../audio/types';
import { type Config, ConfigError, loadConfig } from '../config';
import { errorCode } from '../errors';

/** "auris: error [CODE]: message" (CODE when the error carries one). */
export function formatError(e: unknown): string {
  const code = errorCode(e);
  const msg = e instanceof Error ? e.message : String(e);
  return `auris: error${code ? ` [${code}]` : ''}: ${msg}`;
}

/**
 * util.parseArgs refuses `--opt -60` (a value starting with '-'). For the given value
 * options, rewrite `--opt <negative number>` to `--opt=<negative number>`.
 */
export function joinNegativeValues(argv: readonly string[], valueOptions: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (valueOptions.includes(a) && next !== undefined && /^-\d*\.?\d+(e[-+]?\d+)?$/i.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** A progress bar on stderr, drawn only when stderr is a TTY. */
export class ProgressBar {
  private readonly enabled: boolean;
  private last = '';

  constructor(private readonly label: string, stream: NodeJS.WriteStream = process.stderr) {
    this.stream = stream;
    this.enabled = stream.isTTY === true;
  }

  private readonly stream: NodeJS.WriteStream;

  update(fraction: number): void {
    if (!this.enabled) return;
    const width = 30;
    const f = Math.max(0, Math.min(1, fraction));
    const filled = Math.round(f * width);
    const line = `${this.label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
    if (line !== this.last) {
      this.stream.write(`\r${line}`);
      this.last = line;
    }
  }

  done(): void {
    if (this.enabled && this.last) this.stream.write('\r\x1b[K');
    this.last = '';
  }
}

type ParseArgsOptions = NonNullable<ParseArgsConfig['options']>;
export type Parsed<O extends ParseArgsOptions> = ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>>;

/**
 * parseArgs for a subcommand, with the CLI's conventions: negative numbers accepted after
 * `valueOptions`, a usage error printed with the help text (exit code 2), `--help` printed
 * to stdout (exit code 0). Returns the parsed arguments, or the exit code to return.
 */
export function parseCommand<O extends ParseArgsOptions>(
  command: string,
  argv: readonly string[],
  options: O,
  help: string,
  valueOptions: readonly string[],
): Parsed<O> | number {
  let parsed: Parsed<O>;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv, valueOptions), allowPositionals: true, strict: true, options });
  } catch (e) {
    process.stderr.write(`auris ${command}: ${(e as Error).message}\n\n${help}\n`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    process.stdout.write(help + '\n');
    return 0;
  }
  return parsed;
}

/** The service's configuration from flags and environment; a ConfigError is printed and answered with exit code 2. */
export function loadCommandConfig(command: string, argv: readonly string[]): Config | number {
  try {
    return loadConfig(argv, process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`auris ${command}: ${err.message}\n`);
    return 2;
  }
}

/** The audio a command reads: a file, or stdin for '-'. */
export async function audioSourceOf(file: string): Promise<AudioSource> {
  if (file !== '-') return { path: path.resolve(file) };
  const parts: Buffer[] = [];
  for await (const c of process.stdin) parts.push(c as Buffer);
  return { buffer: Buffer.concat(parts) };
}

/** The REST (and WebSocket) base URL of the client commands when neither --url nor $AURIS_URL is given. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';
/** The gRPC port of `auris serve` (GRPC_PORT's default). */
export const DEFAULT_GRPC_PORT = 50051;

/** The service's REST base URL: --url, else $AURIS_URL, else the local default. */
export function restUrl(flag: string | undefined): string {
  return flag ?? (process.env['AURIS_URL'] || DEFAULT_URL); // an empty variable counts as unset
}

/**
 * The gRPC address host:port: --grpc, else $AURIS_GRPC_ADDRESS, else the REST URL's host on
 * the default gRPC port (one --url names the whole service; `auris serve` listens on both).
 */
export function grpcAddress(flag: string | undefined, url: string): string {
  const explicit = flag ?? (process.env['AURIS_GRPC_ADDRESS'] || undefined);
  if (explicit !== undefined) return explicit;
  let host = '127.0.0.1';
  try {
    host = new URL(url).hostname || host;
  } catch {
    // an invalid --url is reported by the command that uses it
  }
  return `${host}:${DEFAULT_GRPC_PORT}`;
}

/**
 * Options renamed so that one name means one thing in every command (`--server` was the REST
 * URL in `jobs` and the gRPC address in `stream`): a usage message naming the new option, or
 * null when argv uses none of them.
 */
export function renamedOption(argv: readonly string[], renames: Readonly<Record<string, string>>): string | null {
  for (const a of argv) {
    if (a === '--') break;
    const name = a.split('=')[0]!;
    if (name in renames) return `${name} is now ${renames[name]}`;
  }
  return null;
}

/** Model names with speech first (the order of the results when no --models is given). */
export function speechFirst(names: readonly string[]): string[] {
  return [...names].sort((a, b) => Number(b === 'speech') - Number(a === 'speech'));
}
