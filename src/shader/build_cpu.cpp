// The CPU backend's shader build: Metal -> C++ (rewrite_cpu) -> the host
// compiler -> a shared object, loaded with dlopen.
#include <dlfcn.h>

#include <cstdio>
#include <sstream>

#include "bronze/error.hpp"
#include "jit/host_compiler.hpp"
#include "jit/sha256.hpp"
#include "shader/library_impl.hpp"
#include "shader/metal_headers.hpp"
#include "shader/rewrite.hpp"
#include "shader/rewrite_cpu.hpp"
#include "shader/types.hpp"

namespace bronze::shader {
namespace {
constexpr int kCpuMaxThreadsPerGroup = 1024;  // Metal's limit; fibers have no other
// The stack one function of a kernel may take for a thread: CUDA's limit on a
// thread's local memory, so a kernel that builds here fits there too. A
// barrier kernel's threads run on fibers with this much stack and room for
// the runtime's frames (bronze_metal_cpu.h, kFiberStack).
constexpr unsigned long kMaxPrivateBytes = 512 * 1024;
}  // namespace

void check_stack_usage(const std::string& usage, const std::vector<SourceFile>& files) {
  std::istringstream lines(usage);
  for (std::string l; std::getline(lines, l);) {
    const SourceFile* file = nullptr;
    for (const SourceFile& f : files)
      if (l.rfind(f.name + ":", 0) == 0) file = &f;
    if (!file) continue;
    const char* rest = l.c_str() + file->name.size() + 1;
    int line = 0, col = 1;
    if (std::sscanf(rest, "%d:%d:", &line, &col) < 1) continue;  // Clang writes no column
    const std::size_t tab = l.find('\t');
    if (tab == std::string::npos) continue;
    const unsigned long bytes = std::strtoul(l.c_str() + tab + 1, nullptr, 10);
    if (bytes <= kMaxPrivateBytes) continue;
    raise_compile_error(file->name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                            ": error: this function needs " + std::to_string((bytes + 1023) / 1024) +
                            " KiB of stack per thread (its private arrays and locals); a thread may have " +
                            std::to_string(kMaxPrivateBytes / 1024) + " KiB, as on CUDA",
                        files);
  }
}

namespace {
// GCC's linker names a function called but never defined ("undefined
// reference to `bronze_msl::helper(float)'"): the error goes to the first
// call of it in the user's files instead.
void raise_undefined_function(const std::string& diag, const ParsedSource& ps, const std::vector<SourceFile>& files) {
  const std::string marker = "undefined reference to `";
  std::size_t at = diag.find(marker);
  if (at == std::string::npos) return;
  std::string symbol = diag.substr(at + marker.size(), diag.find('\'', at + marker.size()) - at - marker.size());
  std::string name = symbol.substr(0, symbol.find('('));
  if (name.rfind("::") != std::string::npos) name = name.substr(name.rfind("::") + 2);
  const auto& t = ps.tokens;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    // A call: the name, then '(', not after a type (that is a declaration).
    if (t[i].text != name || t[i + 1].text != "(" || (t[i - 1].kind == Token::Ident && t[i - 1].text != "return"))
      continue;
    raise_compile_error(ps.files[t[i].file] + ":" + std::to_string(t[i].line) + ":" + std::to_string(t[i].col) +
                            ": error: '" + name + "' is called but never defined (declared only: " + symbol + ")",
                        files);
  }
}
}  // namespace

// Compiles a Metal unit for the host CPU; returns the shared object's path.
std::string compile_cpu_object(const TranslationUnit& tu, const ParsedSource& ps, bool validate) {
  std::string cpp = rewrite_for_cpu(tu.text, ps, validate);
  auto r = jit::build_shared_object(
      cpp, {{"bronze_metal.h", embedded::bronze_metal_h}, {"bronze_metal_cpu.h", embedded::bronze_metal_cpu_h}},
      {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-w", "-fno-exceptions", "-fno-math-errno",
       "-fdiagnostics-color=never", "-DBRONZE_PRIVATE_BYTES=" + std::to_string(kMaxPrivateBytes),
       // Every function a kernel calls must be defined: an error now, not when loading.
       "-Wl,-z,defs", "-lm"},
      [&](const std::string& usage) { check_stack_usage(usage, tu.files); });
  if (r.so_path.empty()) {
    raise_undefined_function(r.diagnostics, ps, tu.files);
    raise_compile_error(r.diagnostics, tu.files);
  }
  return r.so_path;
}

std::shared_ptr<detail::LibraryImpl> load_cpu_object(const std::string& unit, const ParsedSource& ps,
                                                     const std::string& so_path) {
  void* h = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(std::string("cannot load the compiled shader: ") + ::dlerror());
  // Libraries stay loaded for the process: queued launches and thread-local
  // scratch inside them must outlive every Library handle.
  auto lib = std::make_shared<detail::LibraryImpl>();
  lib->source = unit;
  lib->hash = jit::sha256_hex(unit).substr(0, 16);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    const void* entry = ::dlsym(h, entry_symbol(k).c_str());
    auto* layout = static_cast<const unsigned long long*>(::dlsym(h, layout_symbol(k).c_str()));
    auto* tg = static_cast<const unsigned long long*>(::dlsym(h, ("bronze_tgmem_" + std::to_string(k)).c_str()));
    if (!entry || !layout || !tg) throw Error("compiled shader lacks the entry of kernel " + ps.kernels[k].info.name);
    KernelInfo info = ps.kernels[k].info;
    apply_layout(info, layout);
    lib->kernels.push_back(std::move(info));
    lib->entries.push_back(entry);
    lib->static_tg_bytes.push_back(static_cast<std::size_t>(*tg));
    lib->max_threads.push_back(kCpuMaxThreadsPerGroup);
  }
  return lib;
}

}  // namespace bronze::shader
