// StagedDir.cpp — write a package beside its final path, publish it by rename (StagedDir.h).
#include "codegen/common/StagedDir.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"

#include "llvm/ADT/StringExtras.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <set>
#include <vector>
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

/// `.name.tgc-tmp-` for `dir/name`: the prefix of its staging directories; the older package
/// waits at `.name.tgc-old-<pid>` while the new one is renamed into place.
std::string stagePrefix(const std::string &finalDir) {
  return "." + llvm::sys::path::filename(finalDir).str() + ".tgc-tmp-";
}
std::string oldPrefix(const std::string &finalDir) {
  return "." + llvm::sys::path::filename(finalDir).str() + ".tgc-old-";
}

std::string parentOf(const std::string &finalDir) {
  llvm::StringRef p = llvm::sys::path::parent_path(finalDir);
  return p.empty() ? "." : p.str();
}

/// The pid in `<prefix><pid>` or `<prefix><pid>-<letters and digits>`; -1 for any other name.
long pidAfter(llvm::StringRef name, llvm::StringRef prefix) {
  if (!name.startswith(prefix))
    return -1;
  llvm::StringRef rest = name.substr(prefix.size()), digits = rest.take_while(llvm::isDigit);
  llvm::StringRef tail = rest.drop_front(digits.size());
  if (digits.empty() || digits.size() > 9 ||
      !(tail.empty() || (tail.startswith("-") && tail.size() > 1 &&
                         llvm::all_of(tail.drop_front(), llvm::isAlnum))))
    return -1;
  return std::strtol(digits.str().c_str(), nullptr, 10);
}

/// Whether the staging or old directory `path` of process `pid` was left by a compile that is
/// gone: the process no longer runs here, and nothing was written to it for ten minutes (a
/// compile in another PID namespace or on another host sharing the folder keeps writing).
bool abandoned(const std::string &path, long pid) {
  if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
    return false;
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st))
    return false;
  const auto age = std::chrono::system_clock::now() - st.getLastModificationTime();
  return age > std::chrono::minutes(10);
}

/// Cleans up after compiles of `finalDir` that were killed: a package moved aside for a publish
/// that never finished goes back to `finalDir` when nothing is there; abandoned staging
/// directories are removed.
void sweepStale(const std::string &finalDir) {
  namespace fs = llvm::sys::fs;
  const std::string parent = parentOf(finalDir);
  std::error_code ec;
  std::vector<std::string> stale;
  for (fs::directory_iterator it(parent, ec), end; it != end && !ec; it.increment(ec)) {
    const llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (long pid = pidAfter(name, oldPrefix(finalDir)); pid > 0 && abandoned(it->path(), pid)) {
      if (!fs::exists(finalDir))
        fs::rename(it->path(), finalDir);
    } else if (long pid = pidAfter(name, stagePrefix(finalDir));
               pid > 0 && abandoned(it->path(), pid)) {
      stale.push_back(it->path());
    }
  }
  for (const std::string &d : stale)
    fs::remove_directories(d);
}

/// Refuses to replace `finalDir` unless it is absent, an empty directory or a tgc package (a
/// directory with plan.pb), and never through a symbolic link.
llvm::Error checkReplaceable(const std::string &finalDir) {
  namespace fs = llvm::sys::fs;
  fs::file_status st;
  if (fs::status(finalDir, st, /*follow=*/false))
    return llvm::Error::success(); // absent
  if (fs::is_symlink_file(st))
    return error("'" + finalDir + "' is a symbolic link; not replacing it");
  if (!fs::is_directory(st))
    return error("'" + finalDir + "' exists and is not a directory");
  std::error_code ec;
  const bool empty = fs::directory_iterator(finalDir, ec) == fs::directory_iterator();
  if (!empty && !fs::exists(finalDir + "/plan.pb"))
    return error("'" + finalDir + "' exists and is not a tgc package; not replacing it");
  return llvm::Error::success();
}

} // namespace

StagedDir::StagedDir(std::string finalDir, std::string stage)
    : final_(std::move(finalDir)), stage_(std::move(stage)) {}

llvm::Expected<std::unique_ptr<StagedDir>> StagedDir::create(const std::string &path) {
  std::string finalDir = path;
  while (finalDir.size() > 1 && finalDir.back() == '/') // "out/m.tgpkg/" is "out/m.tgpkg"
    finalDir.pop_back();
  if (finalDir.empty() || finalDir == "/" || llvm::sys::path::filename(finalDir) == "." ||
      llvm::sys::path::filename(finalDir) == "..")
    return error("'" + path + "' cannot be a package directory");
  namespace fs = llvm::sys::fs;
  const std::string parent = parentOf(finalDir);
  if (auto ec = fs::create_directories(parent))
    return error("cannot create '" + parent + "': " + ec.message());
  sweepStale(finalDir);
  if (auto e = checkReplaceable(finalDir))
    return std::move(e);
  llvm::SmallString<256> stage;
  // Absolute: createUniqueDirectory puts a relative model under the system temp directory,
  // not beside the package (a relative -o then failed, or staged on another file system).
  llvm::SmallString<256> model(parent + "/" + stagePrefix(finalDir) + std::to_string(getpid()));
  if (auto ec = fs::make_absolute(model))
    return error("cannot resolve '" + parent + "': " + ec.message());
  if (auto ec = fs::createUniqueDirectory(model, stage)) // appends "-" and random letters
    return error("cannot create a staging directory beside '" + finalDir + "': " + ec.message());
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
  // Checked again: the path may have changed during the compile.
  if (auto e = checkReplaceable(final_))
    return e;
  // From here an interrupt leaves the complete new package in place rather than deleting it;
  // an interrupt between the two renames leaves the older package at .<name>.tgc-old-<pid>,
  // which the next compile to this path puts back if nothing took its place.
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    live().erase(stage_);
  }
  std::string old;
  if (fs::exists(final_)) {
    old = parentOf(final_) + "/" + oldPrefix(final_) + std::to_string(getpid());
    fs::remove_directories(old); // an earlier publish of this process that failed half-way
    if (auto ec = fs::rename(final_, old))
      return error("cannot move the older package '" + final_ + "' aside: " + ec.message());
  }
  if (auto ec = fs::rename(stage_, final_)) {
    if (!old.empty() && fs::rename(old, final_))
      return error("cannot rename the new package into '" + final_ + "' (" + ec.message() +
                   "), nor put the older one back: it is at '" + old + "'");
    return error("cannot rename the new package into '" + final_ + "': " + ec.message());
  }
  published_ = true;
  if (!old.empty())
    fs::remove_directories(old);
  return llvm::Error::success();
}

} // namespace tgc::codegen
