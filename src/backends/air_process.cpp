#include "backends/air_process.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>

#include "backends/shader_backend.hpp"
#include "bronze/error.hpp"
#include "jit/helper_process.hpp"
#include "jit/host_compiler.hpp"
#include "jit/llvm_api.hpp"
#include "jit/serial.hpp"
#include "jit/warnings.hpp"

namespace bronze::backends {
namespace {

// What bronze-air answers: the lowered source, or the error lower_air raised.
enum class Outcome { Lowered, NotSupported, Value, Other };
// bronze-air's exit status when LLVM reported a fatal error (its reason on
// stderr, after kFatal).
constexpr int kLlvmFatal = 3;
constexpr const char* kFatal = "bronze-air: LLVM: ";

std::string encode_request(DeviceType type, const air::Function& f,
                           const std::vector<std::pair<std::string, std::string>>& constants) {
  jit::RecordWriter w;
  w.num(static_cast<int>(type)).str(f.name).num(static_cast<int>(f.type)).str(f.hash);
  w.num(f.air_major).num(f.air_minor).num(f.language_major).num(f.language_minor);
  w.str(std::string(reinterpret_cast<const char*>(f.bitcode), f.bitcode_size)).num(static_cast<long long>(constants.size()));
  for (const auto& [name, value] : constants) w.str(name).str(value);
  return w.out;
}

std::string encode_error(Outcome kind, const std::string& message) {
  return jit::RecordWriter().num(static_cast<int>(kind)).str(message).out;
}

runtime::ModuleSource decode_answer(const std::string& data, const std::string& kernel) {
  jit::RecordReader r(data);
  const auto kind = static_cast<Outcome>(r.num());
  const std::string message = r.str();
  runtime::ModuleSource out;
  if (kind == Outcome::Lowered) {
    out.code = r.str();
    out.filename = r.str();
    out.math_mode = static_cast<runtime::MathMode>(r.num());
    for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
      std::string name = r.str();
      out.headers.emplace_back(std::move(name), r.str());
    }
    for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
      std::string name = r.str();
      out.objects.emplace_back(std::move(name), r.str());
    }
  }
  if (!r.ok) throw Error("kernel '" + kernel + "': bronze-air's answer is malformed");
  switch (kind) {
    case Outcome::Lowered: return out;
    case Outcome::NotSupported: throw NotSupportedError(message);
    case Outcome::Value: throw ValueError(message);
    default: throw Error(message);
  }
}

const std::string& worker_path() {
  static const std::string path = jit::helper_path("bronze-air");
  return path;
}

// LLVM's fatal error in bronze-air: its reason for the caller, then the end
// of the process (LLVM would otherwise exit with 1 or abort).
void on_fatal(const char* reason) {
  const auto put = [](const char* s) { (void)!::write(2, s, std::strlen(s)); };
  put(kFatal);
  put(reason ? reason : "(no reason given)");
  put("\n");
  ::_exit(kLlvmFatal);
}

}  // namespace

std::string serve_lower_air(const std::string& request) {
  try {
    jit::RecordReader r(request);
    const auto type = static_cast<DeviceType>(r.num());
    air::Function f;
    f.name = r.str();
    f.type = static_cast<air::FunctionType>(r.num());
    f.hash = r.str();
    f.air_major = static_cast<std::uint16_t>(r.num());
    f.air_minor = static_cast<std::uint16_t>(r.num());
    f.language_major = static_cast<std::uint16_t>(r.num());
    f.language_minor = static_cast<std::uint16_t>(r.num());
    const std::string bitcode = r.str();
    f.bitcode = reinterpret_cast<const std::uint8_t*>(bitcode.data());
    f.bitcode_size = bitcode.size();
    std::vector<std::pair<std::string, std::string>> constants;
    for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
      std::string name = r.str();
      constants.emplace_back(std::move(name), r.str());
    }
    if (!r.ok) return encode_error(Outcome::Other, "bronze-air: a malformed request");
    const jit::llvm::Api& api = jit::llvm::require("running an Apple .metallib");
    api.LLVMInstallFatalErrorHandler(&on_fatal);
    jit::llvm::Context ctx(api);
    const air::AirFunction reflection = air::reflect(ctx, f);
    const runtime::ModuleSource s = shader_backend(type).lower_air(f, reflection, constants);
    jit::RecordWriter w;
    w.num(static_cast<int>(Outcome::Lowered)).str("").str(s.code).str(s.filename).num(static_cast<int>(s.math_mode));
    w.num(static_cast<long long>(s.headers.size()));
    for (const auto& [name, text] : s.headers) w.str(name).str(text);
    w.num(static_cast<long long>(s.objects.size()));
    for (const auto& [name, bytes] : s.objects) w.str(name).str(bytes);
    return w.out;
  } catch (const NotSupportedError& e) {
    return encode_error(Outcome::NotSupported, e.what());
  } catch (const ValueError& e) {
    return encode_error(Outcome::Value, e.what());
  } catch (const std::exception& e) {
    return encode_error(Outcome::Other, e.what());
  }
}

runtime::ModuleSource lower_air_isolated(DeviceType type, const air::Function& f, const air::AirFunction& r,
                                         const std::vector<std::pair<std::string, std::string>>& constants) {
  if (worker_path().empty()) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      jit::warn("bronze: no bronze-air beside bronze's library: Apple .metallib kernels are lowered in this "
                "process, which an LLVM fatal error would end");
    return shader_backend(type).lower_air(f, r, constants);
  }
  const jit::HelperRun run = jit::call_helper(worker_path(), encode_request(type, f, constants), jit::llvm::library());
  if (run.answer) return decode_answer(*run.answer, f.name);
  const std::string& messages = run.messages;
  if (run.status == kLlvmFatal) {
    std::string reason = messages.substr(messages.find(kFatal) == std::string::npos ? 0 : messages.find(kFatal));
    if (reason.rfind(kFatal, 0) == 0) reason.erase(0, std::char_traits<char>::length(kFatal));
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == '\r')) reason.pop_back();
    throw NotSupportedError("kernel '" + f.name + "' cannot be built for " +
                            (type == DeviceType::CUDA ? "CUDA" : "the CPU") + ": LLVM stopped on it: " + reason);
  }
  throw Error("kernel '" + f.name + "': bronze-air failed (exit status " + std::to_string(run.status) + ")" +
              (messages.empty() ? std::string() : ": " + messages));
}

}  // namespace bronze::backends
