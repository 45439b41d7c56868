// StagedDir.h — a package directory written beside its final path and renamed into place only
// when complete, so a failed or interrupted compile leaves nothing half-written.
//
// `tgc compile -o out/m.tgpkg` writes into `out/.m.tgpkg.tgc-tmp-<pid>-<random>` and, on success,
// renames it to `out/m.tgpkg` (an older package there is moved aside first and removed after).
// On failure, and on SIGINT/SIGTERM (llvm::sys::SetInterruptFunction), the staging directory is
// removed; a SIGKILL can leave one, which a later compile to the same path removes once its
// process is gone and it has not been written for ten minutes. The final path is checked up
// front and again before the rename: an existing file, a symbolic link, or a non-empty directory
// that is not a tgc package is refused and left alone.
#ifndef TGC_CODEGEN_COMMON_STAGEDDIR_H
#define TGC_CODEGEN_COMMON_STAGEDDIR_H

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace tgc::codegen {

class StagedDir {
public:
  /// A fresh, empty staging directory beside `finalDir` (created), after checking that
  /// `finalDir` may be replaced and removing stale staging directories of dead compiles.
  /// (Trailing slashes of `finalDir` are ignored.)
  static llvm::Expected<std::unique_ptr<StagedDir>> create(const std::string &finalDir);
  /// Removes the staging directory unless it was published.
  ~StagedDir();
  StagedDir(const StagedDir &) = delete;
  StagedDir &operator=(const StagedDir &) = delete;

  /// Where to write the package.
  const std::string &path() const { return stage_; }
  /// Renames the staging directory to the final path (replacing an older package there).
  llvm::Error publish();

private:
  StagedDir(std::string finalDir, std::string stage);
  std::string final_, stage_;
  bool published_ = false;
};

} // namespace tgc::codegen

#endif // TGC_CODEGEN_COMMON_STAGEDDIR_H
