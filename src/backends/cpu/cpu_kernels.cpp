#include "backends/cpu/cpu_kernels.hpp"

#include <algorithm>
#include <csignal>
#include <optional>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/blas.hpp"
#include "backends/cpu/cpu_device.hpp"
#include "backends/cpu/fenced_buffers.hpp"
#include "backends/cpu/kernel_guard.hpp"
#include "backends/cpu/strided.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "backends/cpu/worker_memory.hpp"
#include "bronze/error.hpp"
#include "runtime/dtype_dispatch.hpp"
#include "runtime/launch_abi.h"
#include "runtime/philox.hpp"

namespace bronze::cpu::kernels {
using runtime::acc_t;
using runtime::convert;
using runtime::dispatch;
namespace {
constexpr std::int64_t kGrain = 32768;

template <typename T>
T* typed(const View& v) {
  return static_cast<T*>(v.data);
}

template <typename T>
T scalar_as(Scalar v) {
  if constexpr (std::is_same_v<T, bool>) return v.to_double() != 0.0;
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(v.to_int());
  else return T(static_cast<acc_t<T>>(v.to_double()));
}

template <typename A>
A apply(runtime::BinaryOp op, A x, A y) {
  switch (op) {
    case runtime::BinaryOp::Add: return x + y;
    case runtime::BinaryOp::Sub: return x - y;
    case runtime::BinaryOp::Mul: return x * y;
    case runtime::BinaryOp::Div: return x / y;
    case runtime::BinaryOp::RSub: return y - x;
    case runtime::BinaryOp::RDiv: return y / x;
  }
  return x;
}

// Integer division by zero would trap the process: the tensor layer only
// divides floating tensors, and this guards the rest.
template <typename A>
A apply_checked(runtime::BinaryOp op, A x, A y) {
  if constexpr (std::is_integral_v<A>) {
    if ((op == runtime::BinaryOp::Div && y == 0) || (op == runtime::BinaryOp::RDiv && x == 0))
      throw ValueError("integer division by zero");
  }
  return apply(op, x, y);
}
}  // namespace

void fill(const View& dst, Scalar v) {
  dispatch(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T value = scalar_as<T>(v);
    T* p = typed<T>(dst);
    StridedIter<1> it{dst.shape, {&dst.strides}};
    bool contig = it.all_contiguous();
    ThreadPool::instance().parallel_for(dst.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
      if (contig) {
        for (std::int64_t i = b; i < e; ++i) p[i] = value;
      } else {
        it.run(b, e, [&](std::int64_t, const std::array<std::int64_t, 1>& o) { p[o[0]] = value; });
      }
    });
  });
}

void copy(const View& dst, const View& src) {
  dispatch(dst.dtype, [&](auto dtag) {
    using T = decltype(dtag);
    dispatch(src.dtype, [&](auto stag) {
      using S = decltype(stag);
      T* d = typed<T>(dst);
      const S* s = typed<S>(src);
      StridedIter<2> it{dst.shape, {&dst.strides, &src.strides}};
      bool contig = it.all_contiguous();
      ThreadPool::instance().parallel_for(dst.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
        if constexpr (std::is_same_v<T, S>) {
          if (contig) {
            std::memcpy(d + b, s + b, static_cast<std::size_t>(e - b) * sizeof(T));
            return;
          }
        }
        if (contig) {
          for (std::int64_t i = b; i < e; ++i) d[i] = convert<T>(s[i]);
        } else {
          it.run(b, e, [&](std::int64_t, const std::array<std::int64_t, 2>& o) {
            d[o[0]] = convert<T>(s[o[1]]);
          });
        }
      });
    });
  });
}

void binary(runtime::BinaryOp op, const View& out, const View& a, const View& b) {
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, bool>, int, acc_t<T>>;
    T* o = typed<T>(out);
    const T* x = typed<T>(a);
    const T* y = typed<T>(b);
    StridedIter<3> it{out.shape, {&out.strides, &a.strides, &b.strides}};
    bool contig = it.all_contiguous();
    ThreadPool::instance().parallel_for(out.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
      if (contig && !std::is_integral_v<A>) {
        for (std::int64_t i = lo; i < hi; ++i)
          o[i] = static_cast<T>(apply(op, static_cast<A>(x[i]), static_cast<A>(y[i])));
      } else {
        it.run(lo, hi, [&](std::int64_t, const std::array<std::int64_t, 3>& f) {
          o[f[0]] = static_cast<T>(apply_checked(op, static_cast<A>(x[f[1]]), static_cast<A>(y[f[2]])));
        });
      }
    });
  });
}

void binary_scalar(runtime::BinaryOp op, const View& out, const View& a, Scalar s) {
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, bool>, int, acc_t<T>>;
    const A y = std::is_integral_v<A> ? static_cast<A>(s.to_int()) : static_cast<A>(s.to_double());
    T* o = typed<T>(out);
    const T* x = typed<T>(a);
    StridedIter<2> it{out.shape, {&out.strides, &a.strides}};
    bool contig = it.all_contiguous();
    if constexpr (std::is_integral_v<A>) {
      if ((op == runtime::BinaryOp::Div && y == 0)) throw ValueError("integer division by zero");
    }
    ThreadPool::instance().parallel_for(out.numel(), kGrain, [&](std::int64_t lo, std::int64_t hi) {
      if (contig && !std::is_integral_v<A>) {
        for (std::int64_t i = lo; i < hi; ++i) o[i] = static_cast<T>(apply(op, static_cast<A>(x[i]), y));
      } else {
        it.run(lo, hi, [&](std::int64_t, const std::array<std::int64_t, 2>& f) {
          o[f[0]] = static_cast<T>(apply_checked(op, static_cast<A>(x[f[1]]), y));
        });
      }
    });
  });
}

void arange(const View& out, Scalar start, Scalar step) {
  const bool exact = start.is_integral() && step.is_integral() && !is_floating(out.dtype);
  const double a = start.to_double(), by = step.to_double();
  // Unsigned arithmetic: the same bits as int64's, without its overflow rules.
  const auto ia = static_cast<std::uint64_t>(start.to_int()), iby = static_cast<std::uint64_t>(step.to_int());
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = typed<T>(out);
    ThreadPool::instance().parallel_for(out.numel(), kGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i)
        o[i] = exact ? convert<T>(static_cast<std::int64_t>(ia + static_cast<std::uint64_t>(i) * iby))
                     : convert<T>(a + static_cast<double>(i) * by);
    });
  });
}

void random(const View& out, const runtime::RandomParams& p) {
  const std::uint64_t seed = p.philox.seed, base = p.philox.offset;
  dispatch(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* o = typed<T>(out);
    const bool wide = p.wide(out.dtype);
    const std::int64_t per = p.per_block(out.dtype);
    const std::int64_t nblocks = (out.numel() + per - 1) / per;
    const bool standard = p.standard();
    ThreadPool::instance().parallel_for(nblocks, kGrain / 4, [&](std::int64_t b, std::int64_t e) {
      const std::int64_t n = out.numel();
      for (std::int64_t blk = b; blk < e; ++blk) {
        // The block's `per` elements at once (cuda_kernels.cpp random_source() mirrors this).
        philox::U32x4 r = philox::block(seed, base + static_cast<std::uint64_t>(blk));
        const std::int64_t count = std::min<std::int64_t>(per, n - blk * per);
        T* dst = o + blk * per;
        switch (p.kind) {
          case runtime::RandomKind::Uniform:
            for (std::int64_t l = 0; l < count; ++l) {
              // Standard 16-bit uniforms on their dtype's grid (never 1); others clamped below b.
              double u = wide                                              ? philox::uniform_f64(r.v[2 * l], r.v[2 * l + 1])
                         : standard && out.dtype == DType::Float16  ? static_cast<double>(philox::uniform_f16(r.v[l]))
                         : standard && out.dtype == DType::BFloat16 ? static_cast<double>(philox::uniform_bf16(r.v[l]))
                                                                     : static_cast<double>(philox::uniform_f32(r.v[l]));
              dst[l] = convert<T>(standard ? u : philox::uniform_between(u, p.a, p.b, p.cap));
            }
            break;
          case runtime::RandomKind::Normal: {
            // IEEE arithmetic that every machine rounds alike (philox.hpp)
            const std::uint64_t counter = base + static_cast<std::uint64_t>(blk);
            if (wide) {
              for (std::int64_t l = 0; l < count; ++l) {
                const auto u = static_cast<philox::u32>(l);
                double z = philox::normal<double>(philox::word64(r.v[2 * u], r.v[2 * u + 1]), seed, counter, u);
                dst[l] = convert<T>(standard ? z : p.a + p.b * z);
              }
            } else {
              const float mean = static_cast<float>(p.a), stddev = static_cast<float>(p.b);
              for (std::int64_t l = 0; l < count; ++l) {
                float z = philox::normal<float>(r.v[l], seed, counter, static_cast<philox::u32>(l));
                dst[l] = convert<T>(static_cast<double>(standard ? z : mean + stddev * z));
              }
            }
            break;
          }
          case runtime::RandomKind::Int: {
            const std::uint64_t range = static_cast<std::uint64_t>(p.high - p.low);
            for (std::int64_t l = 0; l < count; ++l) {
              std::uint64_t x = wide ? ((static_cast<std::uint64_t>(r.v[2 * l]) << 32) | r.v[2 * l + 1]) : r.v[l];
              dst[l] = convert<T>(static_cast<std::int64_t>(p.low + static_cast<std::int64_t>(x % range)));
            }
            break;
          }
        }
      }
    });
  });
}

namespace {
std::vector<float> to_f32(const View& v) {
  std::vector<float> r(static_cast<std::size_t>(v.numel()));
  View dst{r.data(), DType::Float32, v.shape, runtime::contiguous_strides(v.shape), nullptr};
  copy(dst, v);
  return r;
}
}  // namespace

void matmul(const View& out, const View& a, const View& b) {
  // BLAS sizes are int: mm refuses larger ones; never narrow them here.
  for (const View* v : {&a, &b})
    for (int d = 0; d < 2; ++d)
      if (v->shape[d] > INT32_MAX || v->strides[d] > INT32_MAX)
        throw ValueError("matmul: a size or stride over 2^31 - 1, the most the BLAS takes");
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]),
            n = static_cast<int>(b.shape[1]);
  if (out.dtype == DType::Float32 || out.dtype == DType::Float64) {
    runtime::MatrixLayout la = runtime::matrix_layout(a), lb = runtime::matrix_layout(b);
    if (out.dtype == DType::Float32)
      blas::sgemm(la.trans, lb.trans, m, n, k, typed<float>(a), la.ld, typed<float>(b), lb.ld,
                  typed<float>(out), n);
    else
      blas::dgemm(la.trans, lb.trans, m, n, k, typed<double>(a), la.ld, typed<double>(b), lb.ld,
                  typed<double>(out), n);
    return;
  }
  // 16-bit formats: accumulate in float32, round once at the end.
  std::vector<float> fa = to_f32(a), fb = to_f32(b), fc(static_cast<std::size_t>(m) * n);
  blas::sgemm(false, false, m, n, k, fa.data(), k, fb.data(), n, fc.data(), n);
  View src{fc.data(), DType::Float32, out.shape, runtime::contiguous_strides(out.shape), nullptr};
  copy(out, src);
}

namespace {
// What a validated launch's first fault (launch_abi.h) was.
std::string describe(const bronze_fault& f) {
  std::string at = f.file ? std::string(" at ") + f.file + ":" + std::to_string(f.line) + ":" + std::to_string(f.column) : "";
  switch (f.kind) {
    case BRONZE_FAULT_DIVISION_BY_ZERO: return "integer division by zero" + at;
    default:
      if (f.file) {  // an array of the kernel's own (-fsanitize=bounds): its type, and where
        std::string type = f.name;  // as Clang spells it ('float[8]'; GCC: 'float [8]')
        for (std::size_t k; (k = type.find(" [")) != std::string::npos;) type.erase(k, 1);
        return "out-of-bounds index " + std::to_string(f.index) + " into an array " + type + " (" +
               std::to_string(f.count) + " elements)" + at + "; the thread was stopped there";
      }
      return "out-of-bounds access to '" + std::string(f.name) + "' at index " + std::to_string(f.index) +
             " (it holds " + std::to_string(f.count) + " elements)";
  }
}

// A fault in the guard of a tensor segment: the parameter whose memory ran
// out, when the segment is one tensor's (guarded placement).
std::string describe_overrun(const runtime::KernelLaunch& l, const KernelGuard::Failure& f, const SegmentFault& seg) {
  std::string what = "kernel '" + std::string(l.name) + "' stopped at " + (f.write ? "a write " : "an access ") +
                     (seg.after ? "past the end" : "before the start") + " of ";
  const runtime::KernelLaunch::Arg* arg = nullptr;
  if (seg.one_block)
    for (const auto& a : l.args) {
      const auto p = reinterpret_cast<std::uintptr_t>(a.ptr);
      if (a.inline_offset == SIZE_MAX && p >= seg.base && p < seg.base + seg.bytes) arg = &a;
    }
  if (arg)
    return what + "the memory of '" + arg->name + "' (" +
           std::to_string(seg.base + seg.bytes - reinterpret_cast<std::uintptr_t>(arg->ptr)) +
           " bytes from where it starts; a grid or an index past its buffer?); its outputs are incomplete. The "
           "overrun reached no other tensor; validate=True names the index.";
  return what + (seg.one_block ? "a tensor's memory (" : "the memory its tensors live in (") +
         std::to_string(seg.bytes) + " bytes; a grid or an index past its buffer?); its outputs are incomplete. " +
         (seg.one_block ? "The overrun reached no other tensor" : "Writes before the fault may have changed other tensors "
                                                          "of that memory, never bronze's own state") +
         "; validate=True names the buffer and index.";
}
}  // namespace

void run_jit_kernel(const runtime::KernelLaunch& l) {
  bronze_cpu_launch jl;
  std::uint64_t groups = 1, per_group = 1;
  for (int d = 0; d < 3; ++d) {
    jl.grid[d] = l.grid[d];
    jl.group[d] = l.group[d];
    jl.groups[d] = l.groups(d);
    groups *= jl.groups[d];
    per_group *= l.group[d];
  }
  std::memcpy(jl.tg_bytes, l.threadgroup_bytes, sizeof jl.tg_bytes);
  std::vector<void*> args(l.args.size());
  std::vector<unsigned long long> arg_bytes(l.args.size());
  bronze_fault fault{};
  jl.arg_bytes = arg_bytes.data();
  jl.fault = &fault;
  jl.memory = worker_memory();
  for (std::size_t i = 0; i < args.size(); ++i) arg_bytes[i] = l.args[i].bytes;
  for (std::size_t i = 0; i < args.size(); ++i)
    args[i] = l.args[i].inline_offset == SIZE_MAX
                  ? l.args[i].ptr
                  : const_cast<std::uint8_t*>(l.inline_bytes.data()) + l.args[i].inline_offset;
  auto entry = reinterpret_cast<bronze_cpu_entry>(const_cast<void*>(l.entry));
  // Enough threads per chunk to amortize the hand-off; every group whole.
  std::int64_t grain = l.cooperative ? 1 : std::max<std::int64_t>(1, 16384 / static_cast<std::int64_t>(per_group));
  std::optional<FencedBuffers> fenced;
  if (l.validate) fenced.emplace(l, args);
  KernelGuard guard(l.name, runtime::kernel_time_limit());
  ThreadPool::instance().parallel_for(static_cast<std::int64_t>(groups), grain, [&](std::int64_t b, std::int64_t e) {
    auto part = [&] { entry(args.data(), &jl, static_cast<unsigned long long>(b), static_cast<unsigned long long>(e)); };
    guard.run(part);
    end_entry_call();
  });
  if (fenced) fenced->copy_back();
  if (fault.set) throw Error("kernel '" + std::string(l.name) + "': " + describe(fault));
  if (auto f = guard.failure(); f && fenced && f->signal == SIGSEGV)
    if (std::string what = fenced->explain(f->address, f->write); !what.empty())
      throw Error("kernel '" + std::string(l.name) + "': " + what);
  if (auto f = guard.failure(); f && f->signal == SIGSEGV)
    if (auto seg = segment_guard(f->address)) throw DeviceError(describe_overrun(l, *f, *seg));
  guard.check();
}

}  // namespace bronze::cpu::kernels
