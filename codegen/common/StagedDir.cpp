// StagedDir.cpp — write a package beside its final path, publish it by rename (StagedDir.h).
#include "codegen/common/StagedDir.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <unistd.h>

namespace tgc::codegen {

namespace {

llvm::Error error(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Removes a package directory's files and the directory (packages are flat). Used from the
/// interrupt handler too, so it uses only opendir/readdir/unlink/rmdir.
void removeFlatDir(const char *dir) {
  if (DIR *d = opendir(dir)) {
    char path[4096];
    while (struct dirent *e = readdir(d)) {
      if (!std::strcmp(e->d_name, ".") || !std::strcmp(e->d_name, ".."))
        continue;
      if (std::snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
        unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/// Staging directories alive in this process, removed on SIGINT/SIGTERM.
std::mutex liveMutex;
std::set<std::string> &live() {
  static std::set<std::string> s;
  return s;
}
void removeLive() {
  for (const std::string &d : live()) // no lock: the interrupted thread may hold it
    removeFlatDir(d.c_str());
}

/// `.name.tgc-tmp-` for `dir/name`: the prefix of its staging directories.
std::string stagePrefix(const std::string &finalDir) {
  llvm::StringRef name = llvm::sys::path::filename(finalDir);
  return "." + name.str() + ".tgc-tmp-";
}

std::string parentOf(const std::string &finalDir) {
  llvm::StringRef p = llvm::sys::path::parent_path(finalDir);
  return p.empty() ? "." : p.str();
}

/// Removes staging directories of `finalDir` whose compile process no longer runs.
void sweepStale(const std::string &finalDir) {
  const std::string parent = parentOf(finalDir), prefix = stagePrefix(finalDir);
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(parent, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.startswith(prefix))
      continue;
    long pid = std::strtol(name.substr(prefix.size()).str().c_str(), nullptr, 10);
    if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      llvm::sys::fs::remove_directories(it->path());
  }
}

} // namespace

StagedDir::StagedDir(std::string finalDir, std::string stage)
    : final_(std::move(finalDir)), stage_(std::move(stage)) {}

llvm::Expected<std::unique_ptr<StagedDir>> StagedDir::create(const std::string &finalDir) {
  if (finalDir.empty())
    return error("no output path given");
  namespace fs = llvm::sys::fs;
  if (fs::is_directory(finalDir)) {
    std::error_code ec;
    const bool empty = fs::directory_iterator(finalDir, ec) == fs::directory_iterator();
    if (!empty && !fs::exists(finalDir + "/plan.pb"))
      return error("'" + finalDir + "' exists and is not a tgc package; not replacing it");
  } else if (fs::exists(finalDir)) {
    return error("'" + finalDir + "' exists and is not a directory");
  }
  const std::string parent = parentOf(finalDir);
  if (auto ec = fs::create_directories(parent))
    return error("cannot create '" + parent + "': " + ec.message());
  sweepStale(finalDir);
  llvm::SmallString<256> stage;
  const std::string model =
      parent + "/" + stagePrefix(finalDir) + std::to_string(getpid());
  if (auto ec = fs::createUniqueDirectory(model, stage))
    return error("cannot create a staging directory beside '" + finalDir + "': " + ec.message());
  // createUniqueDirectory appends "-" and random characters to the model.
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    static bool installed = (llvm::sys::SetInterruptFunction(removeLive), true);
    (void)installed;
    live().insert(stage.str().str());
  }
  return std::unique_ptr<StagedDir>(new StagedDir(finalDir, stage.str().str()));
}

StagedDir::~StagedDir() {
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    live().erase(stage_);
  }
  if (!published_)
    llvm::sys::fs::remove_directories(stage_);
}

llvm::Error StagedDir::publish() {
  namespace fs = llvm::sys::fs;
  std::string old;
  if (fs::exists(final_)) { // checked to be a package or empty in create()
    old = stage_ + ".old";
    if (auto ec = fs::rename(final_, old))
      return error("cannot move the older package '" + final_ + "' aside: " + ec.message());
  }
  if (auto ec = fs::rename(stage_, final_)) {
    if (!old.empty())
      fs::rename(old, final_);
    return error("cannot rename the new package into '" + final_ + "': " + ec.message());
  }
  published_ = true;
  if (!old.empty())
    fs::remove_directories(old);
  return llvm::Error::success();
}

} // namespace tgc::codegen
