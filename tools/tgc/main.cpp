// main.cpp — the tgc command line: compile, bisect, run, bench, inspect, ops, generate (one file
// each).
//
// A thin shell over the library: argument parsing (CLI11), then tgc::compile or tgc::Session.
// Exit codes: 0 success; 1 any error or a failed --check; CLI11's own codes (< 128) for bad
// arguments. Every error goes to stderr and names what is wrong.
#include "tools/tgc/Cli.h"

#include "runtime/Env.h"

#include <exception>
#include <string>

namespace {

const char *kExamples = R"(Examples:
  tgc compile model.onnx -o model.tgpkg --target=cpu
  tgc compile model.onnx -o model.tgpkg --input-shape input_ids=1x128 --dump-dir=dump/
  tgc compile model.onnx -o model.tgpkg --stats --disable-rules=MergeParallelLinears
  tgc bisect model.onnx --test-data model/test_data_set_0
  tgc run model.tgpkg --test-data model/test_data_set_0
  tgc bench model.tgpkg --iters 200
  tgc inspect model.tgpkg
  tgc compile decoder.onnx -o gen.tgpkg --decode --max-seq 128
  tgc generate gen.tgpkg --prompt-ids 1,2,3 --max-new-tokens 32 --json gen.json
)";

int tgcMain(int argc, char **argv) {
  using namespace tgc::cli;
  CLI::App app{"tgc — ahead-of-time tensor-graph compiler"};
  std::string footer = kExamples;
  footer += "\nEnvironment:\n";
  int n = 0;
  const tgc::EnvInfo *env = tgc::envTable(n);
  for (int i = 0; i < n; ++i)
    footer += "  " + std::string(env[i].name) + "  " + env[i].doc + "\n";
  app.footer(footer);
  app.require_subcommand(1);
  app.set_version_flag("--version", versionText(), "print tgc's version and what it was built with");
  const Command commands[] = {addCompile(app), addBisect(app), addRun(app), addBench(app),
                              addInspect(app), addOps(app), addGenerate(app)};
  CLI11_PARSE(app, argc, argv);
  for (const Command &c : commands)
    if (*c.app)
      return c.run();
  return fail("no subcommand");
}

} // namespace

// Library errors are values; anything thrown (std::filesystem, std::bad_alloc, ...) still ends
// as a message and exit code 1, never std::terminate.
int main(int argc, char **argv) {
  try {
    return tgcMain(argc, argv);
  } catch (const std::exception &e) {
    return tgc::cli::fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return tgc::cli::fail("internal error: unknown exception");
  }
}
