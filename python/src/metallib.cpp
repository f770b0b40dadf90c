// Reading Apple .metallib files (src/air): what `bronze metallib-info`
// reports.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <thread>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "backends/shader_backend.hpp"
#include "common.hpp"
#include "jit/llvm_api.hpp"

namespace bronze::py {
namespace {

const char* kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Buffer: return "buffer";
    case ParamKind::Scalar: return "scalar";
    case ParamKind::Attribute: return "attribute";
    case ParamKind::ThreadgroupBuffer: return "threadgroup";
  }
  return "";
}

struct Read {
  std::vector<air::AirFunction> functions;
  std::vector<std::string> errors;  // per function: why LLVM or the reading refused it, else empty
};

// Each function's module read in a context of its own thread's (LLVM
// contexts are not shared between threads), over the cores.
Read reflect_all(const air::Metallib& lib, const std::vector<std::size_t>& which) {
  Read r;
  r.functions.resize(which.size());
  r.errors.resize(which.size());
  const jit::llvm::Api& api = jit::llvm::require("reading an Apple .metallib");
  const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(std::thread::hardware_concurrency(),
                                                                               which.size() / 64 + 1));
  auto work = [&](std::size_t w) {
    jit::llvm::Context ctx(api);
    for (std::size_t i = w; i < which.size(); i += workers) {
      try {
        r.functions[i] = air::reflect(ctx, lib.functions[which[i]]);
      } catch (const std::exception& e) {  // never out of a thread (std::terminate)
        r.errors[i] = e.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  work(0);
  for (auto& t : threads) t.join();
  return r;
}

nb::dict function_dict(const air::Function& f, const air::AirFunction& a, const std::string& error) {
  nb::dict d;
  d["name"] = f.name;
  d["type"] = air::function_type_name(f.type);
  d["hash"] = f.hash;
  d["air_version"] = std::to_string(f.air_major) + "." + std::to_string(f.air_minor);
  d["metal_version"] = std::to_string(f.language_major) + "." + std::to_string(f.language_minor);
  d["bitcode_bytes"] = f.bitcode_size;
  if (!error.empty()) {
    d["error"] = error;
    return d;
  }
  nb::list params;
  for (std::size_t i = 0; i < a.kernel.params.size(); ++i) {
    const KernelParam& p = a.kernel.params[i];
    nb::dict q;
    if (!a.air_params[i].guard.empty()) q["function_constant"] = a.air_params[i].guard;
    if (a.air_params[i].address_space) q["address_space"] = a.air_params[i].address_space;
    q["name"] = p.name;
    q["kind"] = kind_name(p.kind);
    q["type"] = p.type;
    if (p.kind == ParamKind::Attribute) q["attribute"] = p.attribute;
    if (p.index >= 0) q["index"] = p.index;
    if (p.binding >= 0) q["binding"] = p.binding;
    if (p.kind == ParamKind::Buffer || p.kind == ParamKind::Scalar) {
      q["read_only"] = p.read_only;
      q["by_value"] = p.by_value;
    }
    if (p.size) q["size"] = p.size;
    params.append(q);
  }
  d["params"] = params;
  nb::list constants;
  for (const air::FunctionConstant& c : a.constants) {
    nb::dict q;
    q["name"] = c.name;
    q["type"] = c.type;
    q["index"] = c.index;
    q["required"] = c.required;
    constants.append(q);
  }
  d["function_constants"] = constants;
  nb::dict intrinsics;
  for (const auto& in : a.intrinsics) intrinsics[nb::str(in.name.c_str())] = in.calls;
  d["intrinsics"] = intrinsics;
  d["cooperative"] = a.kernel.cooperative;
  // Whether each backend's runtime implements all it needs (what the first
  // call builds), else why not.
  for (DeviceType t : {DeviceType::CPU, DeviceType::CUDA}) {
    const std::string why = backends::shader_backend(t).air_unsupported(a);
    d[t == DeviceType::CPU ? "cpu" : "cuda"] = why.empty() ? nb::object(nb::bool_(true)) : nb::object(nb::str(why.c_str()));
  }
  d["threadgroup_bytes"] = a.threadgroup_bytes;
  if (a.max_threads) d["max_threads_per_threadgroup"] = a.max_threads;
  if (!a.unsupported.empty()) d["unsupported"] = a.unsupported;
  return d;
}

}  // namespace

void bind_metallib(nb::module_& m) {
  m.def("_llvm_status", [] { return jit::llvm::status(); },
        "Which libLLVM bronze loaded (for Apple .metallib files), or why none.");
  m.def("_metallib_bitcode", [](nb::bytes data, std::vector<std::string> names) {
    const air::Metallib lib = air::read_metallib(static_cast<const std::uint8_t*>(data.data()), data.size());
    nb::list out;
    for (const air::Function& f : lib.functions)
      if (std::find(names.begin(), names.end(), f.name) != names.end())
        out.append(nb::make_tuple(nb::str(f.name.c_str()), static_cast<int>(f.type),
                                  nb::bytes(reinterpret_cast<const char*>(f.bitcode), f.bitcode_size)));
    return out;
  }, "The named functions of an Apple .metallib: (name, type, bitcode without its wrapper).");
  m.def("_metallib_info", [](nb::bytes data, std::vector<std::string> names) {
    const auto* bytes = static_cast<const std::uint8_t*>(data.data());
    const air::Metallib lib = air::read_metallib(bytes, data.size());
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < lib.functions.size(); ++i)
      if (names.empty() || std::find(names.begin(), names.end(), lib.functions[i].name) != names.end())
        which.push_back(i);
    Read r;
    {
      nb::gil_scoped_release g;
      r = reflect_all(lib, which);
    }
    nb::dict out;
    out["version"] = std::to_string(lib.file_major) + "." + std::to_string(lib.file_minor);
    out["platform"] = lib.platform;
    out["llvm"] = jit::llvm::status();
    nb::list functions;
    for (std::size_t i = 0; i < which.size(); ++i)
      functions.append(function_dict(lib.functions[which[i]], r.functions[i], r.errors[i]));
    out["functions"] = functions;
    return out;
  }, nb::arg("data"), nb::arg("names") = std::vector<std::string>(),
     "What an Apple .metallib holds, read through LLVM: per function (all, or those named) its "
     "reflection, function constants and air.* intrinsics (bronze metallib-info).");
}

}  // namespace bronze::py
