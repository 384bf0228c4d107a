#!/usr/bin/env bash
# Builds the container image (Containerfile) and runs it, without any image registry. CI runs it
# after the npm tests (.ci/run); docs/deploy.md, "Container image".
#   1. the base image docker.io/library/debian:trixie-slim is made here from Debian's packages:
#      debootstrap --variant=minbase of Debian 13 plus the "slim" configuration of the official
#      image (no docs/man/locales, no apt translations, gzip'd indexes, apt cache cleaned,
#      trixie-updates and trixie-security in the sources), imported with buildah;
#   2. `buildah build --pull=never` builds the image from the unchanged Containerfile, both
#      stages at once (--jobs 2);
#   3. the image runs `analyze` on the demo file (the results must name every model) and
#      `serve`, which must answer /readyz and its HEALTHCHECK and finish one job.
# Everything happens in a private buildah store in a temporary directory (in /dev/shm when it
# has room), removed on every exit path: nothing is left in /var/lib/containers, and an image
# already there is not used. `serve` listens on two free loopback ports.
# Network: Debian's archive and npm's registry only; transient failures are retried (debootstrap
# and the tools' apt-get 3 times, the whole build once more when its log shows a network error).
# Every failure exits non-zero naming the step; each phase's time is printed.
# Needs root (debootstrap, buildah) and the host's node (for the checks); installs debootstrap
# and buildah from Debian when missing (about 30 s). About 7 minutes from nothing on the shared
# 2-core development machine at load 7-8 (docs/deploy.md has the measured phases).
# Usage: bash scripts/image-test.sh
#   IMAGE_TEST_SAVE=/path/auris.tar  also writes the image there (docker-archive: `podman load
#                                    -i` / `docker load -i`)
#   DEBIAN_MIRROR=http://...         another Debian mirror (and DEBIAN_SECURITY_MIRROR)
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=docker.io/library/debian:trixie-slim
IMAGE=localhost/auris:image-test
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
API_KEY=image-test-key
T0=$SECONDS
step() { echo "[image-test] $(date +%T) $*" >&2; }
fail() { echo "[image-test] FAILED: $*" >&2; exit 1; }
# `phase_start <name> <what it does>` ... `phase_end`: each phase's seconds, summed up at the end.
phase_start() { PHASE=$1 PHASE_T=$SECONDS; step "$1: $2"; }
phase_end() { step "$PHASE: done in $((SECONDS - PHASE_T)) s"; TIMES+=("$PHASE $((SECONDS - PHASE_T)) s,"); }
TIMES=()
# `retry <attempts> <what> <command...>`: waits 15 s, 30 s, ... between attempts.
retry() {
  local n=$1 what=$2 i; shift 2
  for ((i = 1; ; i++)); do
    "$@" && return 0
    [ "$i" -lt "$n" ] || return 1
    step "$what failed (attempt $i of $n), retrying in $((15 * i)) s"
    sleep $((15 * i))
  done
}

[ "$(id -u)" -eq 0 ] || fail "must run as root (debootstrap and buildah need it)"
command -v node >/dev/null || fail "the host's node is needed for the checks"
missing=()
for p in debootstrap buildah; do command -v "$p" >/dev/null || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  phase_start tools "installing ${missing[*]} from Debian"
  apt_tools() {
    apt-get update -qq -o Acquire::Retries=3 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o Acquire::Retries=3 "${missing[@]}" >&2
  }
  retry 3 "apt-get install ${missing[*]}" apt_tools || fail "installing ${missing[*]} with apt-get"
  phase_end
fi

# A private store: concurrent or earlier runs, and images of the machine's own, play no part.
# It lives in memory (/dev/shm) when 12 GB are free there: the build writes and deletes ~3 GB of
# small files, slow on a disk mounted with online discard; IMAGE_TEST_TMPDIR chooses instead.
TMPBASE=${IMAGE_TEST_TMPDIR:-}
if [ -z "$TMPBASE" ]; then
  TMPBASE=/var/tmp
  shm_free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
  [ "${shm_free:-0}" -ge $((12 * 1024 * 1024)) ] && TMPBASE=/dev/shm
fi
WORK=$(mktemp -d "$TMPBASE/auris-image-test.XXXXXX")
B=(buildah --root "$WORK/storage" --runroot "$WORK/run")
SERVE_PID=""
cleanup() {
  local rc=$?
  set +e; trap - ERR  # every clean-up step runs, whatever the one before did
  if [ -n "$SERVE_PID" ]; then
    kill -TERM -- "-$SERVE_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5; do kill -0 -- "-$SERVE_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
  fi
  # The store goes whole: unmount what is mounted, then remove the directory (faster than rmi).
  "${B[@]}" rm --all >/dev/null 2>&1
  "${B[@]}" umount --all >/dev/null 2>&1
  # Whatever a killed debootstrap or buildah left mounted under $WORK, deepest first.
  findmnt -rn -o TARGET | grep -F "$WORK/" | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf "$WORK" 2>/dev/null || { sleep 2; rm -rf "$WORK" || echo "[image-test] could not remove $WORK" >&2; }
  [ ${#TIMES[@]} -eq 0 ] || step "phases: ${TIMES[*]} total $((SECONDS - T0)) s$([ "$rc" -eq 0 ] || echo ", FAILED")"
  exit "$rc"
}
trap 'echo "[image-test] FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. Base image from Debian packages: what `docker pull debian:trixie-slim` gives, made the way
#    the official image is (debuerreotype: debootstrap minbase, then its minimizing and slim
#    configuration), in our own words.
phase_start debootstrap "Debian 13 trixie, minbase, from $MIRROR"
mkdir -p "$WORK/debs"
bootstrap() {
  rm -rf "$WORK/rootfs"
  # --cache-dir keeps what an attempt downloaded for the next one.
  timeout 600 debootstrap --variant=minbase --cache-dir="$WORK/debs" trixie "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -15 "$WORK/debootstrap.log" >&2; findmnt -rn -o TARGET | grep -F "$WORK/rootfs/" | sort -r | xargs -r umount -l; return 1; }
}
retry 3 debootstrap bootstrap || fail "debootstrap of trixie from $MIRROR (log above)"
phase_end

phase_start base "slim configuration, imported as $BASE"
R=$WORK/rootfs
rm -rf "$WORK/debs" "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/* "$R"/var/log/* "$R"/dev/* "$R"/proc/* "$R"/sys/*
cat >"$R/usr/sbin/policy-rc.d" <<'EOF'
#!/bin/sh
# No service starts during image builds.
exit 101
EOF
chmod 0755 "$R/usr/sbin/policy-rc.d"
echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
cat >"$R/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# slim: no documentation, manual pages or translations (the copyright files stay)
path-exclude /usr/share/doc/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
path-include /usr/share/doc/*/copyright
path-include /usr/share/locale/all_languages
path-include /usr/share/locale/locale.alias
EOF
find "$R/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
find "$R/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name all_languages -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
rm -rf "$R"/usr/share/{groff,info,linda,man}/* "$R"/usr/share/lintian/overrides/*
cat >"$R/etc/apt/apt.conf.d/docker-clean" <<'EOF'
// Downloaded packages and apt's binary caches are not kept in image layers.
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
echo 'Acquire::GzipIndexes "true";' >"$R/etc/apt/apt.conf.d/docker-gzip-indexes"
echo 'Acquire::Languages "none";' >"$R/etc/apt/apt.conf.d/docker-no-languages"
echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$R/etc/apt/apt.conf.d/docker-autoremove-suggests"
KEYRING=$(cd "$R" && ls usr/share/keyrings/debian-archive-keyring.pgp usr/share/keyrings/debian-archive-keyring.gpg 2>/dev/null | head -1)
[ -n "$KEYRING" ] || fail "the base has no /usr/share/keyrings/debian-archive-keyring.{pgp,gpg}"
rm -f "$R/etc/apt/sources.list"
cat >"$R/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie trixie-updates
Components: main
Signed-By: /$KEYRING

Types: deb
URIs: $SECURITY_MIRROR
Suites: trixie-security
Components: main
Signed-By: /$KEYRING
EOF
tar -C "$R" -cf "$WORK/rootfs.tar" . || fail "packing the root file system"
rm -rf "$R"
ctr=$("${B[@]}" from scratch)
"${B[@]}" add "$ctr" "$WORK/rootfs.tar" / >/dev/null || fail "adding the root file system to the base image"
"${B[@]}" config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
"${B[@]}" commit --quiet --rm "$ctr" "$BASE" >/dev/null || fail "importing the base image"
rm -f "$WORK/rootfs.tar"
phase_end

# 2. The image: the Containerfile as users build it. --format docker keeps HEALTHCHECK (the OCI
#    format has no such field); --jobs 2 runs the run-time stage's apt-get during the build
#    stage; --layers lets a retry reuse the steps that had finished. The host's CA bundle is the
#    build secret "ca": npm ci then trusts what the host trusts (an intercepting proxy's CA).
phase_start build "$IMAGE from Containerfile (buildah build --isolation chroot --pull=never --jobs 2)"
BUILD=("${B[@]}" build --isolation chroot --pull=never --format docker --layers --force-rm --jobs 2 -f Containerfile -t "$IMAGE")
[ -s /etc/ssl/certs/ca-certificates.crt ] && BUILD+=(--secret id=ca,src=/etc/ssl/certs/ca-certificates.crt)
build() {
  # Each line gets the time it was printed: the step summary below comes from them.
  timeout 1500 "${BUILD[@]}" . 2>&1 | while IFS= read -r l; do printf '%(%T)T %s\n' -1 "$l"; done >"$WORK/build.log"
}
transient='Failed to fetch|Temporary failure|Could not (connect|resolve)|Connection (timed out|reset|refused|failed)|Unable to fetch|Hash Sum mismatch|Mirror sync in progress|Unable to locate package|ECONNRESET|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|ECONNREFUSED|socket hang up|network request'
if ! build; then
  grep -qE "$transient" "$WORK/build.log" || { tail -40 "$WORK/build.log" >&2; fail "buildah build (not a network error, not retried)"; }
  grep -E "$transient" "$WORK/build.log" | tail -5 >&2
  step "buildah build failed on the network, retrying once in 30 s (finished steps are reused)"
  sleep 30
  build || { tail -40 "$WORK/build.log" >&2; fail "buildah build (twice)"; }
fi
# When each FROM/RUN step began and each step ended ("-->"), from the build's log.
grep -E '\] (STEP [0-9]+/[0-9]+: (FROM|RUN)|COMMIT)|^[0-9:]+ --> ' "$WORK/build.log" | cut -c1-110 | sed 's/^/[image-test]   /' >&2 || true
step "store $(du -sh "$WORK/storage" | cut -f1) in $TMPBASE"
"${B[@]}" inspect --type image --format '{{.Docker.Config.Healthcheck.Test}}' "$IMAGE" | grep -q readyz || fail "the image has no HEALTHCHECK"
[ "$("${B[@]}" inspect --type image --format '{{.Docker.Config.User}}' "$IMAGE")" = auris ] || fail "the image does not run as the auris user"
phase_end
if [ -n "${IMAGE_TEST_SAVE:-}" ]; then
  "${B[@]}" push --quiet "$IMAGE" "docker-archive:$IMAGE_TEST_SAVE:localhost/auris:latest" || fail "saving the image to $IMAGE_TEST_SAVE"
  step "image saved to $IMAGE_TEST_SAVE (podman load -i / docker load -i)"
fi

# 3. Run it. `buildah run --isolation chroot` needs no OCI runtime, cgroups or systemd (podman
# run fails in nested sandboxes: crun refuses hybrid cgroups and rlimits), and shares the host's
# network. It runs the image's ENTRYPOINT (read from the image) as its USER in its WORKDIR with
# its ENV, which is what `docker run` does; HOST is overridden to keep the ports on loopback.
phase_start run "analyze and serve in the image"
CTR=$("${B[@]}" from --pull=never "$IMAGE")
read -r -a ENTRYPOINT <<<"$("${B[@]}" inspect --type image --format '{{range .Docker.Config.Entrypoint}}{{.}} {{end}}' "$IMAGE")"
read -r -a HEALTHCHECK <<<"$("${B[@]}" inspect --type image --format '{{range .Docker.Config.Healthcheck.Test}}{{.}} {{end}}' "$IMAGE")"
[ "${ENTRYPOINT[*]}" = "node /app/dist/src/cli/main.js" ] || fail "unexpected ENTRYPOINT: ${ENTRYPOINT[*]}"
[ "${HEALTHCHECK[0]}" = CMD ] || fail "unexpected HEALTHCHECK: ${HEALTHCHECK[*]}"
RUN=("${B[@]}" run --isolation chroot)

# 3a. analyze on the demo file shipped in the image.
step "running: analyze test/fixtures/demo.flac"
timeout 300 "${RUN[@]}" "$CTR" -- "${ENTRYPOINT[@]}" analyze test/fixtures/demo.flac --models speech,arousal,gender,emotions --summary >"$WORK/envelope.json" 2>"$WORK/analyze.err" \
  || { cat "$WORK/analyze.err" >&2; fail "analyze in the image"; }
node -e '
  const env = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const channel = env.result.channels["0"];
  const steps = channel.time_series;
  for (const m of ["speech", "arousal", "gender", "emotions"]) if (!(m in steps[0].results)) throw new Error("no " + m + " in the results");
  if (!channel.summary) throw new Error("no summary");
  console.error("[image-test] analyze: " + steps.length + " steps, speech summary " + JSON.stringify(channel.summary.speech));
' "$WORK/envelope.json" || fail "analyze output"

# 3b. serve, answering /readyz, its own HEALTHCHECK command, and one job, on two loopback ports
# that were free a moment before (IMAGE_TEST_PORT picks them instead: it and the next one).
# (buildah run puts the image's VOLUME /data over any -v for it, so the volume is the
# container's own; it persists between runs of the container and is listed afterwards.)
if [ -n "${IMAGE_TEST_PORT:-}" ]; then
  PORT=$IMAGE_TEST_PORT GRPC_PORT=$((IMAGE_TEST_PORT + 1))
else
  read -r PORT GRPC_PORT < <(node -e '
    const net = require("node:net");
    const servers = [0, 1].map(() => net.createServer());
    Promise.all(servers.map((s) => new Promise((ok, ko) => s.once("error", ko).listen(0, "127.0.0.1", ok))))
      .then(() => { console.log(servers.map((s) => s.address().port).join(" ")); servers.forEach((s) => s.close()); });
  ') || fail "finding two free loopback ports"
fi
step "running: serve on 127.0.0.1:$PORT (gRPC $GRPC_PORT)"
# Its own process group, so that cleanup ends it and anything it started.
setsid "${RUN[@]}" -e HOST=127.0.0.1 -e PORT="$PORT" -e GRPC_PORT="$GRPC_PORT" -e API_KEYS="$API_KEY:image-test:image-test" \
  "$CTR" -- "${ENTRYPOINT[@]}" serve >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
node scripts/image-test-job.js "http://127.0.0.1:$PORT" "$API_KEY" test/fixtures/demo.flac \
  || { tail -30 "$WORK/serve.log" >&2; fail "serve in the image"; }
kill -0 "$SERVE_PID" 2>/dev/null || { tail -30 "$WORK/serve.log" >&2; fail "serve in the image exited (another process answered on $PORT?)"; }
# The HEALTHCHECK's own command (node -e "fetch(...)") inside the image, against the server.
timeout 60 "${RUN[@]}" -e PORT="$PORT" "$CTR" -- "${HEALTHCHECK[@]:1:2}" "$("${B[@]}" inspect --type image --format '{{index .Docker.Config.Healthcheck.Test 3}}' "$IMAGE")" \
  || fail "the HEALTHCHECK command fails against the running server"
# (buildah run does not pass SIGTERM on to the process: graceful shutdown is tested without the image.)
kill -TERM -- "-$SERVE_PID" 2>/dev/null || true
wait "$SERVE_PID" 2>/dev/null || true
SERVE_PID=""
data=$(timeout 60 "${RUN[@]}" "$CTR" -- ls /data/jobs) || fail "no /data/jobs in the container"
[ -n "$data" ] || fail "serve kept no job under /data/jobs"
phase_end
step "ok: $("${B[@]}" inspect --type image --format '{{.FromImageID}}' "$IMAGE" | cut -c1-12) built and run"
