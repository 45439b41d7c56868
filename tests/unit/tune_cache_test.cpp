// tune_cache_test.cpp — the GEMM tuning cache's file (runtime/cuda/TuneCache.h): records round
// trip (protobuf text format), malformed files are refused saying what is wrong (the line or
// the step; never a crash), a record with
// another key is not used, the cache directory follows $TGC_TUNE_CACHE / $TGC_CACHE_DIR / $HOME,
// and a failed write says why. The session's use of it (choices applied on a second load) is
// checked on a GPU by cuda_runtime_test.
#include "runtime/cuda/TuneCache.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace tgc::cuda;

namespace {

const std::string kLt = "lt:" + std::string(128, 'a');

TuneRecord sample() {
  TuneRecord r;
  r.key = 0x0123456789abcdefull;
  r.choices = {{3, "cutlass:cutlass64x64x128/s2"}, {5, "mma:64x32x4"}, {9, kLt}, {12, "none"}};
  return r;
}

std::string tempDir() {
  char tmpl[] = "/tmp/tgc_tune_cache_XXXXXX";
  const char *d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

TEST(TuneCache, RecordsRoundTrip) {
  const TuneRecord r = sample();
  const std::string text = formatTuneRecord(r);
  EXPECT_EQ(text.rfind("# tgc GEMM tuning cache", 0), 0u) << text;
  EXPECT_NE(text.find("version: 2\nkey: 81985529216486895\nsteps {\n  index: 3\n  choice: "
                      "\"cutlass:cutlass64x64x128/s2\"\n}\n"),
            std::string::npos)
      << text;
  TuneRecord back;
  std::string why;
  ASSERT_TRUE(parseTuneRecord(text, back, why)) << why;
  EXPECT_EQ(back.key, r.key);
  EXPECT_EQ(back.choices, r.choices);
}

TEST(TuneCache, MalformedRecordsAreRefusedNamingTheLine) {
  const std::string head = "version: 2\nkey: 81985529216486895\n";
  auto step = [](const std::string &index, const std::string &choice) {
    return "steps { index: " + index + " choice: \"" + choice + "\" }\n";
  };
  struct Case {
    const char *name;
    std::string text, where;
  } cases[] = {
      {"empty", "", "empty"},
      {"the old line format", "tgc tune cache v1\nkey 0123456789abcdef\n", "line 1"},
      {"another version", "version: 1\nkey: 1\n", "version 1, this runtime reads 2"},
      {"no version", "key: 1\n", "version 0"},
      {"no key", "version: 2\n", "no key"},
      {"key not a number", "version: 2\nkey: abc\n", "line 2"},
      {"key twice", head + "key: 2\n", "line 3"},
      {"negative key", "version: 2\nkey: -1\n", "line 2"},
      {"unknown choice", head + step("1", "tensorrt:fast"), "steps[0]"},
      {"choice with a space", head + step("1", "cutlass:a b"), "steps[0]"},
      {"short cuBLASLt algorithm", head + step("1", "lt:abcd"), "steps[0]"},
      {"not hex", head + step("1", "lt:" + std::string(128, 'g')), "steps[0]"},
      {"negative step", head + step("-1", "none"), "steps[0]"},
      {"steps out of order", head + step("4", "none") + step("2", "none"), "steps[1]"},
      {"repeated step", head + step("4", "none") + step("4", "none"), "steps[1]"},
      {"unknown field", head + "graph: 12.5\n", "line 3"},
      {"unterminated", head + "steps { index: 1\n", "line 4"},
      {"binary junk", std::string("\x01\x02\xff\xfe", 4), "line 1"},
  };
  for (const Case &c : cases) {
    TuneRecord r;
    std::string why;
    EXPECT_FALSE(parseTuneRecord(c.text, r, why)) << c.name;
    EXPECT_NE(why.find(c.where), std::string::npos) << c.name << ": " << why;
  }
}

TEST(TuneCache, FilesRoundTripAndOtherKeysAreNotUsed) {
  const std::string dir = tempDir() + "/nested/tune";
  const TuneRecord r = sample();
  const std::string path = dir + "/x.txt";
  std::string why;
  TuneRecord got;
  EXPECT_FALSE(readTuneRecord(path, r.key, got, why));
  EXPECT_EQ(why, "none");
  ASSERT_TRUE(writeTuneRecord(path, r, why)) << why; // creates the directories
  ASSERT_TRUE(readTuneRecord(path, r.key, got, why)) << why;
  EXPECT_EQ(got.choices, r.choices);
  EXPECT_FALSE(readTuneRecord(path, r.key + 1, got, why));
  EXPECT_NE(why.find("is not this package's"), std::string::npos) << why;
  std::ofstream(path) << "garbage\n";
  EXPECT_FALSE(readTuneRecord(path, r.key, got, why));
  EXPECT_NE(why.find("no field named \"garbage\""), std::string::npos) << why;
  // The write is atomic (a temporary beside it, then a rename): nothing else is left there.
  ASSERT_TRUE(writeTuneRecord(path, r, why)) << why;
  int entries = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    entries += e.path().filename() == "x.txt" ? 1 : 100;
  EXPECT_EQ(entries, 1);
  // A directory or an oversized file in the record's place is refused before it is read.
  EXPECT_FALSE(readTuneRecord(dir, r.key, got, why));
  EXPECT_EQ(why, "not a regular file");
  std::ofstream(path) << std::string((1 << 20) + 1, 'x');
  EXPECT_FALSE(readTuneRecord(path, r.key, got, why));
  EXPECT_EQ(why, "larger than 1 MiB");
  // A directory that cannot be created: the write fails with the reason.
  EXPECT_FALSE(writeTuneRecord("/proc/tgc/x.txt", r, why));
  EXPECT_NE(why.find("/proc/tgc"), std::string::npos) << why;
}

TEST(TuneCache, PathFollowsTheEnvironment) {
  const char *vars[] = {"TGC_TUNE_CACHE", "TGC_CACHE_DIR", "HOME"};
  std::string saved[3];
  bool had[3];
  for (int i = 0; i < 3; ++i)
    if ((had[i] = std::getenv(vars[i]) != nullptr))
      saved[i] = std::getenv(vars[i]);
  setenv("HOME", "/home/u", 1);
  unsetenv("TGC_TUNE_CACHE");
  unsetenv("TGC_CACHE_DIR");
  std::string why;
  EXPECT_EQ(tuneCachePath(0xabc, why), "/home/u/.cache/tgc/tune/0000000000000abc.txt");
  setenv("TGC_CACHE_DIR", "/c", 1);
  EXPECT_EQ(tuneCachePath(0xabc, why), "/c/tune/0000000000000abc.txt");
  setenv("TGC_TUNE_CACHE", "/t", 1);
  EXPECT_EQ(tuneCachePath(0xabc, why), "/t/0000000000000abc.txt");
  setenv("TGC_TUNE_CACHE", "off", 1);
  EXPECT_EQ(tuneCachePath(0xabc, why), "");
  EXPECT_NE(why.find("off"), std::string::npos) << why;
  unsetenv("TGC_TUNE_CACHE");
  unsetenv("TGC_CACHE_DIR");
  unsetenv("HOME");
  EXPECT_EQ(tuneCachePath(0xabc, why), "");
  EXPECT_NE(why.find("no cache directory"), std::string::npos) << why;
  for (int i = 0; i < 3; ++i)
    had[i] ? setenv(vars[i], saved[i].c_str(), 1) : unsetenv(vars[i]);
}

} // namespace
