// Running a Metal grid as a CUDA grid (included by bronze_metal.h, inside
// namespace bronze_msl): threadgroups are blocks, simdgroups are warps,
// threadgroup_barrier is __syncthreads, atomics are CUDA's atomics.
//
// dispatchThreads grids end in partial threadgroups: the threads of the
// last block that lie outside the grid return before the kernel body runs.
// That keeps barriers correct (exited threads do not hold up bar.sync) and
// leaves them out of the simdgroup functions, which work on the active mask:
// a full warp takes the shuffle-tree path, a partial one (the grid's end, or
// divergent code) a loop over its active lanes, as Metal's semantics ask.
#pragma once

// GCC's bit builtins, which Metal's Clang has and NVRTC lacks (MLX's fft:
// `constexpr short power = __builtin_ctz(radix);`): constant expressions,
// one instruction at run time.
#define BRONZE_BIT_BUILTIN(name, T, bits, at_run_time, loop)                                          \
  constexpr int name(T x) { return __builtin_is_constant_evaluated() ? [](T v) { int n = 0; loop; return n; }(x) : at_run_time; }
BRONZE_BIT_BUILTIN(__builtin_ctz, unsigned, 32, __ffs(x) - 1, while (n < 32 && !(v >> n & 1u)) ++n)
BRONZE_BIT_BUILTIN(__builtin_clz, unsigned, 32, __clz(x), while (n < 32 && !(v >> (31 - n) & 1u)) ++n)
BRONZE_BIT_BUILTIN(__builtin_popcount, unsigned, 32, __popc(x), for (; v; v &= v - 1) ++n)
BRONZE_BIT_BUILTIN(__builtin_ctzll, unsigned long long, 64, __ffsll(x) - 1, while (n < 64 && !(v >> n & 1ull)) ++n)
BRONZE_BIT_BUILTIN(__builtin_clzll, unsigned long long, 64, __clzll(x), while (n < 64 && !(v >> (63 - n) & 1ull)) ++n)
BRONZE_BIT_BUILTIN(__builtin_popcountll, unsigned long long, 64, __popcll(x), for (; v; v &= v - 1) ++n)
#undef BRONZE_BIT_BUILTIN

namespace bronze_rt {
extern __shared__ __align__(16) unsigned char dynamic_smem[];
inline void* tg_buffer(int index, const bronze_gpu_launch& L) { return dynamic_smem + L.tg_offset[index]; }
// A kernel's threadgroup array A in dynamic shared memory, after the arrays
// declared before it (rewrite.hpp's carve_threadgroup): each begins on 16
// bytes, and the launch puts threadgroup buffers after the last.
constexpr unsigned long long tg_round(unsigned long long bytes) { return (bytes + 15) & ~15ull; }
template <class A, class... Before>
inline A& tg_carve() {
  return *reinterpret_cast<A*>(dynamic_smem + (0ull + ... + tg_round(sizeof(Before))));
}

struct ids {
  uint3 tpig, tpitg, tgpig, tptg, dtptg, tpg, tgpg;  // tptg: actual (partial) size, dtptg: dispatched
  uint tiitg, tiisg, sgiitg, tpsg, sgptg;
};

// This thread's Metal ids; false for threads past the grid's end.
// thread_index_in_threadgroup linearizes by the group's actual size, as
// Metal does; simdgroup lane and index follow the hardware's warps (CUDA's
// order by the dispatched size). The two differ only in 2-D/3-D partial
// groups, where a CUDA block keeps masked threads Metal would not launch.
inline bool make_ids(const bronze_gpu_launch& L, ids& id) {
  id.tpitg = uint3(threadIdx.x, threadIdx.y, threadIdx.z);
  id.tgpig = uint3(blockIdx.x, blockIdx.y, blockIdx.z);
  id.dtptg = uint3(blockDim.x, blockDim.y, blockDim.z);
  id.tpig = uint3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                  blockIdx.z * blockDim.z + threadIdx.z);
  // A group starts inside the grid; its threads past the end (by the
  // group's actual size: a position near 2^32 would wrap) do not run.
  uint ax = ::min(blockDim.x, L.grid[0] - blockIdx.x * blockDim.x);
  uint ay = ::min(blockDim.y, L.grid[1] - blockIdx.y * blockDim.y);
  uint az = ::min(blockDim.z, L.grid[2] - blockIdx.z * blockDim.z);
  if (threadIdx.x >= ax || threadIdx.y >= ay || threadIdx.z >= az) return false;
  id.tpg = uint3(L.grid[0], L.grid[1], L.grid[2]);
  id.tgpg = uint3(gridDim.x, gridDim.y, gridDim.z);
  id.tptg = uint3(ax, ay, az);
  id.tiitg = threadIdx.x + ax * (threadIdx.y + ay * threadIdx.z);
  uint physical = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  id.tiisg = physical & 31u;
  id.sgiitg = physical >> 5;
  id.tpsg = 32;
  id.sgptg = (ax * ay * az + 31) / 32;
  return true;
}

inline uint lane() {
  uint l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}
inline int first_lane(unsigned m) { return __ffs(m) - 1; }

// Shuffles of any value up to 64 bytes, in 32-bit words.
template <class T> inline T shfl(unsigned m, const T& x, int src) {
  constexpr int W = (sizeof(T) + 3) / 4;
  static_assert(W <= 16, "simdgroup functions take values up to 64 bytes");
  unsigned w[W];
  w[W - 1] = 0;
  BRONZE_MEMCPY(w, &x, sizeof(T));
  for (int i = 0; i < W; ++i) w[i] = __shfl_sync(m, w[i], src);
  T r;
  BRONZE_MEMCPY(&r, w, sizeof(T));
  return r;
}
template <class T> inline T shfl_xor(unsigned m, const T& x, int lane_mask) {
  constexpr int W = (sizeof(T) + 3) / 4;
  unsigned w[W];
  w[W - 1] = 0;
  BRONZE_MEMCPY(w, &x, sizeof(T));
  for (int i = 0; i < W; ++i) w[i] = __shfl_xor_sync(m, w[i], lane_mask);
  T r;
  BRONZE_MEMCPY(&r, w, sizeof(T));
  return r;
}

// op over the active lanes; every lane gets the same value.
template <class T, class Op> inline T reduce(T x, Op op) {
  unsigned m = __activemask();
  if (m == 0xffffffffu) {
    for (int o = 16; o; o >>= 1) x = op(x, shfl_xor(m, x, o));
    return x;
  }
  T r = shfl(m, x, first_lane(m));
  for (unsigned rest = m & (m - 1); rest; rest &= rest - 1) r = op(r, shfl(m, x, first_lane(rest)));
  return r;
}

// Inclusive scan over the active lanes in lane order; identity for none before.
template <class T, class Op> inline T scan(T x, Op op, T identity, bool inclusive) {
  unsigned m = __activemask();
  uint me = lane();
  if (m == 0xffffffffu) {
    for (uint o = 1; o < 32; o <<= 1) {
      T y = shfl(m, x, me >= o ? me - o : me);
      if (me >= o) x = op(y, x);
    }
    if (inclusive) return x;
    T prev = shfl(m, x, me ? me - 1 : 0);
    return me ? prev : identity;
  }
  T r = identity;
  for (unsigned rest = m; rest; rest &= rest - 1) {
    uint l = (uint)first_lane(rest);
    T v = shfl(m, x, (int)l);
    if (l < me || (inclusive && l == me)) r = op(r, v);
  }
  return r;
}

// x from lane src when it is active, else the caller's own x; zero from a
// lane past the threadgroup's end (a partial warp), as Apple GPUs read it.
template <class T> inline T from_lane(T x, uint src) {
  unsigned m = __activemask();
  T v = shfl(m, x, (int)(src & 31u));
  if (src < 32 && !((m >> src) & 1u)) {
    uint tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    if (tid - lane() + src >= blockDim.x * blockDim.y * blockDim.z) {
      ::memset(&v, 0, sizeof v);
      return v;
    }
  }
  return src < 32 && ((m >> src) & 1u) ? v : x;
}

template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };
template <class T> constexpr bool is_word_int = same<T, int>::value || same<T, uint>::value;

inline uint simd_lane() { return lane(); }

// simdgroup_matrix (layouts: bronze_metal.h) is held in rows, or in apple
// where the unit reads thread_elements(). half and bfloat operands on sm_80
// and newer multiply on tensor cores, one mma.m16n8k8 (rows 8-15 of its A
// zero) in NVIDIA's fragments: a and c in rows, b in cols. Other types stay
// in sgm_home: each lane gathers its row of a and its columns of b by
// shuffles and sums in float in the order k = 0..7.
#ifdef BRONZE_SGM_THREAD_ELEMENTS
constexpr sgm_layout sgm_home = sgm_layout::apple;
#else
constexpr sgm_layout sgm_home = sgm_layout::rows;
#endif
template <class TA, class TB> struct sgm_native {
#if __CUDA_ARCH__ >= 800
  static constexpr bool tensor_cores = (same<TA, half>::value && same<TB, half>::value) ||
                                       (same<TA, bfloat>::value && same<TB, bfloat>::value);
#else
  static constexpr bool tensor_cores = false;
#endif
  static constexpr sgm_layout a = tensor_cores ? sgm_layout::rows : sgm_home, c = a;
  static constexpr sgm_layout b = tensor_cores ? sgm_layout::cols : sgm_home;
};
template <class T> inline unsigned sgm_word(vec<T, 2> v) {
  unsigned w = 0;
  BRONZE_MEMCPY(&w, &v, sizeof(v));
  return w;
}
// e from layout From into To: a shuffle per element, one for both where the
// two layouts keep the same column pairs (apple and rows). cols is the
// transpose of rows, which for 16-bit elements on sm_75 and newer is one
// movmatrix instead of two shuffles (each b operand of a tensor-core multiply
// takes that move).
template <sgm_layout From, sgm_layout To, class T> inline vec<T, 2> sgm_move(vec<T, 2> e) {
  if constexpr (From == To) {
    return e;
#if __CUDA_ARCH__ >= 750
  } else if constexpr (To == sgm_layout::cols && From != sgm_layout::cols && sizeof(T) == 2) {
    unsigned t, w = sgm_word(sgm_move<From, sgm_layout::rows>(e));
    asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(t) : "r"(w));
    vec<T, 2> r;
    BRONZE_MEMCPY(&r, &t, sizeof(r));
    return r;
#endif
  } else {
    const uint me = lane();
    const sgm_rc first = sgm_coord(To, me, 0), at = sgm_holder(From, first.r, first.c);
    const vec<T, 2> v = shfl(0xffffffffu, e, (int)at.r);
    if constexpr (To != sgm_layout::cols && From != sgm_layout::cols) return v;
    const sgm_rc second = sgm_coord(To, me, 1), at2 = sgm_holder(From, second.r, second.c);
    const vec<T, 2> w = shfl(0xffffffffu, e, (int)at2.r);
    return vec<T, 2>(at.c ? v[1] : v[0], at2.c ? w[1] : w[0]);  // selects: an index by lane goes through memory
  }
}
// d = a * b + c, the operands in sgm_native's layouts.
template <class TD, class TA, class TB, class TC>
inline vec<TD, 2> sgm_mma(vec<TA, 2> a, vec<TB, 2> b, vec<TC, 2> c) {
  if constexpr (sgm_native<TA, TB>::tensor_cores) {
    float c0 = float(c[0]), c1 = float(c[1]), d2 = 0, d3 = 0;
    if constexpr (same<TA, half>::value)
      asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
          : "+f"(c0), "+f"(c1), "+f"(d2), "+f"(d3) : "r"(sgm_word(a)), "r"(0u), "r"(sgm_word(b)));
    else
      asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
          : "+f"(c0), "+f"(c1), "+f"(d2), "+f"(d3) : "r"(sgm_word(a)), "r"(0u), "r"(sgm_word(b)));
    return vec<TD, 2>(TD(c0), TD(c1));
  } else {
    constexpr unsigned full = 0xffffffffu;
    const sgm_rc me = sgm_coord(sgm_home, lane(), 0);  // this lane: row me.r, columns me.c and me.c + 1
    float acc[2] = {float(c[0]), float(c[1])};
    for (uint kp = 0; kp < 8; kp += 2) {
      const vec<TA, 2> ak = shfl(full, a, (int)sgm_holder(sgm_home, me.r, kp).r);  // a[r][kp], a[r][kp + 1]
      for (uint h = 0; h < 2; ++h) {
        const vec<TB, 2> bk = shfl(full, b, (int)sgm_holder(sgm_home, kp + h, me.c).r);  // b[kp + h][c], [c + 1]
        acc[0] += float(ak[h]) * float(bk[0]);
        acc[1] += float(ak[h]) * float(bk[1]);
      }
    }
    return vec<TD, 2>(TD(acc[0]), TD(acc[1]));
  }
}
}  // namespace bronze_rt

inline void threadgroup_barrier(mem_flags = mem_flags::mem_none) { __syncthreads(); }
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none) { __syncwarp(__activemask()); }
inline void atomic_thread_fence(mem_flags, memory_order order, thread_scope scope = thread_scope_device) {
  if (order == memory_order_relaxed) return;
  if (scope == thread_scope_thread) return;
  if (scope == thread_scope_threadgroup || scope == thread_scope_simdgroup) __threadfence_block();
  else if (scope == bronze_scope_system) __threadfence_system();
  else __threadfence();
}

namespace metal {
template <class T> inline T simd_sum(T x) { return bronze_rt::reduce(x, [](T a, T b) { return T(a + b); }); }
template <class T> inline T simd_product(T x) { return bronze_rt::reduce(x, [](T a, T b) { return T(a * b); }); }
template <class T> inline T simd_max(T x) { return bronze_rt::reduce(x, [](T a, T b) { return T(max(a, b)); }); }
template <class T> inline T simd_min(T x) { return bronze_rt::reduce(x, [](T a, T b) { return T(min(a, b)); }); }
template <class T> inline T simd_prefix_inclusive_sum(T x) {
  return bronze_rt::scan(x, [](T a, T b) { return T(a + b); }, T(0), true);
}
template <class T> inline T simd_prefix_exclusive_sum(T x) {
  return bronze_rt::scan(x, [](T a, T b) { return T(a + b); }, T(0), false);
}
template <class T> inline T simd_prefix_inclusive_product(T x) {
  return bronze_rt::scan(x, [](T a, T b) { return T(a * b); }, T(1), true);
}
template <class T> inline T simd_and(T x) { return bronze_rt::reduce(x, [](T a, T b) { return bronze_rt::bit_and(a, b); }); }
template <class T> inline T simd_or(T x) { return bronze_rt::reduce(x, [](T a, T b) { return bronze_rt::bit_or(a, b); }); }
template <class T> inline T simd_xor(T x) { return bronze_rt::reduce(x, [](T a, T b) { return bronze_rt::bit_xor(a, b); }); }
template <class T> inline T simd_prefix_exclusive_product(T x) {
  return bronze_rt::scan(x, [](T a, T b) { return T(a * b); }, T(1), false);
}
template <class T> inline T simd_shuffle(T x, ushort src) { return bronze_rt::from_lane(x, src); }
template <class T> inline T simd_broadcast(T x, ushort src) { return bronze_rt::from_lane(x, src); }
template <class T> inline T simd_shuffle_down(T x, ushort d) { return bronze_rt::from_lane(x, bronze_rt::lane() + d); }
template <class T> inline T simd_shuffle_up(T x, ushort d) {
  uint me = bronze_rt::lane();
  return bronze_rt::from_lane(x, me >= d ? me - d : me);
}
template <class T> inline T simd_shuffle_xor(T x, ushort m) { return bronze_rt::from_lane(x, bronze_rt::lane() ^ m); }
template <class T> inline T simd_shuffle_rotate_up(T x, ushort d) {
  return bronze_rt::from_lane(x, (bronze_rt::lane() + 32u - d % 32u) % 32u);
}
template <class T> inline T simd_shuffle_rotate_down(T x, ushort d) {
  return bronze_rt::from_lane(x, (bronze_rt::lane() + d) % 32u);
}
// data from lane + delta within each `modulo`-lane segment, past its end
// `fill` from the segment's start (up: the mirror image). Both shuffles run
// on every lane: a warp shuffle needs all of them.
template <class T> inline T simd_shuffle_and_fill_down(T data, T fill, ushort delta, ushort modulo = 32) {
  uint me = bronze_rt::lane(), seg = me / modulo * modulo, i = me % modulo + delta;
  T a = bronze_rt::from_lane(data, seg + (i < modulo ? i : 0));
  T f = bronze_rt::from_lane(fill, seg + (i < modulo ? 0 : i - modulo));
  return i < modulo ? a : f;
}
template <class T> inline T simd_shuffle_and_fill_up(T data, T fill, ushort delta, ushort modulo = 32) {
  uint me = bronze_rt::lane(), seg = me / modulo * modulo, j = me % modulo;
  T a = bronze_rt::from_lane(data, seg + (j >= delta ? j - delta : 0));
  T f = bronze_rt::from_lane(fill, seg + (j >= delta ? 0 : j + modulo - delta));
  return j >= delta ? a : f;
}
template <class T> inline T simd_broadcast_first(T x) {
  return bronze_rt::from_lane(x, (uint)bronze_rt::first_lane(__activemask()));
}
inline simd_vote simd_ballot(bool pred) { return simd_vote{(uint64_t)__ballot_sync(__activemask(), pred)}; }
inline bool simd_all(bool pred) { return __all_sync(__activemask(), pred); }
inline bool simd_any(bool pred) { return __any_sync(__activemask(), pred); }
inline bool simd_is_first() { return (int)bronze_rt::lane() == bronze_rt::first_lane(__activemask()); }
}  // namespace metal

// -------------------------------------------------------------- atomics
// Relaxed order only (all Metal offers). int/uint/float, and ulong's min and
// max, map to the hardware atomics; the rest is a compare-and-swap loop on
// the 32-bit word.
namespace bronze_rt {
template <class T> inline unsigned to_word(T v) {
  static_assert(sizeof(T) == 4, "bronze's CUDA atomics take 32-bit types");
  unsigned u;
  BRONZE_MEMCPY(&u, &v, 4);
  return u;
}
template <class T> inline T from_word(unsigned u) {
  T v;
  BRONZE_MEMCPY(&v, &u, 4);
  return v;
}
template <class T> inline T cas(T* p, T expected, T desired) {
  return from_word<T>(atomicCAS((unsigned*)p, to_word(expected), to_word(desired)));
}
template <class T, class F> inline T rmw(T* p, F f) {
  T old = *(volatile T*)p;
  for (;;) {
    T seen = cas(p, old, f(old));
    if (to_word(seen) == to_word(old)) return old;
    old = seen;
  }
}
}  // namespace bronze_rt

template <class T> inline T atomic_load_explicit(const bronze_atomic<T>* a, memory_order) { return *(const volatile T*)&a->v; }
template <class T, class U> inline void atomic_store_explicit(bronze_atomic<T>* a, U x, memory_order) {
  *(volatile T*)&a->v = T(x);
}
template <class T, class U> inline T atomic_exchange_explicit(bronze_atomic<T>* a, U x, memory_order) {
  return bronze_rt::from_word<T>(atomicExch((unsigned*)&a->v, bronze_rt::to_word(T(x))));
}
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(bronze_atomic<T>* a, T* expected, U desired, memory_order, memory_order) {
  T seen = bronze_rt::cas(&a->v, *expected, T(desired));
  if (bronze_rt::to_word(seen) == bronze_rt::to_word(*expected)) return true;
  *expected = seen;
  return false;
}
template <class T, class U> inline T atomic_fetch_add_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (bronze_rt::is_word_int<T> || bronze_rt::same<T, float>::value) return atomicAdd(&a->v, T(x));
  else return bronze_rt::rmw(&a->v, [&](T o) { return T(o + T(x)); });
}
template <class T, class U> inline T atomic_fetch_sub_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (bronze_rt::is_word_int<T>) return atomicSub(&a->v, T(x));
  else if constexpr (bronze_rt::same<T, float>::value) return atomicAdd(&a->v, -T(x));
  else return bronze_rt::rmw(&a->v, [&](T o) { return T(o - T(x)); });
}
template <class T, class U> inline T atomic_fetch_max_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (bronze_rt::is_word_int<T>) return atomicMax(&a->v, T(x));
  else if constexpr (bronze_rt::same<T, ulong>::value) return atomicMax((unsigned long long*)&a->v, (unsigned long long)x);
  else return bronze_rt::rmw(&a->v, [&](T o) { return o < T(x) ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_min_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (bronze_rt::is_word_int<T>) return atomicMin(&a->v, T(x));
  else if constexpr (bronze_rt::same<T, ulong>::value) return atomicMin((unsigned long long*)&a->v, (unsigned long long)x);
  else return bronze_rt::rmw(&a->v, [&](T o) { return T(x) < o ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_and_explicit(bronze_atomic<T>* a, U x, memory_order) { return atomicAnd(&a->v, T(x)); }
template <class T, class U> inline T atomic_fetch_or_explicit(bronze_atomic<T>* a, U x, memory_order) { return atomicOr(&a->v, T(x)); }
template <class T, class U> inline T atomic_fetch_xor_explicit(bronze_atomic<T>* a, U x, memory_order) { return atomicXor(&a->v, T(x)); }
