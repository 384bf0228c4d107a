#!/usr/bin/env bash
# Generates the seed corpus (small valid files of every container the decoder accepts) into
# build/fuzz/corpus/<format>/. Needs sox, lame and ffmpeg (already used by the audio tests).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
final="$root/build/fuzz/corpus"
# Made beside the final folder and renamed into place at the end, so a concurrent reader
# (native/fuzz/smoke.sh from another test run) never sees a half-made corpus.
c="$final.tmp.$$"
rm -rf "$c"; mkdir -p "$c/wav" "$c/flac" "$c/mp3" "$c/opus" "$c/other"
t="$(mktemp -d)"; trap 'rm -rf "$t" "$c"' EXIT
# A short tone + noise, mono and stereo, at a few rates.
for rate in 8000 16000 22050 44100; do
  for ch in 1 2; do
    sox -V1 -n -r "$rate" -c "$ch" -b 16 "$t/s-$rate-$ch.wav" synth 0.15 sine 440 synth 0.15 whitenoise amod 0.1 vol 0.5
  done
done
# WAV: PCM 8/16/24/32, float, A-law, mu-law, IMA/MS ADPCM, GSM, extensible, RF64.
sox -V1 "$t/s-8000-1.wav" "$c/wav/pcm16-8k-mono.wav"
sox -V1 "$t/s-16000-2.wav" -b 8 "$c/wav/pcm8-16k-stereo.wav"
sox -V1 "$t/s-22050-1.wav" -b 24 "$c/wav/pcm24-22k-mono.wav"
sox -V1 "$t/s-8000-2.wav" -b 32 "$c/wav/pcm32-8k-stereo.wav"
sox -V1 "$t/s-16000-1.wav" -e floating-point -b 32 "$c/wav/float-16k-mono.wav"
sox -V1 "$t/s-8000-1.wav" -e a-law "$c/wav/alaw-8k.wav"
sox -V1 "$t/s-8000-1.wav" -e u-law "$c/wav/ulaw-8k.wav"
sox -V1 "$t/s-8000-1.wav" -e ima-adpcm "$c/wav/ima-adpcm-8k.wav"
sox -V1 "$t/s-8000-1.wav" -e ms-adpcm "$c/wav/ms-adpcm-8k.wav"
sox -V1 "$t/s-8000-1.wav" -e gsm-full-rate "$c/wav/gsm-8k.wav"
ffmpeg -v error -y -i "$t/s-16000-2.wav" -rf64 always "$c/wav/rf64-16k-stereo.wav"
ffmpeg -v error -y -i "$t/s-8000-2.wav" -c:a pcm_s24le -write_bext 0 -f wav "$c/wav/ffmpeg-24.wav"
# FLAC: 16/24-bit, mono/stereo, and one with an ID3 tag in front.
sox -V1 "$t/s-8000-1.wav" "$c/flac/16-8k-mono.flac"
sox -V1 "$t/s-22050-2.wav" -b 24 "$c/flac/24-22k-stereo.flac"
sox -V1 "$t/s-16000-1.wav" -C 0 "$c/flac/c0-16k-mono.flac"
ffmpeg -v error -y -i "$t/s-8000-2.wav" -write_id3v2 1 -metadata title=x "$c/flac/ffmpeg-8k-stereo.flac"
# MP3: CBR/VBR, MPEG-1/2/2.5, with and without LAME tag / ID3v2.
lame --quiet -b 32 "$t/s-44100-1.wav" "$c/mp3/cbr32-44k-mono.mp3"
lame --quiet -V 6 "$t/s-22050-2.wav" "$c/mp3/vbr-22k-stereo.mp3"
lame --quiet -b 8 "$t/s-8000-1.wav" "$c/mp3/mpeg25-8k.mp3"
lame --quiet -b 16 -t "$t/s-16000-1.wav" "$c/mp3/notag-16k.mp3"
lame --quiet -b 24 --tt title --add-id3v2 "$t/s-22050-1.wav" "$c/mp3/id3-22k.mp3"
ffmpeg -v error -y -i "$t/s-44100-1.wav" -c:a mp2 -b:a 64k -f mp2 "$c/mp3/layer2-44k.mp2"
# Ogg Opus (libopusfile): mono/stereo, several frame sizes, multi-page.
ffmpeg -v error -y -i "$t/s-16000-1.wav" -c:a libopus -b:a 16k "$c/opus/opus-16k.opus"
ffmpeg -v error -y -i "$t/s-44100-2.wav" -c:a libopus -b:a 48k -frame_duration 10 "$c/opus/stereo-10ms.opus"
ffmpeg -v error -y -i "$t/s-8000-1.wav" -c:a libopus -b:a 8k -frame_duration 60 "$c/opus/mono-60ms.opus"
ffmpeg -v error -y -i "$t/s-22050-1.wav" -c:a libopus -b:a 24k -page_duration 20000 "$c/opus/pages-20ms.opus"
# Others: OGG Vorbis, AIFF, AU, CAF, W64.
sox -V1 "$t/s-22050-1.wav" "$c/other/vorbis-22k.ogg"
sox -V1 "$t/s-8000-1.wav" "$c/other/pcm-8k.aiff"
sox -V1 "$t/s-8000-1.wav" "$c/other/pcm-8k.au"
sox -V1 "$t/s-8000-1.wav" "$c/other/pcm-8k.w64"
ffmpeg -v error -y -i "$t/s-8000-1.wav" -f caf "$c/other/pcm-8k.caf" 2>/dev/null || true
find "$c" -type f -size +24k -print -delete >&2 || true
for d in "$c"/*; do echo "$(basename "$d"): $(ls "$d" | wc -l) files, $(du -sb "$d" | cut -f1) bytes"; done
rm -rf "$final"; mv "$c" "$final"
