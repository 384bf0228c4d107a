#!/usr/bin/env node
/**
 * The `auris` command line.
 *
 *   auris analyze <file> --models speech,arousal,gender [--output-period 1024] ...
 *   auris eval | serve | keys ...      (added by their owners, see below)
 *
 * Subcommands live in src/cli/<name>.ts and export
 *   `run(argv: string[]): Promise<number>`  (argv after the subcommand; resolves to the exit code)
 *   `summary: string`                        (optional one-line help)
 * main.ts dispatches to them by name, so adding one needs no edit here beyond COMMANDS.
 */
import { formatError } from './util';

interface CommandModule {
  run(argv: string[]): Promise<number>;
  summary?: string;
}

/** Subcommand -> module (relative to this file). */
const COMMANDS: Record<string, { module: string; summary: string }> = {
  analyze: { module: './analyze', summary: 'analyse an audio file, print the results JSON' },
  eval: { module: './eval', summary: 'evaluate the models on a labelled data set' },
  serve: { module: './serve', summary: 'run the service (REST, live streams over gRPC and WebSocket, web console)' },
  stream: { module: './stream', summary: 'send an audio file as a live stream (gRPC or WebSocket), print each step as a JSON line' },
  jobs: { module: './jobs', summary: 'submit files or URLs to a running service, list and fetch jobs (REST client)' },
  keys: { module: './keys', summary: 'print the public keys that verify download requests (or generate one)' },
};

function loadCommand(name: string): CommandModule | undefined {
  const entry = COMMANDS[name];
  if (!entry) return undefined;
  try {
    return require(entry.module) as CommandModule;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // Only "this subcommand is not part of the build" is reported as unavailable.
    if (err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(entry.module.slice(2))) return undefined;
    throw e;
  }
}

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([n, c]) => `  ${n.padEnd(9)} ${c.summary}`);
  return [
    'usage: auris <command> [options]',
    '       auris --version',
    '',
    'commands:',
    ...lines,
    '',
    'the shipped models (--models): speech, arousal, gender, emotions, speakers (who speaks when;',
    '  --num-speakers / --max-speakers on analyze, jobs submit and stream)',
    '',
    "run 'auris <command> --help' for a command's options",
  ].join('\n');
}

/** The package version (package.json next to dist/). */
export function version(): string {
  return (require('../../../package.json') as { version: string }).version;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === '--version' || cmd === '-V' || cmd === 'version') {
    process.stdout.write(`auris ${version()}\n`);
    return 0;
  }
  if (cmd === undefined || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    process.stdout.write(usage() + '\n');
    return cmd === undefined ? 2 : 0;
  }
  if (!(cmd in COMMANDS)) {
    process.stderr.write(`auris: unknown command '${cmd}'\n\n${usage()}\n`);
    return 2;
  }
  const mod = loadCommand(cmd);
  if (!mod || typeof mod.run !== 'function') {
    process.stderr.write(`auris: the '${cmd}' command is not available in this build\n`);
    return 2;
  }
  return mod.run(rest);
}

if (require.main === module) {
  // `auris analyze f.wav | head`: a closed pipe is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(formatError(e) + '\n');
      process.exitCode = 1;
    },
  );
}
