#include "backends/cpu/blas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "bronze/error.hpp"
#include "jit/log.hpp"

namespace bronze::cpu::blas {
namespace {
// CBLAS enum values (fixed by the CBLAS standard).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using sgemm_t = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using dgemm_t = void (*)(int, int, int, int, int, int, double, const double*, int,
                         const double*, int, double, double*, int);

struct Lib {
  sgemm_t sgemm = nullptr;
  dgemm_t dgemm = nullptr;
  std::string status;
  bool chosen = false;  // named by $BRONZE_BLAS_LIBRARY
};

const Lib& lib() {
  static const Lib l = [] {
    Lib r;
    std::string tried;
    // The library named is used or is an error, never another one silently.
    const char* env = std::getenv("BRONZE_BLAS_LIBRARY");
    r.chosen = env && *env;
    std::vector<const char*> names = {"libopenblas.so.0", "libopenblas.so", "libcblas.so.3", "libblas.so.3"};
    if (r.chosen) names = {env};
    for (const char* name : names) {
      void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        const char* why = dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (why ? why : name);
        continue;
      }
      auto s = reinterpret_cast<sgemm_t>(dlsym(h, "cblas_sgemm"));
      auto d = reinterpret_cast<dgemm_t>(dlsym(h, "cblas_dgemm"));
      if (s && d) {
        r.sgemm = s;
        r.dgemm = d;
        r.status = name;
        jit::log(jit::LogLevel::Info, [&] {
          return "mm on the CPU uses " + r.status + (tried.empty() ? std::string() : " (not loaded: " + tried + ")");
        });
        return r;
      }
      tried += std::string(tried.empty() ? "" : "; ") + name + ": no cblas_sgemm";
      dlclose(h);
    }
    r.status = r.chosen ? std::string("$BRONZE_BLAS_LIBRARY='") + env + "' is not a CBLAS library bronze can load (" +
                              tried + "); set it to one (libopenblas.so.0, a path) or unset it"
                        : "no CBLAS library found (" + tried + "); install libopenblas0 or set BRONZE_BLAS_LIBRARY";
    return r;
  }();
  return l;
}

const Lib& need() {
  const Lib& l = lib();
  if (l.sgemm) return l;
  if (l.chosen) throw ValueError(l.status);
  throw NotSupportedError("mm on the CPU needs a BLAS: " + l.status);
}
}  // namespace

void require() { need(); }
std::string status() { return lib().status; }

void sgemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b,
           int ldb, float* c, int ldc) {
  need().sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda,
               b, ldb, 0.0f, c, ldc);
}

void dgemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b,
           int ldb, double* c, int ldc) {
  need().dgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n, k, 1.0, a, lda,
               b, ldb, 0.0, c, ldc);
}

}  // namespace bronze::cpu::blas
