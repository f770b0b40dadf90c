#include "backends/cuda/driver_api.hpp"

#include <dlfcn.h>


#include "bronze/error.hpp"
#include "jit/env.hpp"
#include "runtime/fork_state.hpp"

namespace bronze::cuda {
namespace {
struct Loaded {
  Driver d{};
  bool ok = false;
  int devices = 0;
  std::string status;
};

template <class F>
bool sym(void* h, F*& f, const char* name, std::string& missing) {
  f = reinterpret_cast<F*>(dlsym(h, name));
  if (!f) missing += std::string(missing.empty() ? "" : ", ") + name;
  return f != nullptr;
}

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    if (jit::env_bool("BRONZE_DISABLE_CUDA", false)) {
      r.status = "disabled by BRONZE_DISABLE_CUDA";
      return r;
    }
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      r.status = std::string("no CUDA driver: ") + dlerror();
      return r;
    }
    std::string missing;
    Driver& d = r.d;
    sym(h, d.cuInit, "cuInit", missing);
    sym(h, d.cuDriverGetVersion, "cuDriverGetVersion", missing);
    sym(h, d.cuGetErrorString, "cuGetErrorString", missing);
    sym(h, d.cuDeviceGetCount, "cuDeviceGetCount", missing);
    sym(h, d.cuDeviceGet, "cuDeviceGet", missing);
    sym(h, d.cuDeviceGetName, "cuDeviceGetName", missing);
    sym(h, d.cuDeviceTotalMem, "cuDeviceTotalMem_v2", missing);
    sym(h, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
    sym(h, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
    sym(h, d.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
    sym(h, d.cuCtxSynchronize, "cuCtxSynchronize", missing);
    sym(h, d.cuMemGetInfo, "cuMemGetInfo_v2", missing);
    sym(h, d.cuMemAlloc, "cuMemAlloc_v2", missing);
    sym(h, d.cuMemFree, "cuMemFree_v2", missing);
    sym(h, d.cuMemHostAlloc, "cuMemHostAlloc", missing);
    sym(h, d.cuMemFreeHost, "cuMemFreeHost", missing);
    sym(h, d.cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", missing);
    sym(h, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
    sym(h, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
    sym(h, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2", missing);
    sym(h, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
    sym(h, d.cuMemsetD8Async, "cuMemsetD8Async", missing);
    sym(h, d.cuMemsetD16Async, "cuMemsetD16Async", missing);
    sym(h, d.cuMemsetD32Async, "cuMemsetD32Async", missing);
    sym(h, d.cuStreamCreate, "cuStreamCreate", missing);
    sym(h, d.cuStreamDestroy, "cuStreamDestroy_v2", missing);
    sym(h, d.cuStreamSynchronize, "cuStreamSynchronize", missing);
    sym(h, d.cuStreamQuery, "cuStreamQuery", missing);
    sym(h, d.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
    sym(h, d.cuEventCreate, "cuEventCreate", missing);
    sym(h, d.cuEventDestroy, "cuEventDestroy_v2", missing);
    sym(h, d.cuEventRecord, "cuEventRecord", missing);
    sym(h, d.cuEventQuery, "cuEventQuery", missing);
    sym(h, d.cuEventSynchronize, "cuEventSynchronize", missing);
    sym(h, d.cuEventElapsedTime, "cuEventElapsedTime", missing);
    sym(h, d.cuModuleLoadData, "cuModuleLoadData", missing);
    sym(h, d.cuModuleGetFunction, "cuModuleGetFunction", missing);
    sym(h, d.cuLaunchKernel, "cuLaunchKernel", missing);
    sym(h, d.cuModuleGetGlobal, "cuModuleGetGlobal_v2", missing);
    sym(h, d.cuFuncGetAttribute, "cuFuncGetAttribute", missing);
    sym(h, d.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
    sym(h, d.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", missing);
    d.cuFuncGetParamInfo = reinterpret_cast<decltype(d.cuFuncGetParamInfo)>(dlsym(h, "cuFuncGetParamInfo"));
    if (!missing.empty()) {
      r.status = "the CUDA driver lacks " + missing;
      return r;
    }
    CUresult rc = d.cuInit(0);
    if (rc != CUDA_SUCCESS) {
      const char* msg = nullptr;
      d.cuGetErrorString(rc, &msg);
      r.status = std::string("cuInit failed: ") + (msg ? msg : "unknown error") + " (" + std::to_string(rc) + ")";
      return r;
    }
    runtime::note_backend_started(DeviceType::CUDA);
    int n = 0, version = 0;
    d.cuDeviceGetCount(&n);
    d.cuDriverGetVersion(&version);
    r.ok = n > 0;
    r.devices = n;
    r.status = "CUDA driver " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
               ", " + std::to_string(n) + " device" + (n == 1 ? "" : "s");
    return r;
  }();
  return l;
}
}  // namespace

const Driver* driver() { return loaded().ok ? &loaded().d : nullptr; }
const std::string& status() { return loaded().status; }
int device_count() { return loaded().devices; }

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* msg = nullptr;
  if (const Driver* d = driver()) d->cuGetErrorString(r, &msg);
  throw DeviceError(std::string(what) + ": " + (msg ? msg : "CUDA error") + " (" + std::to_string(r) + ")");
}

}  // namespace bronze::cuda
