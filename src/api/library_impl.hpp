// What a compiled shader library holds: per kernel its reflection and the
// backend's entry (api/shader.cpp builds it through the front end and the
// device's backend).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bronze/shader.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"

namespace bronze::detail {
struct LibraryImpl;
struct AirSource;  // api/air_library.cpp
// The builds of one library compiled without naming a device: it follows
// its tensors, built for another device on first use there (as CuPy's and
// Warp's kernels do). The handles to a build share the family's ownership
// (api/shader.cpp: in_family): a build of any device keeps all of them, and
// the last handle dropped unloads them all.
struct LibraryFamily {
  shader::TranslationUnit unit;
  std::string kernel;  // the one kernel a specialization builds; empty: all
  bool validate = false;
  std::mutex mu;
  std::vector<std::shared_ptr<LibraryImpl>> builds;  // one per device
};

struct LibraryImpl {
  Device device;
  std::string hash;
  std::string source;                // the preprocessed unit: self-contained
  std::vector<KernelInfo> kernels;
  std::size_t first_kernel = 0;      // kernels[i] is the unit's kernel first_kernel + i (a specialization holds one)
  std::string no_kernels_why;        // shader::ParsedSource's, for a lookup's error
  std::vector<std::size_t> static_tg_bytes;
  std::vector<std::size_t> carved_tg_bytes;  // CUDA: of those, in dynamic shared memory (ModuleKernel)
  std::vector<int> max_threads;      // per kernel: threads per threadgroup it can launch with
  std::vector<const void*> entries;  // the backend's function per kernel
  // The loaded modules the entries are in: unloaded (dlclose) with the
  // library, which each queued launch holds.
  std::mutex modules_mu;  // kernels built on first use add theirs
  std::vector<std::shared_ptr<void>> modules;
  // A Metal unit compile_shader checked whole: each kernel is built alone
  // on its first use (a call, its reflection, Kernel::warmup), or all of
  // them at once by Library::warmup (api/shader.cpp: built, build_all).
  // Null where every kernel was loaded with the library. A kernel's
  // per-kernel fields here (its KernelInfo's parameters, entry, sizes) are
  // read only once it is ready.
  struct Lazy {
    explicit Lazy(std::size_t kernels) : built(kernels), ready(kernels) {}
    shader::TranslationUnit unit;
    bool checked_buffers = true;           // as the check found (shader::RewriteOptions)
    std::string record_key;                // of the unit's record in the compile cache (api/unit_record.hpp)
    std::vector<std::once_flag> built;     // per kernel: its build, once
    std::vector<std::atomic<bool>> ready;  // per kernel: built and loaded
    // The unit's parse: for a build, made then where the library came from
    // the unit's record.
    const shader::ParsedSource& parsed() {
      std::call_once(parsed_once_, [&] {
        parsed_ = shader::parse(unit.text, unit.files.empty() ? "shader.metal" : unit.files[0].name);
      });
      return parsed_;
    }
    void parse(shader::ParsedSource ps) {
      std::call_once(parsed_once_, [&] { parsed_ = std::move(ps); });
    }

   private:
    std::once_flag parsed_once_;
    shader::ParsedSource parsed_;
  };
  std::unique_ptr<Lazy> lazy;
  // An Apple .metallib's: its functions, each kernel reflected, lowered and
  // built from its AIR on first use (api/air_library.cpp).
  std::shared_ptr<AirSource> air;
  // A kernel's arguments in its entry's order (shader::entry_position: its
  // buffers and values in declaration order, those a function constant
  // removed included), from the call's binding order (slot order).
  struct EntryOrder {
    bool identity = true;                  // the same order, nothing removed
    std::vector<std::size_t> position;     // of each binding
    std::size_t count = 0;                 // the entry's arguments
    // Positions a function constant emptied: the bytes of a value passed
    // by value (zeros), 0 for a pointer (null).
    std::vector<std::pair<std::size_t, std::size_t>> absent;
  };
  std::vector<EntryOrder> entry_order;
  // (kernel, binding) pairs already warned about a tensor whose dtype is
  // not the buffer's declared type: once each, as torch.mps users expect.
  std::mutex warned_mu;
  std::set<std::pair<int, int>> warned;
  bool launch_record = true;         // entries take bronze's launch record (Metal); CUDA C++ kernels do not
  bool validate = false;             // built with validate=True (CPU)
  // A Metal library on CUDA: its entries take read-only buffers __restrict__
  // (shader::RewriteOptions::restrict_read_only). A launch that binds a
  // written buffer over one of them runs the kernel's entry built without,
  // built on the first such launch (api/shader.cpp: aliased_entry).
  bool restricted = false;
  struct Aliased {
    const void* entry = nullptr;
    int max_threads = 0;
    std::shared_ptr<void> module;
  };
  std::mutex aliased_mu;
  std::vector<Aliased> aliased;  // per kernel, once built
  // Empty: bound to `device`. Weak: the family owns its builds, and the
  // handles to them own the family.
  std::weak_ptr<LibraryFamily> family;
  // Library::specialize's builds by kernel and constants, each in a family
  // of its own where this library has one; kept with this library.
  std::mutex specializations_mu;
  std::vector<std::pair<std::string, std::shared_ptr<LibraryImpl>>> specializations;
};

// A kernel's arguments in its entry's order (api/shader.cpp).
LibraryImpl::EntryOrder entry_order(const KernelInfo& info);

// Apple .metallib libraries (api/air_library.cpp): loaded with each
// kernel's name only; built (reflected, lowered through the device's
// backend, compiled, loaded) once, on first use, as Lazy's kernels are.
std::shared_ptr<LibraryImpl> load_air_library(const Device& d, std::vector<std::uint8_t> bytes);
void build_air_kernel(LibraryImpl& lib, std::size_t k);
// Kernel k of an Apple library alone, its function constants given these values.
std::shared_ptr<LibraryImpl> specialize_air(const LibraryImpl& lib, std::size_t k,
                                            std::vector<std::pair<std::string, std::string>> constants);
bool air_kernel_built(const LibraryImpl& lib, std::size_t k);
}  // namespace bronze::detail
