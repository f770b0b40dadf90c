// A minimal NVTX tool, loaded by NVTX through NVTX_INJECTION64_PATH the way
// Nsight Systems is: it records domain creations and range pushes/pops so
// test_nvtx.cpp can check what bronze emits, with no GPU or Nsight needed.
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>

namespace {
std::mutex mu;
std::string log;  // "D:name;" per domain, "+name;" per push, "-;" per pop
struct Domain {
  std::string name;
};

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  std::lock_guard<std::mutex> g(mu);
  log += "D:" + std::string(name) + ";";
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name});
}

int NVTX_API range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  std::lock_guard<std::mutex> g(mu);
  auto* dom = reinterpret_cast<Domain*>(d);
  log += "+" + (dom ? dom->name + "/" : std::string("?/")) +
         (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "?") + ";";
  return 0;
}

int NVTX_API range_pop(nvtxDomainHandle_t) {
  std::lock_guard<std::mutex> g(mu);
  log += "-;";
  return 0;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  if (size <= NVTX_CBID_CORE2_DomainCreateA) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(domain_create);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(range_push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(range_pop);
  return 1;
}

// The log so far, cleared by the call.
__attribute__((visibility("default"))) const char* nvtx_probe_take() {
  static std::string taken;
  std::lock_guard<std::mutex> g(mu);
  taken.swap(log);
  log.clear();
  return taken.c_str();
}
}
