// What the backends share in lowering an Apple .metallib kernel (its AIR)
// for bronze's Metal runtime through LLVM: each air.* intrinsic as a C++
// function over bronze_metal.h (built by the backend's compiler with the
// entry, so AIR computes as compiled Metal source does) and an IR adapter
// that calls it; the function constants set in the module; a thunk that
// takes the kernel's arguments from the entry; and the module linked,
// checked, optimized and emitted for the backend's target machine.
// backends/cpu/air and backends/cuda/air add the target, the entry and how
// the result is built.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "jit/llvm_api.hpp"

namespace bronze::backends {

// Why lowering would refuse the function: the first intrinsic the runtime
// lacks or attribute bronze does not know (or what the reflection found),
// "" when nothing.
std::string air_unsupported(const air::AirFunction& r);

// A kernel's module read and bound to bronze's runtime: its air.*
// declarations renamed to the adapters, its function constants given.
class AirModule {
 public:
  // Throws NotSupportedError naming what the runtime lacks, ValueError for
  // a constant without a value it needs or a module LLVM rejects.
  AirModule(const air::Function& f, const air::AirFunction& r,
            const std::vector<std::pair<std::string, std::string>>& constants);
  const jit::llvm::Api& api;
  jit::llvm::Context ctx;
  std::unique_ptr<jit::llvm::Module> module;
  // The runtime functions, C++ for the entry's unit (inside namespace
  // bronze_msl, after air_entry_prelude()).
  std::string functions;
  // The module as IR text, edited, read back (a backend's address spaces).
  void edit(const std::function<std::string(std::string)>& rewrite);
  // For a target without static constructors (NVPTX): the module's
  // (Apple's, which copy function constants into variables the kernel
  // reads) run by each thread before the kernel instead. Where the
  // constants are given, LLVM folds them away as it folds constructors.
  void run_initializers_in_thunk();
  // IR a backend adds beside the thunk, linked with it (the CPU's row_thunk_ir).
  std::string thunk_extra;
  // Links the thunk and the adapters, sets the target, checks the IR, runs
  // LLVM's O2 and emits the module (kObjectFile, kAssemblyFile).
  std::string emit(jit::llvm::LLVMTargetMachineRef tm, const std::string& triple, int file_type, const std::string& target_name);
 private:
  const air::Function& f_;
  const air::AirFunction& r_;
  std::string adapters_;
  std::vector<std::string> initializers_;
};

// bronze_air_row(buffers, positions, tg, count, first): the thunk for
// `count` threads of a row of a group (x = 0 .. count - 1), `positions` the
// first one's and `first` its index in the group; the positions that
// change along x are made in the loop. The kernel inlines into the loop,
// which LLVM may vectorize (a kernel without barriers or collectives).
std::string row_thunk_ir(const KernelInfo& k);

// C++ the runtime functions and entries use, for either compiler (inside
// namespace bronze_msl): AIR's conversions, positions as three words.
std::string air_entry_prelude();

// An entry's parts: per attribute parameter, a line filling its three words
// of `pos` from bronze_rt::ids `id`; the threadgroup buffers' slots.
struct AirEntryParts {
  std::string positions;
  int position_words = 1;
  int tg_slots = 0;
};
AirEntryParts air_entry_parts(const KernelInfo& k);

}  // namespace bronze::backends
