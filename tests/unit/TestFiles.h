// TestFiles.h — whole-file reads and writes for the unit tests (package files, plans, caches).
#ifndef TGC_TESTS_UNIT_TESTFILES_H
#define TGC_TESTS_UNIT_TESTFILES_H

#include <fstream>
#include <iterator>
#include <string>

namespace tgc::test {

/// The bytes of `path` ("" when it cannot be read).
inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Replaces `path` with `data`.
inline void writeFile(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

} // namespace tgc::test

#endif // TGC_TESTS_UNIT_TESTFILES_H
