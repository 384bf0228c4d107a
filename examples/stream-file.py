#!/usr/bin/env python3
"""Stream a WAV file to the auris gRPC streaming API and print each time step as a JSON line.

A client in another language, written only against proto/audioanalysis/v1/audio_analysis.proto
with the standard Python gRPC library (Debian: python3-grpcio, python3-grpc-tools; pip: grpcio,
grpcio-tools). The Python stubs are generated from the proto file at start-up into a temporary
directory, so nothing generated is kept in the repository.

    python3 examples/stream-file.py speech.wav --api-key KEY [--grpc 127.0.0.1:50051]
        [--models speech,arousal,gender] [--output-period 1024] [--channel 0]
        [--raw] [--summary] [--realtime] [--chunk-ms 100]

The file must be PCM WAV with 16-bit samples (any rate, any channel count); it is sent as
PCM_S16LE at its own rate. Output: one JSON object per line, {"timestamp", "final", "results"[, "raw"]},
in the SPEC's time-step shape; with --summary a last line {"summary": {...}}.
Exit status: 0 ok, 1 stream error (gRPC status and auris error code on stderr), 2 usage.
"""
import argparse
import json
import os
import sys
import tempfile
import time
import wave

try:
    import grpc
    from grpc_tools import protoc
except ImportError as err:  # e.g. a pyenv or venv python3 without Debian's packages
    sys.exit(
        "stream-file.py needs grpcio and grpcio-tools (%s).\n"
        "Debian: apt install python3-grpcio python3-grpc-tools and run it with /usr/bin/python3;\n"
        "elsewhere: pip install grpcio grpcio-tools" % err
    )

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.join(HERE, "..", "proto")
PROTO_FILE = "audioanalysis/v1/audio_analysis.proto"


def load_stubs(proto_dir):
    """Generates audio_analysis_pb2(_grpc) from the proto file and imports them."""
    out = tempfile.mkdtemp(prefix="auris-stubs-")
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    rc = protoc.main(["protoc", "-I" + proto_dir, "-I" + include, "--python_out=" + out, "--grpc_python_out=" + out, PROTO_FILE])
    if rc != 0:
        sys.exit("protoc failed on %s" % os.path.join(proto_dir, PROTO_FILE))
    sys.path.insert(0, out)
    from audioanalysis.v1 import audio_analysis_pb2 as pb2  # noqa: E402
    from audioanalysis.v1 import audio_analysis_pb2_grpc as pb2_grpc  # noqa: E402
    return pb2, pb2_grpc


def requests(pb2, config, wav, chunk_frames, realtime):
    """The request stream: the config, then the audio in chunks (paced in real time if asked)."""
    yield pb2.AnalyzeRequest(config=config)
    rate = wav.getframerate()
    start = time.monotonic()
    sent = 0
    while True:
        data = wav.readframes(chunk_frames)
        if not data:
            return
        yield pb2.AnalyzeRequest(audio=data)
        sent += len(data) // (wav.getsampwidth() * wav.getnchannels())
        if realtime:
            delay = start + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def step_json(msg, models):
    """A StepResult as the SPEC's time-step JSON, keys in request order."""
    # final: False for a provisional result (sent early, 128 ms of lookahead), True for the step's final one
    out = {"timestamp": msg.timestamp, "final": msg.final, "results": {}}
    for m in models:
        if m in msg.results:
            r = msg.results[m]
            out["results"][m] = {"result": r.result, "confidence": r.confidence}
    if len(msg.raw) > 0:
        out["raw"] = {m: dict(msg.raw[m].values) for m in models if m in msg.raw}
    return out


def main():
    ap = argparse.ArgumentParser(description="Stream a 16-bit PCM WAV file to auris over gRPC.")
    ap.add_argument("file")
    ap.add_argument("--grpc", default=os.environ.get("AURIS_GRPC_ADDRESS", "127.0.0.1:50051"))
    ap.add_argument("--api-key", default=os.environ.get("AURIS_API_KEY"))
    ap.add_argument("--models", default="speech,arousal,gender")
    ap.add_argument("--output-period", type=int, default=1024)
    ap.add_argument("--channel", type=int, default=0)
    ap.add_argument("--volume-threshold", type=float)
    ap.add_argument("--raw", action="store_true")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--realtime", action="store_true", help="send the audio at its real pace")
    ap.add_argument("--chunk-ms", type=float, default=100)
    ap.add_argument("--num-speakers", type=int, default=0, help="the speakers model: number of speakers, 1..20 (0: estimated)")
    ap.add_argument("--max-speakers", type=int, default=0, help="the speakers model: at most this many, 1..20 (0: the model's default)")
    ap.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR)
    args = ap.parse_args()
    if not args.api_key:
        ap.error("an API key is required: --api-key or $AURIS_API_KEY")

    pb2, pb2_grpc = load_stubs(os.path.abspath(args.proto_dir))
    try:
        wav = wave.open(args.file, "rb")
    except (wave.Error, EOFError) as err:
        ap.error("%s is not a PCM WAV file (%s); convert it first, e.g. sox in.mp3 -b 16 out.wav, "
                 "or use `auris stream`, which reads MP3, FLAC, Ogg and WAV" % (args.file, err))
    except OSError as err:
        ap.error("cannot open %s: %s" % (args.file, err.strerror or err))
    if wav.getsampwidth() != 2 or wav.getcomptype() != "NONE":
        ap.error("%s: only 16-bit PCM WAV files are supported by this example" % args.file)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    config = pb2.StreamConfig(
        models=models,
        output_period=args.output_period,
        include_raw_values=args.raw,
        include_summary=args.summary,
        sample_rate=wav.getframerate(),
        encoding=pb2.PCM_S16LE,
        channels=wav.getnchannels(),
        channel=args.channel,
        stream_id="py-" + os.path.basename(args.file),
        num_speakers=args.num_speakers,
        max_speakers=args.max_speakers,
    )
    if args.volume_threshold is not None:
        config.volume_threshold = args.volume_threshold
    chunk_frames = max(1, int(wav.getframerate() * args.chunk_ms / 1000))

    with grpc.insecure_channel(args.grpc) as channel:
        stub = pb2_grpc.AudioAnalysisStub(channel)
        call = stub.Analyze(requests(pb2, config, wav, chunk_frames, args.realtime), metadata=[("x-api-key", args.api_key)])
        try:
            for msg in call:
                if msg.HasField("summary"):
                    s = {m: dict(msg.summary.models[m].fractions) for m in models if m in msg.summary.models}
                    print(json.dumps({"summary": s}), flush=True)
                else:
                    print(json.dumps(step_json(msg, models)), flush=True)
        except grpc.RpcError as e:
            code = dict(e.trailing_metadata() or ()).get("auris-error-code", e.code().name)
            print("auris: error [%s]: %s" % (code, e.details()), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
