// Replay driver for the fuzz target (fuzz_frontend.cc) without libFuzzer, so it builds with
// plain g++ + ASan/UBSan (native/fuzz/build.sh --replay) and runs in CI (native/fuzz/smoke.sh).
//
//   replay_frontend [-seconds=S] [-seed=N] [-artifact=PATH] FILE_OR_DIR...
//
// Every file (folders are walked, sorted) goes through LLVMFuzzerTestOneInput once. With
// -seconds, the driver then keeps feeding mutants of those files -- truncations, bit flips,
// byte overwrites, chunk duplication -- from a fixed-seed generator until S seconds have
// passed: not coverage-guided like libFuzzer, but the same entry point, reproducible with the
// same -seed, and enough for a smoke run that cannot rot. Before each execution the input is
// kept in the -artifact file, removed again after a clean run, so a finding can be replayed
// (`replay_frontend ARTIFACT`).
//
//   replay_frontend -selftest=overflow|leak [-artifact=PATH]
//
// makes a deliberate heap overflow or leak instead, so a test can check that the sanitizers
// are really on and that the leak suppressions hide only what they name.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// The input under test is written to the artifact file (one pwrite) before each execution and
// the file removed after a clean run: whatever ends the process -- an ASan or UBSan report (each
// runtime has its own death path), an abort, a kill on timeout -- the input stays on disk.
int g_artifactFd = -1;
std::string g_artifact = "fuzz-crash.bin";

void keepInput(const Bytes& input) {
  if (g_artifactFd < 0) return;
  if (::pwrite(g_artifactFd, input.data(), input.size(), 0) != static_cast<ssize_t>(input.size()) ||
      ::ftruncate(g_artifactFd, static_cast<off_t>(input.size())) != 0) {
    std::perror("replay: artifact");
  }
}

void run(const Bytes& input) {
  keepInput(input);
  LLVMFuzzerTestOneInput(input.data(), input.size());
}

Bytes readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> collect(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      std::vector<fs::path> in;
      for (const auto& e : fs::recursive_directory_iterator(a))
        if (e.is_regular_file()) in.push_back(e.path());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else {
      files.emplace_back(a);
    }
  }
  return files;
}

// xorshift64*: small, fast, and the same sequence on every machine for a given seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

// One mutant of `seed`: a few random edits of the kinds that break audio parsers (lengths,
// counts and sizes in headers; truncated or repeated frames).
Bytes mutate(const Bytes& seed, Rng& rng) {
  Bytes m = seed;
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int i = 0; i < edits && !m.empty(); ++i) {
    // Header fields sit near the start: half the edits land in the first 64 bytes.
    const size_t pos = rng.below(2) ? rng.below(std::min<size_t>(64, m.size())) : rng.below(m.size());
    switch (rng.below(5)) {
      case 0: m[pos] ^= static_cast<uint8_t>(1u << rng.below(8)); break;
      case 1: m[pos] = static_cast<uint8_t>(rng.next()); break;
      case 2: {  // an "interesting" little-endian 32-bit value (0, -1, 2^31, a small count)
        static const uint32_t kValues[] = {0u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 1u, 2u, 0x10000u};
        const uint32_t v = kValues[rng.below(std::size(kValues))];
        for (size_t b = 0; b < 4 && pos + b < m.size(); ++b) m[pos + b] = static_cast<uint8_t>(v >> (8 * b));
        break;
      }
      case 3: m.resize(pos); break;  // truncation
      default: {                     // repeat a chunk (duplicated pages/frames)
        const size_t len = 1 + rng.below(std::min<size_t>(512, m.size() - pos));
        Bytes chunk(m.begin() + pos, m.begin() + pos + len);
        m.insert(m.begin() + rng.below(m.size() + 1), chunk.begin(), chunk.end());
      }
    }
  }
  return m;
}

// The sanitizer canaries of -selftest; each must end the process with a report.
int selftest(const std::string& kind) {
  static const Bytes canary(16, 0);
  if (kind == "overflow") {
    keepInput(canary);
    static volatile size_t size = 16;  // not a constant, so that ASan (not UBSan) reports it
    uint8_t* p = new uint8_t[size];
    const uint8_t v = static_cast<volatile uint8_t*>(p)[size];  // heap-buffer-overflow
    delete[] p;
    return v;
  }
  if (kind == "leak") {
    // Never freed and no pointer kept (volatile, so the allocation is not optimised away):
    // LeakSanitizer reports it at exit.
    static void* volatile lost;
    for (int i = 0; i < 4; ++i) lost = std::malloc(4096);
    lost = nullptr;
    return 0;
  }
  std::fprintf(stderr, "replay: unknown -selftest=%s\n", kind.c_str());
  return 2;
}

bool flag(const char* arg, const char* name, std::string& value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  value = arg + n;
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  double seconds = 0;
  uint64_t seedValue = 1;
  std::vector<std::string> paths;
  std::string selftestKind;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (flag(argv[i], "-seconds=", v)) seconds = std::atof(v.c_str());
    else if (flag(argv[i], "-seed=", v)) seedValue = std::strtoull(v.c_str(), nullptr, 10);
    else if (flag(argv[i], "-artifact=", v)) g_artifact = v;
    else if (flag(argv[i], "-selftest=", v)) selftestKind = v;
    else paths.emplace_back(argv[i]);
  }
  g_artifactFd = ::open(g_artifact.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (g_artifactFd < 0) std::perror("replay: artifact");
  if (!selftestKind.empty()) return selftest(selftestKind);

  std::vector<Bytes> seeds;
  for (const auto& p : collect(paths)) seeds.push_back(readFile(p));
  if (seeds.empty()) {
    std::fprintf(stderr, "replay: no input files\n");
    return 2;
  }
  for (const auto& s : seeds) run(s);

  size_t mutants = 0;
  Rng rng{seedValue * 0x9E3779B97F4A7C15ULL + 1};
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (seconds > 0 && std::chrono::steady_clock::now() < until) {
    run(mutate(seeds[rng.below(seeds.size())], rng));
    ++mutants;
  }
  ::close(g_artifactFd);
  ::unlink(g_artifact.c_str());  // nothing failed: no artifact
  std::printf("replay: files=%zu mutants=%zu seed=%llu\n", seeds.size(), mutants,
              static_cast<unsigned long long>(seedValue));
  return 0;
}
