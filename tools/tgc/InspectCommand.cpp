// InspectCommand.cpp — `tgc inspect`: a package's plan, kernels, arena and weights (a CUDA
// package's plan also where no GPU is usable).
#include "tools/tgc/Cli.h"

#include "runtime/cuda/CudaSession.h"

#include <iostream>

namespace tgc::cli {

Command addInspect(CLI::App &app) {
  auto pkg = std::make_shared<std::string>();
  auto *inspect = app.add_subcommand("inspect", "print a package's plan, kernels, arena and weights");
  inspect->add_option("package", *pkg, "package directory")->required();
  return {inspect, [pkg]() -> int {
            // A CUDA package on a machine without a usable GPU can still be inspected (its plan).
            if (cuda::isCudaPackage(*pkg)) {
              std::string why, arch;
              if (!cuda::cudaDeviceAvailable(why, arch)) {
                Status st;
                std::string text = cuda::describeCudaPackageWithoutGpu(*pkg, why, st);
                if (!st.ok)
                  return fail(st.message);
                std::cout << text;
                return 0;
              }
            }
            std::string err;
            auto session = loadSession(*pkg, 0, err);
            if (!session)
              return fail(err);
            std::cout << session->describe();
            return 0;
          }};
}

} // namespace tgc::cli
