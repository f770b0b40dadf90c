// What Apple's compiler wrote about one AIR function, read from its module
// through LLVM: the kernel's parameters from `!air.kernel` (each argument's
// role, [[buffer(n)]] index, address space, access, type name and size, its
// Metal name), its function constants from `!air.function_constants`, the
// `air.*` intrinsics it calls and its threadgroup memory. That is a complete
// reflection, in bronze's vocabulary (KernelInfo), with no source to parse.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "air/metallib.hpp"
#include "bronze/shader.hpp"
#include "jit/llvm_api.hpp"

namespace bronze::air {

struct FunctionConstant {
  std::string name;
  std::string global;  // the module's variable its value is given in
  std::string type;  // Metal's: "bool", "int", "float", ...
  int index = -1;    // [[function_constant(n)]]
  bool required = false;
};

struct AirFunction {
  KernelInfo kernel;  // params in declaration order; bound: buffers by index
  std::vector<FunctionConstant> constants;
  // Per parameter, what AIR says beyond KernelParam.
  struct Param {
    std::string guard;      // the function constant whose value keeps it, else empty
    int address_space = 0;  // a buffer's: 1 device, 2 constant, 3 threadgroup
  };
  std::vector<Param> air_params;
  // air.* intrinsics the module declares: name, LLVM types, call count.
  struct Intrinsic {
    std::string name;
    std::string result;               // "float", "<4 x float>", "void"
    std::vector<std::string> params;  // LLVM's spelling of each type
    int calls = 0;
  };
  std::vector<Intrinsic> intrinsics;
  std::size_t threadgroup_bytes = 0;  // its threadgroup variables (address space 3)
  // [[max_total_threads_per_threadgroup(n)]] as AIR gives it
  // (!{!"air.max_work_group_size", i32 n} beside the arguments); 0: none.
  int max_threads = 0;
  // Why bronze cannot bind it (a texture or sampler parameter, a vertex
  // function), empty when nothing is known against it.
  std::string unsupported;
};

// Reads `f`'s module in `ctx`. Throws ValueError when LLVM rejects the
// bitcode or the metadata is not AIR's.
AirFunction reflect(jit::llvm::Context& ctx, const Function& f);

}  // namespace bronze::air
