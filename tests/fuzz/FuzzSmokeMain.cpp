// FuzzSmokeMain.cpp — a main() for a libFuzzer harness built without libFuzzer (CI's normal
// configuration): each file named on the command line is replayed, then `TGC_FUZZ_SMOKE_RUNS`
// (default 300) inputs are drawn from a fixed seed — hostile fragments (line breaks, comment and
// string terminators, trigraphs, U+2028, NUL, keywords, tgc's own identifiers, long runs) and
// random bytes, joined into fields by the harness's 0xFF separator. The long, coverage-guided
// runs under ASan/UBSan are tools/fuzz's (docs/hardening.md).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::string b((std::istreambuf_iterator<char>(in)), {});
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(b.data()), b.size());
  }
  const char *env = std::getenv("TGC_FUZZ_SMOKE_RUNS");
  const int runs = env ? std::atoi(env) : 300;
  const std::vector<std::string> fragments = {
      "\n", "\r", "\r\n", "\n#include <cstdlib>\nstatic int planted = system(\"true\");\n",
      "*/", "/*", "//", "\\", "\\\n", "??/", "??=", "??'", "\"", "'", "\xe2\x80\xa8",
      "\xe2\x80\xa9", "\xc2\x85", std::string(1, '\0'), "\t", "\x1b[31m", "%", "%0A", "int",
      "return", "class", "tgk_0_cast", "arg_0", "out0", "args", "extern \"C\"", "}", "{", ";",
      std::string(300, 'x'), std::string(70000, 'y'), "#", "\v", "\f", "\xff"};
  std::mt19937 rng(20261127);
  for (int r = 0; r < runs; ++r) {
    std::string in;
    const int parts = 1 + (int)(rng() % 60);
    for (int p = 0; p < parts; ++p) {
      const unsigned k = rng() % (fragments.size() + 4);
      if (k < fragments.size())
        in += fragments[k];
      else
        for (int b = (int)(rng() % 8); b >= 0; --b)
          in += (char)(rng() & 0xff);
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(in.data()), in.size());
  }
  std::printf("%d inputs replayed, %d drawn: no finding\n", argc - 1, runs);
  return 0;
}
