#include "jit/llvm_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "bronze/error.hpp"
#include "jit/helper_process.hpp"

namespace bronze::jit::llvm {
namespace {

constexpr unsigned kOldest = 17, kNewest = 22;

struct Loaded {
  Api api;
  bool ok = false;
  std::string status, library;
  void* handle = nullptr;
};

// Fills `a` from `h`; the names of entry points it lacks, else empty.
std::string bind(void* h, Api& a) {
  std::string missing;
#define BRONZE_LLVM_BIND(ret, name, params)                                   \
  a.name = reinterpret_cast<ret(*) params>(dlsym(h, #name));                  \
  if (!a.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
  BRONZE_LLVM_API(BRONZE_LLVM_BIND)
#undef BRONZE_LLVM_BIND
  return missing;
}

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    std::vector<std::string> names;
    if (const char* env = std::getenv("BRONZE_LLVM_LIBRARY"); env && *env) {
      names.push_back(env);
    } else {
      for (unsigned v = kNewest; v >= kOldest; --v) {
        names.push_back("libLLVM.so." + std::to_string(v) + ".1");  // LLVM's own soname (Debian, Fedora)
        names.push_back("libLLVM-" + std::to_string(v) + ".so");
      }
    }
    std::string tried;
    for (const std::string& name : names) {
      void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        tried += "\n  " + name + ": " + dlerror();
        continue;
      }
      Api a;
      if (std::string missing = bind(h, a); !missing.empty()) {
        tried += "\n  " + name + ": lacks " + missing;
        dlclose(h);
        continue;
      }
      unsigned major = 0, minor = 0, patch = 0;
      a.LLVMGetVersion(&major, &minor, &patch);
      if (major < kOldest) {
        tried += "\n  " + name + ": LLVM " + std::to_string(major) + " (bronze needs " + std::to_string(kOldest) +
                 " or newer)";
        dlclose(h);
        continue;
      }
      a.major = major;
      r.api = a;
      r.handle = h;
      r.library = loaded_file(h, name);
      r.ok = true;
      r.status = "LLVM " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
                 " (" + name + ")";
      return r;  // loaded for the process's life: modules and contexts may outlive any owner
    }
    r.status = "no libLLVM " + std::to_string(kOldest) + " or newer found (set BRONZE_LLVM_LIBRARY, or install "
               "one: apt-get install libllvm19):" + tried;
    return r;
  }();
  return l;
}

}  // namespace

const Api* api() { return loaded().ok ? &loaded().api : nullptr; }

bool initialize_target(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, bool> done;
  std::lock_guard<std::mutex> g(mu);
  if (auto it = done.find(name); it != done.end()) return it->second;
  bool ok = loaded().ok;
  std::vector<void (*)()> steps;
  for (const char* part : {"TargetInfo", "Target", "TargetMC", "AsmPrinter"}) {
    auto f = ok ? reinterpret_cast<void (*)()>(dlsym(loaded().handle, ("LLVMInitialize" + name + part).c_str())) : nullptr;
    ok = ok && f;
    steps.push_back(f);
  }
  if (ok)
    for (auto f : steps) f();
  return done[name] = ok;
}
const std::string& status() { return loaded().status; }
const std::string& library() { return loaded().library; }

const Api& require(const std::string& what) {
  if (const Api* a = api()) return *a;
  throw NotSupportedError(what + " needs LLVM: " + status());
}

Context::Context(const Api& a) : api_(a), ctx_(a.LLVMContextCreate()) {
  api_.LLVMContextSetDiagnosticHandler(ctx_, &Context::on_diagnostic, this);
}

Context::~Context() { api_.LLVMContextDispose(ctx_); }

void Context::on_diagnostic(LLVMDiagnosticInfoRef d, void* self) {
  auto* c = static_cast<Context*>(self);
  if (c->api_.LLVMGetDiagInfoSeverity(d) != kDiagnosticError) return;
  char* text = c->api_.LLVMGetDiagInfoDescription(d);
  if (!c->errors_.empty()) c->errors_ += "; ";
  c->errors_ += text ? text : "(no message)";
  c->api_.LLVMDisposeMessage(text);
}

std::string Context::take_errors() {
  std::string e = std::move(errors_);
  errors_.clear();
  return e;
}

Module::Module(Context& ctx, const std::uint8_t* bitcode, std::size_t size, const std::string& what)
    : api_(require(what)) {
  LLVMMemoryBufferRef buf = api_.LLVMCreateMemoryBufferWithMemoryRange(reinterpret_cast<const char*>(bitcode),
                                                                       size, what.c_str(), 0);
  const bool failed = api_.LLVMParseBitcodeInContext2(ctx.get(), buf, &m_) != 0;
  api_.LLVMDisposeMemoryBuffer(buf);  // the module was read whole: it keeps nothing of the buffer
  if (failed) {
    std::string why = ctx.take_errors();
    throw ValueError(what + ": LLVM cannot read its bitcode (" + (why.empty() ? "no reason given" : why) + ")");
  }
}

Module::Module(Context& ctx, const std::string& ir, const std::string& what) : api_(require(what)) {
  LLVMMemoryBufferRef buf = api_.LLVMCreateMemoryBufferWithMemoryRangeCopy(ir.data(), ir.size(), what.c_str());
  char* message = nullptr;
  if (api_.LLVMParseIRInContext(ctx.get(), buf, &m_, &message) != 0) {  // the buffer is consumed either way
    m_ = nullptr;
    throw Error(what + ": LLVM refused bronze's IR (" + take_message(api_, message) + ")");
  }
}

std::string take_message(const Api& a, char* m) {
  std::string s = m ? m : "";
  if (m) a.LLVMDisposeMessage(m);
  return s;
}

Signature signature(const Api& a, LLVMValueRef function) {
  const LLVMTypeRef type = a.LLVMGlobalGetValueType(function);
  std::vector<LLVMTypeRef> params(a.LLVMCountParamTypes(type));
  a.LLVMGetParamTypes(type, params.data());
  Signature s;
  s.result = take_message(a, a.LLVMPrintTypeToString(a.LLVMGetReturnType(type)));
  for (LLVMTypeRef p : params) s.params.push_back(take_message(a, a.LLVMPrintTypeToString(p)));
  return s;
}

Module::~Module() {
  if (m_) api_.LLVMDisposeModule(m_);
}

}  // namespace bronze::jit::llvm
