#include "runtime/nvtx.hpp"

#include <cstdlib>

#if BRONZE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace bronze::runtime::nvtx {

#if BRONZE_HAVE_NVTX
namespace {
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("bronze");
  return d;
}
}  // namespace

bool compiled_in() { return true; }

std::string status() {
  const char* tool = std::getenv("NVTX_INJECTION64_PATH");
  return tool && *tool ? std::string("NVTX ranges while profiling (tool: ") + tool + ")"
                       : "NVTX ranges while profiling (no NVTX tool attached)";
}

void push(const char* name) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &a);
}

void pop() { nvtxDomainRangePop(domain()); }
#else
bool compiled_in() { return false; }
std::string status() { return "NVTX not built in (no nvtx3 headers at build time)"; }
void push(const char*) {}
void pop() {}
#endif

}  // namespace bronze::runtime::nvtx
