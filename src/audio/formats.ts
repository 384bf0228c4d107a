/**
 * The audio formats the native decoder opens (native/decoder.cc `sniff`: the container is
 * recognised from the first bytes, never the file name). The one list every message names:
 * the decoder's own UNSUPPORTED_FORMAT detail, the error catalogue, the CLI help, the web
 * console and the docs (test/audio/formats.test.ts checks that they agree and that each
 * listed format decodes). Kept free of the addon so help texts work without it.
 */
export const SUPPORTED_FORMATS = ['WAV', 'FLAC', 'MP3', 'Ogg Vorbis/Opus', 'AIFF', 'AU', 'CAF', 'W64', 'RF64'] as const;

/** "WAV, FLAC, …, W64 or RF64": the list as the messages print it. */
export const SUPPORTED_FORMATS_TEXT = `${SUPPORTED_FORMATS.slice(0, -1).join(', ')} or ${SUPPORTED_FORMATS[SUPPORTED_FORMATS.length - 1]}`;
