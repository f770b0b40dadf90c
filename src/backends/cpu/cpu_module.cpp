#include "backends/cpu/cpu_module.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <unordered_map>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/host_compiler.hpp"
#include "jit/sha256.hpp"

namespace bronze::cpu {
namespace {
constexpr int kMaxThreadsPerGroup = 1024;  // Metal's limit; fibers have no other
}  // namespace

runtime::ModuleObject build_module(const runtime::ModuleSource& src) {
  auto headers = src.headers;
  headers.emplace_back("bronze_metal_cpu.h", embedded::bronze_metal_cpu_h);
  headers.insert(headers.end(), src.objects.begin(), src.objects.end());  // beside the code, linked with it
  const jit::HostCompiler& cc = jit::HostCompiler::get();
  // The same meaning on GCC and Clang: each option below is spelled alike
  // by both; those that are not come from what the compiler is (found by
  // running it, jit/host_compiler.hpp).
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-w", "-fno-exceptions", "-fno-math-errno",
       // Multiply-add contraction across statements where the target has FMA
       // (as Metal's compiler does): GCC's default for C++ (its ISO modes
       // turn it off for C only); Clang's default contracts within an
       // expression only. Baseline x86-64 has no FMA: there nothing changes.
       "-ffp-contract=fast",
       // Every function a kernel calls must be defined: an error now, not when loading.
       "-Wl,-z,defs", "-lm"};
  // Plain messages: excerpts come from the files bronze read.
  for (const auto& f : cc.plain_diagnostics_flags()) flags.push_back(f);
  // Divisions and indexes into arrays of known size (private and threadgroup
  // arrays) checked by bronze's handlers (bronze_metal_cpu.h), so no
  // sanitizer runtime is linked: GCC's static one contributes nothing, and
  // Clang links none into shared objects. GCC's `bounds` is Clang's
  // `array-bounds` (Clang's `bounds` adds local-bounds, which traps with no
  // handler and no message).
  if (src.validate) {
    flags.insert(flags.end(), {"-DBRONZE_VALIDATE", cc.clang ? "-fsanitize=integer-divide-by-zero,array-bounds"
                                                             : "-fsanitize=integer-divide-by-zero,bounds"});
    if (!cc.clang) flags.push_back("-static-libubsan");
  }
  // Metal's math modes as GCC and Clang options, each named (-ffast-math
  // would also assume no NaN or infinity, which CUDA never does, and would
  // link crtfastmath.o, setting flush-to-zero for the whole process).
  if (src.math_mode != runtime::MathMode::Safe)
    flags.insert(flags.end(), {"-DBRONZE_FAST_MATH", "-fno-trapping-math", "-fno-signed-zeros", "-freciprocal-math"});
  if (src.math_mode == runtime::MathMode::Fast) flags.push_back("-fassociative-math");
  runtime::ModuleObject o;
  if (src.check_only) {
    o.diagnostics = jit::check_source(src.code, headers, flags);
    o.ok = o.diagnostics.empty();
    return o;
  }
  auto r = jit::build_shared_object(src.code, headers, flags, src.check_stack);
  o.ok = !r.so_path.empty();
  o.path = r.so_path;
  o.diagnostics = r.diagnostics;
  if (!r.key.empty()) o.cache_key = r.key, o.cache_suffix = ".so";
  return o;
}

std::optional<runtime::ModuleObject> cached_module(const std::string& key, const std::string& suffix) {
  std::optional<std::string> path = suffix == ".so" ? jit::cached_shared_object(key) : std::nullopt;
  if (!path) return std::nullopt;
  runtime::ModuleObject o;
  o.ok = true;
  o.path = *path;
  o.cache_key = key, o.cache_suffix = suffix;
  return o;
}

namespace {

#if defined(__x86_64__)
constexpr int kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kHostMachine = EM_AARCH64;
#endif

// A shared object's exported symbols, read from its bytes without loading
// it: what the loader will look up is checked before any of the object's
// code (its constructors) can run.
[[noreturn]] void refuse(const std::string& why) {
  throw ValueError("the compiled object is not a shared object for this host: " + why);
}

class ElfSymbols {
 public:
  // Throws ValueError when `data` is not a shared object for this host.
  ElfSymbols(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {
    if (size < sizeof(Elf64_Ehdr) || std::memcmp(data, ELFMAG, SELFMAG) != 0) refuse("no ELF header");
    Elf64_Ehdr eh;
    std::memcpy(&eh, data, sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_DYN)
      refuse("not a 64-bit little-endian shared object");
    if (eh.e_machine != kHostMachine) refuse("built for ELF machine " + std::to_string(eh.e_machine));
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || !fits(eh.e_shoff, std::uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
      refuse("its section table runs past its end");
    sections_.resize(eh.e_shnum);
    std::memcpy(sections_.data(), data + eh.e_shoff, sections_.size() * sizeof(Elf64_Shdr));
    for (const Elf64_Shdr& sh : sections_) {
      if (sh.sh_type != SHT_DYNSYM) continue;
      if (sh.sh_entsize != sizeof(Elf64_Sym) || !fits(sh.sh_offset, sh.sh_size) || sh.sh_link >= sections_.size())
        refuse("a malformed symbol table");
      const Elf64_Shdr& strtab = sections_[sh.sh_link];
      if (!fits(strtab.sh_offset, strtab.sh_size)) refuse("a malformed string table");
      const char* names = reinterpret_cast<const char*>(data + strtab.sh_offset);
      for (std::uint64_t off = sh.sh_offset; off + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size;
           off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        std::memcpy(&sym, data + off, sizeof sym);
        if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections_.size() || sym.st_name >= strtab.sh_size) continue;
        std::size_t len = strnlen(names + sym.st_name, strtab.sh_size - sym.st_name);
        if (sym.st_name + len < strtab.sh_size) symbols_.emplace(std::string_view(names + sym.st_name, len), sym);
      }
    }
  }

  // Whether `name` is a function the object defines.
  bool function(const std::string& name) const {
    auto it = symbols_.find(name);
    return it != symbols_.end() && ELF64_ST_TYPE(it->second.st_info) == STT_FUNC;
  }
  // The 64-bit words of data object `name`, if the object defines it.
  bool read(const std::string& name, std::vector<std::uint64_t>& words) const {
    auto it = symbols_.find(name);
    if (it == symbols_.end() || ELF64_ST_TYPE(it->second.st_info) != STT_OBJECT || it->second.st_size % 8 != 0)
      return false;
    const Elf64_Sym& sym = it->second;
    const std::uint64_t bytes = sym.st_size;
    const Elf64_Shdr& sh = sections_[sym.st_shndx];
    if (sym.st_value < sh.sh_addr || sym.st_value - sh.sh_addr > sh.sh_size || bytes > sh.sh_size - (sym.st_value - sh.sh_addr))
      return false;
    const std::uint64_t at = sh.sh_offset + (sym.st_value - sh.sh_addr);
    if (sh.sh_type == SHT_NOBITS || !fits(at, bytes)) return false;  // bronze's are constants, in the file
    words.resize(bytes / 8);
    std::memcpy(words.data(), data_ + at, bytes);
    return true;
  }

 private:
  bool fits(std::uint64_t offset, std::uint64_t n) const { return offset <= size_ && n <= size_ - offset; }

  const std::uint8_t* data_;
  std::size_t size_;
  std::vector<Elf64_Shdr> sections_;
  std::unordered_map<std::string_view, Elf64_Sym> symbols_;
};

// Fills each kernel's table and threadgroup bytes from the object's symbols;
// throws where one the loader needs is missing.
void read_kernels(const ElfSymbols& elf, std::vector<runtime::ModuleKernel>& kernels) {
  for (auto& k : kernels) {
    if (!elf.function(k.symbol)) throw KernelNotFoundError("the compiled shader has no entry '" + k.symbol + "'");
    k.max_threads = kMaxThreadsPerGroup;
    // A table of another length is another signature: the check says so.
    if (!k.table_symbol.empty() && (!elf.read(k.table_symbol, k.table) || k.table.empty()))
      throw Error("the compiled shader lacks its table '" + k.table_symbol + "'");
    if (!k.tgmem_symbol.empty()) {
      std::vector<std::uint64_t> tg;
      if (!elf.read(k.tgmem_symbol, tg) || tg.size() != 1)
        throw Error("the compiled shader lacks '" + k.tgmem_symbol + "'");
      k.static_shared_bytes = static_cast<std::size_t>(tg[0]);
    }
    std::vector<std::uint64_t> limit;  // absent from objects built before bronze read the attribute
    if (!k.max_threads_symbol.empty() && elf.read(k.max_threads_symbol, limit) && limit.size() == 1 && limit[0])
      k.max_threads = static_cast<int>(std::min<std::uint64_t>(limit[0], kMaxThreadsPerGroup));
  }
}

// The compile cache's entry for object bytes (content-addressed, so loading
// one twice reuses one file).
std::string cache_object(const std::vector<char>& object) {
  std::string key = jit::Sha256().update(object.data(), object.size()).hex();
  auto& cache = jit::DiskCache::instance();
  if (auto hit = cache.lookup(key, ".so")) return *hit;
  std::string dir = cache.make_work_dir();
  std::string tmp = dir + "/object.so";
  std::ofstream(tmp, std::ios::binary).write(object.data(), static_cast<std::streamsize>(object.size()));
  std::string path = cache.store(key, ".so", tmp);
  if (path != tmp) ::rmdir(dir.c_str());
  return path;
}

// A built object's symbols, read from its file.
void read_kernels(const std::string& path, std::vector<runtime::ModuleKernel>& kernels) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Error("cannot load the compiled shader: " + path + ": " + why);
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  void* m = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (m == MAP_FAILED) throw Error("cannot load the compiled shader: " + path + ": cannot map it");
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{m, size};
  read_kernels(ElfSymbols(static_cast<const std::uint8_t*>(m), size), kernels);
}

}  // namespace

std::shared_ptr<void> load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels,
                                  const runtime::ModuleCheck& check) {
  std::string path = object.path;
  if (path.empty()) {  // a .bronzelib's object: checked before it reaches the cache
    read_kernels(ElfSymbols(reinterpret_cast<const std::uint8_t*>(object.image.data()), object.image.size()), kernels);
    if (check) check(kernels);
    path = cache_object(object.image);
  } else {
    read_kernels(path, kernels);
    if (check) check(kernels);
  }
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(std::string("cannot load the compiled shader: ") + ::dlerror());
  jit::DiskCache::instance().unpin(path);  // loaded: its mapping keeps the file
  std::shared_ptr<void> module(h, [](void* handle) { ::dlclose(handle); });
  for (auto& k : kernels) {
    k.entry = ::dlsym(h, k.symbol.c_str());
    if (!k.entry) throw KernelNotFoundError("the compiled shader has no entry '" + k.symbol + "'");
  }
  return module;
}

}  // namespace bronze::cpu
