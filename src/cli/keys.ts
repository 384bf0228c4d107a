/**
 * `auris keys`: the public keys that verify the service's download requests (the same as
 * GET /verification-keys and GET /.well-known/jwks.json), from the same configuration as
 * `auris serve` (DATA_DIR, SIGNING_KEY_FILE, VERIFICATION_KEY_FILES). On a fresh DATA_DIR
 * the signing key is generated, exactly as the first `auris serve` would.
 *
 *   auris keys [--format text|json|jwks|pem] [serve options]
 *   auris keys generate <file.pem>       a new EC P-521 private key (mode 0600) for rotation
 */
import { generateKeyPem, KeyError, loadKeyRing, writeKeyFileExclusive } from '../download/keys';
import { loadCommandConfig } from './util';

export const summary = 'print the public keys that verify download requests (or generate a key)';

const FORMATS = ['text', 'json', 'jwks', 'pem'] as const;
type Format = (typeof FORMATS)[number];

const HELP = `usage: auris keys [--format text|json|jwks|pem] [serve options, e.g. --data-dir DIR]
       auris keys generate <file.pem>

Prints the public keys that verify the X-Service-Request-Verification JWT of URL downloads
(ES512, EC P-521): key id and base64 DER (SPKI), as GET /verification-keys serves them.
  --format text   key id, algorithm and base64 DER per key (default)
  --format json   the body of GET /verification-keys
  --format jwks   the body of GET /.well-known/jwks.json
  --format pem    PEM public keys, each preceded by its key id
generate writes a new private key (mode 0600; refuses to overwrite) for key rotation:
publish it with VERIFICATION_KEY_FILES first, then sign with it (SIGNING_KEY_FILE).
See docs/download.md.
`;

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(HELP);
    return 0;
  }
  if (argv[0] === 'generate') {
    const file = argv[1];
    if (!file || argv.length !== 2) {
      process.stderr.write(`auris keys: generate needs exactly one output file\n\n${HELP}`);
      return 2;
    }
    if (!(await writeKeyFileExclusive(file, generateKeyPem()))) {
      process.stderr.write(`auris keys: ${file} already exists; not overwritten\n`);
      return 1;
    }
    const ring = await loadKeyRing({ dataDir: '.', signingKeyFile: file });
    process.stdout.write(`wrote ${file} (EC P-521, mode 0600)\nkid: ${ring.signing.kid}\n`);
    return 0;
  }

  let format: Format = 'text';
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--format' || a.startsWith('--format=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (!FORMATS.includes(v as Format)) {
        process.stderr.write(`auris keys: --format must be one of ${FORMATS.join(', ')}\n`);
        return 2;
      }
      format = v as Format;
    } else rest.push(a);
  }
  const config = loadCommandConfig('keys', rest);
  if (typeof config === 'number') return config;
  let ring;
  try {
    ring = await loadKeyRing(
      { dataDir: config.dataDir, signingKeyFile: config.download.signingKeyFile, verificationKeyFiles: config.download.verificationKeyFiles },
      { info: (o, m) => process.stderr.write(`auris keys: ${m} (${(o as { path?: string }).path ?? ''})\n`), warn: (_o, m) => process.stderr.write(`auris keys: ${m}\n`) },
    );
  } catch (err) {
    if (err instanceof KeyError) {
      process.stderr.write(`auris keys: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  switch (format) {
    case 'json':
      process.stdout.write(JSON.stringify({ keys: ring.verificationKeys() }, null, 2) + '\n');
      break;
    case 'jwks':
      process.stdout.write(JSON.stringify(ring.jwks(), null, 2) + '\n');
      break;
    case 'pem':
      for (const k of ring.published) {
        const pem = k.publicKey.export({ type: 'spki', format: 'pem' }) as string;
        process.stdout.write(`# kid: ${k.kid}${k.kid === ring.signing.kid ? ' (signing)' : ''}\n${pem}`);
      }
      break;
    default:
      for (const k of ring.verificationKeys()) {
        process.stdout.write(`kid: ${k.kid}\nalg: ${k.alg}${k.signing ? ' (signing)' : ' (published for rotation)'}\npublic_key (base64 DER, SPKI): ${k.public_key}\n\n`);
      }
  }
  return 0;
}
