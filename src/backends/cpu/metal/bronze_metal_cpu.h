// Running a Metal grid on the host (included by bronze_metal.h, inside
// namespace bronze_msl): the loops over threadgroups, cooperative execution of a threadgroup's threads
// as fibers, which gives threadgroup_barrier and the simdgroup functions
// (32 lanes) their exact Metal semantics, and atomics on __atomic builtins.
#pragma once

template <class T> struct __remove_ref { typedef T type; };
template <class T> struct __remove_ref<T&> { typedef T type; };
template <class T> struct __remove_const { typedef T type; };
template <class T> struct __remove_const<const T> { typedef T type; };

// A buffer parameter under validate=True: indexing checks the range; a bad
// access is recorded in the launch's fault and reads/writes a scratch element.
template <class T>
struct bronze_bounded {
  T* p;
  uint64_t n;
  const char* name;
  bronze_fault* fault;
  bronze_bounded(T* p_, uint64_t n_, const char* name_, bronze_fault* f) : p(p_), n(n_), name(name_), fault(f) {}
  T& at(int64_t i) const {
    if (i >= 0 && (uint64_t)i < n) return p[i];
    int expected = 0;
    if (__atomic_compare_exchange_n(&fault->set, &expected, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      fault->name = name;
      fault->index = i;
      fault->count = n;
    }
    static thread_local typename __remove_const<T>::type scratch;
    return (T&)scratch;
  }
  T& operator[](int64_t i) const { return at(i); }
  T& operator*() const { return at(0); }
  T* operator->() const { return &at(0); }
  bronze_bounded operator+(int64_t d) const { return bronze_bounded(p + d, n - d, name, fault); }
  bronze_bounded operator-(int64_t d) const { return bronze_bounded(p - d, n + d, name, fault); }
  operator T*() const { return p; }  // passing on to helpers: unchecked there
  template <class U> explicit operator U*() const { return (U*)p; }  // (device float4*)buf
  // Two checked buffers compare and subtract as their pointers: through the
  // conversions above every built-in pointer operator would be a candidate
  // (llama.cpp tells a missing mask by `src1 != src0`).
#define BRONZE_BOUNDED_OP(op) \
  template <class U> auto operator op(const bronze_bounded<U>& o) const { return p op o.p; }
  BRONZE_BOUNDED_OP(==) BRONZE_BOUNDED_OP(!=) BRONZE_BOUNDED_OP(<) BRONZE_BOUNDED_OP(<=) BRONZE_BOUNDED_OP(>)
  BRONZE_BOUNDED_OP(>=) BRONZE_BOUNDED_OP(-)
#undef BRONZE_BOUNDED_OP
};
namespace bronze_rt {
// validate=True: a buffer slot as the kernel's bounds-checked parameter.
template <class P> struct bounded_of;
template <class T> struct bounded_of<bronze_bounded<T>> {
  static bronze_bounded<T> make(void* a, uint64_t bytes, const char* name, bronze_fault* f) {
    return bronze_bounded<T>((T*)a, bytes / sizeof(T), name, f);
  }
};
template <class P> inline P bounded(void* a, uint64_t bytes, const char* name, bronze_fault* f) {
  return bounded_of<P>::make(a, bytes, name, f);
}
// reinterpret_cast's operand under validate=True (rewrite.cpp): a checked
// buffer gives its pointer, anything else passes through.
template <class T> inline T* raw(const bronze_bounded<T>& b) { return b.p; }
template <class T> inline T* raw(bronze_bounded<T>& b) { return b.p; }  // over raw(T&&) for lvalues
template <class T> inline T&& raw(T&& x) { return (T&&)x; }
}  // namespace bronze_rt

#ifdef BRONZE_VALIDATE
// validate=True builds with -fsanitize=integer-divide-by-zero, whose check
// calls this (bronze's, not libubsan's): the division is recorded with its
// place in the user's source (the unit's #line directives), then runs on and
// yields what an unchecked one would.
namespace bronze_rt {
inline thread_local bronze_fault* validated_fault = nullptr;  // set by each entry
struct ubsan_location {
  const char* file;
  unsigned line, column;
};
}  // namespace bronze_rt
extern "C" void __ubsan_handle_divrem_overflow(void* data, void*, void*) {
  bronze_fault* f = bronze_rt::validated_fault;
  int expected = 0;
  if (!f || !__atomic_compare_exchange_n(&f->set, &expected, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  const bronze_rt::ubsan_location* at = (const bronze_rt::ubsan_location*)data;
  f->kind = BRONZE_FAULT_DIVISION_BY_ZERO;
  f->file = at->file;
  f->line = at->line;
  f->column = at->column;
}
extern "C" void __ubsan_handle_divrem_overflow_abort(void* data, void* a, void* b) {
  __ubsan_handle_divrem_overflow(data, a, b);
}
// And with -fsanitize=bounds, whose check on an index into an array of known
// size (a private array, a threadgroup array) calls this: the access is
// recorded with the array's type and place, and the thread stops there (a
// trap the kernel guard catches), since going on would write outside it.
namespace bronze_rt {
struct ubsan_type {
  unsigned short kind, info;
  char name[1];
};
struct ubsan_out_of_bounds {
  ubsan_location at;
  const ubsan_type* array;
  const ubsan_type* index;
};
}  // namespace bronze_rt
extern "C" void __ubsan_handle_out_of_bounds(void* data, void* index) {
  const bronze_rt::ubsan_out_of_bounds* d = (const bronze_rt::ubsan_out_of_bounds*)data;
  bronze_fault* f = bronze_rt::validated_fault;
  int expected = 0;
  if (f && __atomic_compare_exchange_n(&f->set, &expected, 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    // An integer index travels in the handle itself (64 bits at most).
    const unsigned bits = 1u << (d->index->info >> 1);
    unsigned long long raw = (unsigned long long)(uintptr_t)index;
    long long value = (long long)raw;
    if (bits < 64) {
      raw &= (1ull << bits) - 1;
      value = (d->index->info & 1) && (raw >> (bits - 1)) ? (long long)(raw | ~((1ull << bits) - 1)) : (long long)raw;
    }
    // The element count from the type's name: "float [8]".
    unsigned long long count = 0;
    const char* n = d->array->name;
    const char* open = 0;
    for (const char* c = n; *c; ++c)
      if (*c == '[') open = c;
    if (open)
      for (const char* c = open + 1; *c >= '0' && *c <= '9'; ++c) count = count * 10 + (unsigned long long)(*c - '0');
    f->kind = BRONZE_FAULT_OUT_OF_BOUNDS;
    f->name = n;
    f->index = value;
    f->count = count;
    f->file = d->at.file;
    f->line = d->at.line;
    f->column = d->at.column;
  }
  __builtin_trap();
}
extern "C" void __ubsan_handle_out_of_bounds_abort(void* data, void* index) { __ubsan_handle_out_of_bounds(data, index); }
#endif

namespace bronze_rt {
struct ids {
  uint3 tpig, tpitg, tgpig, tptg, dtptg, tpg, tgpg;  // tptg: actual (partial) size, dtptg: dispatched
  uint tiitg, tiisg, sgiitg, tpsg, sgptg;
};

enum fiber_state { RUN, WAIT_TG, WAIT_SIMD, DONE };
constexpr int kSimd = 32;
constexpr int kSlot = 64;  // bytes a lane can exchange (up to a 4 x 64-bit vector)

// Where a collective, or a helper that reaches one, is called in the user's
// source (the unit's #line file and line). Lanes waiting at different
// collectives, or at one through different calls, are on different sides of
// divergent code, which the GPU runs one after the other (release_simd):
// this tells them apart whatever the optimizer duplicated or merged.
struct site {
  const char* file;
  unsigned line;
  constexpr site(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE()) : file(f), line(l) {}
  bool before(const site& o) const {  // source order within a file
    if (file == o.file || __builtin_strcmp(file, o.file) == 0) return line < o.line;
    return __builtin_strcmp(file, o.file) < 0;
  }
};

// Where a lane waits: the calls of helpers that led to its collective
// (rules::call_chains gives each helper its caller), outermost first, then
// the collective. Calls nested deeper than kFrames are not compared.
constexpr unsigned kFrames = 6;
struct where {
  unsigned depth = 0;     // helper calls open
  site at[kFrames + 1];   // at[min(depth, kFrames)]: the collective
  // Whether a's lanes run before b's: source order of the first call or
  // collective where they differ (a call before what it reaches).
  friend bool before(const where& a, const where& b) {
    unsigned na = a.depth < kFrames ? a.depth : kFrames, nb = b.depth < kFrames ? b.depth : kFrames;
    for (unsigned k = 0;; ++k) {
      if (a.at[k].before(b.at[k])) return true;
      if (b.at[k].before(a.at[k])) return false;
      if (k == na || k == nb) return na < nb;
    }
  }
};

// A fiber is its Boost.Context fcontext: where its stack pointer was left.
// The runtime links Boost.Context and passes its functions in
// (bronze_cpu_memory's make_fiber, jump_fiber), so kernels need no Boost
// headers; the stacks are the runtime's, with guard pages between them.
typedef void* fiber;

struct group_ctx {
  int n = 0;
  int cur = 0;
  fiber main = nullptr;  // the scheduler's context, as the last switch to the running fiber left it
  fiber* ctx = nullptr;
  bronze_fiber_transfer (*jump)(void* to, void* data) = nullptr;
  fiber_state* st = nullptr;
  ids* id = nullptr;
  // [simdgroup][2][lane][kSlot]: what each lane brought to the collective it
  // waits at, then what the last released collective's lanes read (copied at
  // release: a released lane may bring its next value before the others read).
  unsigned char* xchg = nullptr;
  uint32_t* mask = nullptr;       // per simdgroup: lanes in the last released collective
  struct where* where = nullptr;  // per thread: the calls and the collective it waits at
  void (*invoke)(void*, const ids&) = nullptr;
  void* fn = nullptr;
};
inline thread_local group_ctx* cur_group = nullptr;

// Opened by a helper that reaches a collective (BRONZE_FRAME): its caller
// joins the lane's chain while the helper runs.
struct frame {
  where* w;
  explicit frame(const site& caller) : w(cur_group ? &cur_group->where[cur_group->cur] : nullptr) {
    if (!w) return;
    if (w->depth < kFrames) w->at[w->depth] = caller;
    ++w->depth;
  }
  ~frame() {
    if (w) --w->depth;
  }
  frame(const frame&) = delete;
  frame& operator=(const frame&) = delete;
};

// Threadgroup buffers, the fibers' records and stacks are the runtime's,
// per OS thread (launch_abi.h's bronze_cpu_memory).
inline void* tg_buffer(int index, const bronze_cpu_launch* L) {
  return L->memory->threadgroup(index, L->tg_bytes[index] ? L->tg_bytes[index] : 16);
}

inline void group_geometry(const bronze_cpu_launch* L, uint64_t g, ids& id, uint32_t actual[3]) {
  uint32_t gx = (uint32_t)(g % L->groups[0]);
  uint32_t gy = (uint32_t)((g / L->groups[0]) % L->groups[1]);
  uint32_t gz = (uint32_t)(g / ((uint64_t)L->groups[0] * L->groups[1]));
  id.tgpig = uint3(gx, gy, gz);
  uint32_t gi[3] = {gx, gy, gz};
  for (int d = 0; d < 3; ++d) {
    uint32_t start = gi[d] * L->group[d];
    uint32_t left = L->grid[d] - start;
    actual[d] = left < L->group[d] ? left : L->group[d];  // partial groups at the grid's end
  }
  id.tptg = uint3(actual[0], actual[1], actual[2]);
}

inline void thread_ids(const bronze_cpu_launch* L, ids& id, uint32_t lx, uint32_t ly, uint32_t lz, const uint32_t a[3]) {
  id.tpitg = uint3(lx, ly, lz);
  id.tpig = uint3(id.tgpig.x * L->group[0] + lx, id.tgpig.y * L->group[1] + ly, id.tgpig.z * L->group[2] + lz);
  id.tiitg = lx + a[0] * (ly + a[1] * lz);
  id.tiisg = id.tiitg % kSimd;
  id.sgiitg = id.tiitg / kSimd;
}

inline void init_fixed(const bronze_cpu_launch* L, ids& id) {
  id.tpg = uint3(L->grid[0], L->grid[1], L->grid[2]);
  id.tgpg = uint3(L->groups[0], L->groups[1], L->groups[2]);
  id.dtptg = uint3(L->group[0], L->group[1], L->group[2]);
  id.tpsg = kSimd;
}

// Kernels without barriers or simdgroup functions: plain loops.
template <class F>
inline void run_groups(const bronze_cpu_launch* L, uint64_t g0, uint64_t g1, F&& f) {
  cur_group = nullptr;  // a cooperative launch that was stopped (kernel_guard.hpp) may have left one
  ids id;
  init_fixed(L, id);
  for (uint64_t g = g0; g < g1; ++g) {
    uint32_t a[3];
    group_geometry(L, g, id, a);
    uint32_t nthreads = a[0] * a[1] * a[2];
    id.sgptg = (nthreads + kSimd - 1) / kSimd;
    for (uint32_t lz = 0; lz < a[2]; ++lz)
      for (uint32_t ly = 0; ly < a[1]; ++ly)
        for (uint32_t lx = 0; lx < a[0]; ++lx) {
          thread_ids(L, id, lx, ly, lz, a);
          f(id);
        }
  }
}

// The same a row of threads at a time: f(id, count) for the row's first
// thread (x = 0) and the row's length (an Apple .metallib kernel's loop
// over the row is in its own code: backends::row_thunk_ir).
template <class F>
inline void run_rows(const bronze_cpu_launch* L, uint64_t g0, uint64_t g1, F&& f) {
  cur_group = nullptr;
  ids id;
  init_fixed(L, id);
  for (uint64_t g = g0; g < g1; ++g) {
    uint32_t a[3];
    group_geometry(L, g, id, a);
    id.sgptg = (a[0] * a[1] * a[2] + kSimd - 1) / kSimd;
    for (uint32_t lz = 0; lz < a[2]; ++lz)
      for (uint32_t ly = 0; ly < a[1]; ++ly) {
        thread_ids(L, id, 0, ly, lz, a);
        f(id, a[0]);
      }
  }
}

inline void fiber_main(bronze_fiber_transfer from) {
  group_ctx* g = cur_group;
  g->main = from.fctx;
  int index = g->cur;
  g->invoke(g->fn, g->id[index]);
  g->st[index] = DONE;
  g->jump(g->main, nullptr);  // never resumed
  __builtin_unreachable();
}

// A switch to the scheduler, which comes back (with its new context) when it
// runs this fiber again.
inline void yield_as(fiber_state s) {
  group_ctx* g = cur_group;
  g->st[g->cur] = s;
  g->main = g->jump(g->main, nullptr).fctx;
}

// Lanes of `sg` waiting at one collective are released together; mask
// records them. Lanes waiting at different call sites are on different
// sides of divergent code, which the GPU runs one after the other: the
// earliest site in the code goes first (so lanes still in a loop meet
// before those that left it, which wait after it).
inline bool release_simd(group_ctx* g, int sg, bool only_if_complete) {
  int lo = sg * kSimd, hi = lo + kSimd < g->n ? lo + kSimd : g->n;
  uint32_t waiting = 0;
  bool others = false;
  int first = lo;
  for (int i = lo; i < hi; ++i) {
    if (g->st[i] == WAIT_SIMD) {
      if (!waiting || before(g->where[i], g->where[first])) first = i;
      waiting |= 1u << (i - lo);
    } else if (g->st[i] != DONE) {
      others = true;
    }
  }
  if (!waiting || (only_if_complete && others)) return false;
  for (int i = lo; i < hi; ++i)
    if (before(g->where[first], g->where[i])) waiting &= ~(1u << (i - lo));
  g->mask[sg] = waiting;
  unsigned char* brought = g->xchg + (size_t)sg * 2 * kSimd * kSlot;
  for (int i = lo; i < hi; ++i)
    if (waiting & (1u << (i - lo))) __builtin_memcpy(brought + (kSimd + i - lo) * kSlot, brought + (i - lo) * kSlot, kSlot);
  for (int i = lo; i < hi; ++i)
    if (waiting & (1u << (i - lo))) g->st[i] = RUN;
  return true;
}

template <class F>
inline void invoke_erased(void* fn, const ids& id) { (*(F*)fn)(id); }

// Kernels with barriers or simdgroup functions: each threadgroup's threads
// run as fibers on this OS thread, switching at every barrier/collective.
template <class F>
inline void run_groups_cooperative(const bronze_cpu_launch* L, uint64_t g0, uint64_t g1, F&& f) {
  ids base;
  init_fixed(L, base);
  const uint32_t max_threads = L->group[0] * L->group[1] * L->group[2];
  const int nsg = (int)((max_threads + kSimd - 1) / kSimd);
  // One per-OS-thread block: contexts, states, ids, exchange slots (the stacks follow).
  const size_t n_ctx = sizeof(fiber) * max_threads, n_st = sizeof(fiber_state) * max_threads,
               n_id = sizeof(ids) * max_threads, n_where = sizeof(where) * max_threads,
               n_x = (size_t)nsg * 2 * kSimd * kSlot;
  auto round16 = [](size_t v) { return (v + 15) & ~(size_t)15; };
  const bronze_cpu_memory* M = L->memory;
  char* mem = (char*)M->scratch(round16(n_ctx) + round16(n_st) + round16(n_id) + round16(n_where) + n_x);
  fiber* ctx = (fiber*)mem;
  fiber_state* st = (fiber_state*)(mem + round16(n_ctx));
  ids* idv = (ids*)(mem + round16(n_ctx) + round16(n_st));
  where* wheres = (where*)(mem + round16(n_ctx) + round16(n_st) + round16(n_id));
  unsigned char* xchg = (unsigned char*)(mem + round16(n_ctx) + round16(n_st) + round16(n_id) + round16(n_where));
  char* stacks = M->stacks(max_threads);
  uint32_t mask[32];
  group_ctx g;
  g.ctx = ctx;
  g.st = st;
  g.id = idv;
  g.jump = M->jump_fiber;
  g.xchg = xchg;
  g.mask = mask;
  g.where = wheres;
  g.invoke = &invoke_erased<typename __remove_ref<F>::type>;
  g.fn = (void*)&f;
  cur_group = &g;
  for (uint64_t gi = g0; gi < g1; ++gi) {
    uint32_t a[3];
    ids id = base;
    group_geometry(L, gi, id, a);
    g.n = (int)(a[0] * a[1] * a[2]);
    id.sgptg = (uint32_t)((g.n + kSimd - 1) / kSimd);
    int k = 0;
    for (uint32_t lz = 0; lz < a[2]; ++lz)
      for (uint32_t ly = 0; ly < a[1]; ++ly)
        for (uint32_t lx = 0; lx < a[0]; ++lx, ++k) {
          thread_ids(L, id, lx, ly, lz, a);
          idv[k] = id;
          st[k] = RUN;
          wheres[k].depth = 0;
          ctx[k] = M->make_fiber(stacks + (size_t)k * M->stack_stride + M->stack_bytes, M->stack_bytes, fiber_main);
        }
    for (;;) {
      for (int i = 0; i < g.n; ++i) {
        if (st[i] != RUN) continue;
        g.cur = i;
        ctx[i] = g.jump(ctx[i], nullptr).fctx;  // back at its next wait, or done
      }
      bool done = true, all_tg = true;
      for (int i = 0; i < g.n; ++i) {
        if (st[i] != DONE) done = false;
        if (st[i] != DONE && st[i] != WAIT_TG) all_tg = false;
      }
      if (done) break;
      bool released = false;
      for (int s = 0; s < (int)id.sgptg; ++s) released |= release_simd(&g, s, true);
      if (released) continue;
      if (all_tg) {
        for (int i = 0; i < g.n; ++i)
          if (st[i] == WAIT_TG) st[i] = RUN;
        continue;
      }
      // Collectives in divergent code: the lanes that reached them are the active ones.
      for (int s = 0; s < (int)id.sgptg; ++s) release_simd(&g, s, false);
    }
  }
  cur_group = nullptr;
}

// Exchanges x among the lanes of the simdgroup that call the collective at
// `at`; returns the lanes' slots and the active mask.
template <class T>
inline const T* exchange(T x, uint32_t* active, uint* lane, site at) {
  static_assert(sizeof(T) <= kSlot, "simdgroup functions take values up to 64 bytes");
  group_ctx* g = cur_group;
  if (!g) {  // a kernel bronze did not recognise as cooperative
    *active = 1;
    *lane = 0;
    static thread_local T single;
    single = x;
    return &single;
  }
  const ids& id = g->id[g->cur];
  const int sg = (int)id.sgiitg;
  unsigned char* brought = g->xchg + (size_t)sg * 2 * kSimd * kSlot;
  __builtin_memcpy(brought + id.tiisg * kSlot, &x, sizeof(T));
  where& w = g->where[g->cur];
  w.at[w.depth < kFrames ? w.depth : kFrames] = at;
  yield_as(WAIT_SIMD);
  *active = g->mask[sg];
  *lane = id.tiisg;
  return (const T*)(brought + kSimd * kSlot);  // slot stride is kSlot bytes: use slot()
}
template <class T> inline const T& slot(const T* base, uint l) { return *(const T*)((const unsigned char*)base + l * kSlot); }

inline uint simd_lane() { return cur_group ? cur_group->id[cur_group->cur].tiisg : 0u; }
// The lanes of the caller's simdgroup that exist: fewer than 32 in a
// threadgroup whose size is not a multiple of 32. A lane past the end reads
// as zero in a shuffle, as Apple GPUs give it (what c10's and MLX's 64-bit
// shuffle reductions over a partial simdgroup rely on).
inline uint32_t simd_lanes_present() {
  group_ctx* g = cur_group;
  if (!g) return 1u;
  int k = g->n - (int)g->id[g->cur].sgiitg * kSimd;
  return k >= kSimd ? ~0u : (1u << k) - 1u;
}
template <class T> inline T absent_lane() {
  T z;
  __builtin_memset((void*)&z, 0, sizeof z);
  return z;
}
// simdgroup_matrix keeps Apple's layout here (bronze_metal.h).
constexpr sgm_layout sgm_home = sgm_layout::apple;
template <class TA, class TB> struct sgm_native {
  static constexpr sgm_layout a = sgm_home, b = sgm_home, c = sgm_home;
};
template <sgm_layout From, sgm_layout To, class T> inline vec<T, 2> sgm_move(vec<T, 2> e) {
  static_assert(From == To, "one layout on the CPU");
  return e;
}
// simdgroup_matrix d = a * b + c from the lanes' element pairs (Apple's
// layout), summed in float in the order k = 0..7.
template <class TA, class TB> struct sgm_pair { vec<TA, 2> a; vec<TB, 2> b; };
template <class TD, class TA, class TB, class TC>
inline vec<TD, 2> sgm_mma(vec<TA, 2> a, vec<TB, 2> b, vec<TC, 2> c, site at) {
  uint32_t active;
  uint me;
  const sgm_pair<TA, TB>* x = exchange(sgm_pair<TA, TB>{a, b}, &active, &me, at);
  const uint r = sgm_row(me), c0 = sgm_col(me);
  vec<TD, 2> d;
  for (uint j = 0; j < 2; ++j) {
    float acc = float(c[j]);
    for (uint k = 0; k < 8; ++k)
      acc += float(slot(x, sgm_lane(r, k)).a[k & 1]) * float(slot(x, sgm_lane(k, c0)).b[j]);
    d[j] = TD(acc);
  }
  return d;
}
}  // namespace bronze_rt


inline void threadgroup_barrier(mem_flags = mem_flags::mem_none) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (bronze_rt::cur_group) bronze_rt::yield_as(bronze_rt::WAIT_TG);
}
// A group's threads share one OS thread: every fence is a full one.
inline void atomic_thread_fence(mem_flags, memory_order, thread_scope = thread_scope_device) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none BRONZE_SITE) {
  uint32_t m;
  uint l;
  bronze_rt::exchange(0, &m, &l, at);
}

namespace metal {
#define BRONZE_SIMD_BEGIN(T, x)       \
  uint32_t active;                  \
  uint lane;                        \
  const T* b = bronze_rt::exchange(x, &active, &lane, at);
#define BRONZE_ACTIVE(l) (active & (1u << (l)))
template <class T> inline T simd_sum(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(0);
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l)) r += bronze_rt::slot(b, l);
  return r;
}
template <class T> inline T simd_product(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(1);
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l)) r *= bronze_rt::slot(b, l);
  return r;
}
template <class T> inline T simd_max(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = x;
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l)) r = T(max(r, bronze_rt::slot(b, l)));
  return r;
}
template <class T> inline T simd_min(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = x;
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l)) r = T(min(r, bronze_rt::slot(b, l)));
  return r;
}
template <class T> inline T simd_prefix_exclusive_sum(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(0);
  for (uint l = 0; l < lane; ++l) if (BRONZE_ACTIVE(l)) r += bronze_rt::slot(b, l);
  return r;
}
template <class T> inline T simd_prefix_inclusive_sum(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(0);
  for (uint l = 0; l <= lane; ++l) if (BRONZE_ACTIVE(l)) r += bronze_rt::slot(b, l);
  return r;
}
template <class T> inline T simd_prefix_inclusive_product(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(1);
  for (uint l = 0; l <= lane; ++l) if (BRONZE_ACTIVE(l)) r *= bronze_rt::slot(b, l);
  return r;
}
#define BRONZE_SIMD_BITS(name, op)                                                          \
  template <class T> inline T name(T x BRONZE_SITE) {                                       \
    BRONZE_SIMD_BEGIN(T, x)                                                                 \
    T r = bronze_rt::slot(b, (uint)__builtin_ctz(active));                                  \
    for (uint l = __builtin_ctz(active) + 1; l < 32; ++l)                                   \
      if (BRONZE_ACTIVE(l)) r = bronze_rt::op(r, bronze_rt::slot(b, l));                    \
    return r;                                                                               \
  }
BRONZE_SIMD_BITS(simd_and, bit_and) BRONZE_SIMD_BITS(simd_or, bit_or) BRONZE_SIMD_BITS(simd_xor, bit_xor)
#undef BRONZE_SIMD_BITS
template <class T> inline T simd_prefix_exclusive_product(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  T r = T(1);
  for (uint l = 0; l < lane; ++l) if (BRONZE_ACTIVE(l)) r *= bronze_rt::slot(b, l);
  return r;
}
template <class T> inline T bronze_lane_or_self(const T* b, uint32_t active, uint l, T x) {
  if (l < 32 && !(bronze_rt::simd_lanes_present() >> l & 1u)) return bronze_rt::absent_lane<T>();
  return l < 32 && (active & (1u << l)) ? bronze_rt::slot(b, l) : x;
}
template <class T> inline T simd_shuffle(T x, ushort src BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, src, x); }
template <class T> inline T simd_broadcast(T x, ushort src BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, src, x); }
template <class T> inline T simd_shuffle_down(T x, ushort d BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, lane + d, x); }
template <class T> inline T simd_shuffle_up(T x, ushort d BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return lane >= d ? bronze_lane_or_self(b, active, lane - d, x) : x; }
template <class T> inline T simd_shuffle_xor(T x, ushort m BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, lane ^ m, x); }
template <class T> inline T simd_shuffle_rotate_up(T x, ushort d BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, (lane + 32 - d % 32) % 32, x); }
template <class T> inline T simd_shuffle_rotate_down(T x, ushort d BRONZE_SITE) { BRONZE_SIMD_BEGIN(T, x) return bronze_lane_or_self(b, active, (lane + d) % 32, x); }
// data from lane + delta within each `modulo`-lane segment, past its end
// `fill` from the segment's start (up: data from lane - delta, before the
// start `fill` from the segment's end).
template <class T> struct bronze_fill_pair { T data, fill; };
template <class T> inline T simd_shuffle_and_fill_down(T data, T fill, ushort delta, ushort modulo = 32 BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(bronze_fill_pair<T>, (bronze_fill_pair<T>{data, fill}))
  uint seg = lane / modulo * modulo, i = lane % modulo + delta;
  uint src = seg + (i < modulo ? i : i - modulo);
  if (src < 32 && !(bronze_rt::simd_lanes_present() >> src & 1u)) return bronze_rt::absent_lane<T>();
  if (src >= 32 || !BRONZE_ACTIVE(src)) return data;
  return i < modulo ? bronze_rt::slot(b, src).data : bronze_rt::slot(b, src).fill;
}
template <class T> inline T simd_shuffle_and_fill_up(T data, T fill, ushort delta, ushort modulo = 32 BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(bronze_fill_pair<T>, (bronze_fill_pair<T>{data, fill}))
  uint seg = lane / modulo * modulo, j = lane % modulo;
  uint src = seg + (j >= delta ? j - delta : j + modulo - delta);
  if (src < 32 && !(bronze_rt::simd_lanes_present() >> src & 1u)) return bronze_rt::absent_lane<T>();
  if (src >= 32 || !BRONZE_ACTIVE(src)) return data;
  return j >= delta ? bronze_rt::slot(b, src).data : bronze_rt::slot(b, src).fill;
}
template <class T> inline T simd_broadcast_first(T x BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(T, x)
  return bronze_lane_or_self(b, active, active ? (uint)__builtin_ctz(active) : 0u, x);
}
inline simd_vote simd_ballot(bool pred BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(bool, pred)
  uint64_t r = 0;
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l) && bronze_rt::slot(b, l)) r |= 1ull << l;
  return simd_vote{r};
}
inline bool simd_all(bool pred BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(bool, pred)
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l) && !bronze_rt::slot(b, l)) return false;
  return true;
}
inline bool simd_any(bool pred BRONZE_SITE) {
  BRONZE_SIMD_BEGIN(bool, pred)
  for (uint l = 0; l < 32; ++l) if (BRONZE_ACTIVE(l) && bronze_rt::slot(b, l)) return true;
  return false;
}
inline bool simd_is_first(BRONZE_SITE_ONLY) {
  BRONZE_SIMD_BEGIN(int, 0)
  return active && lane == (uint)__builtin_ctz(active);
}
#undef BRONZE_SIMD_BEGIN
#undef BRONZE_ACTIVE
}  // namespace metal

// -------------------------------------------------------------- atomics
// The generic __atomic builtins work for float as well as the integers.
template <class T> inline T atomic_load_explicit(bronze_atomic<T>* a, memory_order) {
  T v;
  __atomic_load(&a->v, &v, __ATOMIC_RELAXED);
  return v;
}
template <class T, class U> inline void atomic_store_explicit(bronze_atomic<T>* a, U x, memory_order) {
  T v = T(x);
  __atomic_store(&a->v, &v, __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_exchange_explicit(bronze_atomic<T>* a, U x, memory_order) {
  T v = T(x), old;
  __atomic_exchange(&a->v, &v, &old, __ATOMIC_RELAXED);
  return old;
}
template <class T, class U>
inline bool atomic_compare_exchange_weak_explicit(bronze_atomic<T>* a, T* expected, U desired, memory_order, memory_order) {
  T d = T(desired);
  return __atomic_compare_exchange(&a->v, expected, &d, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
// Read-modify-write as a compare-exchange loop on any T; f(old) gives the new value.
template <class T, class F> inline T bronze_atomic_rmw(bronze_atomic<T>* a, F f) {
  T old = atomic_load_explicit(a, memory_order_relaxed);
  T next = f(old);
  while (!__atomic_compare_exchange(&a->v, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) next = f(old);
  return old;
}
template <class T, class U> inline T atomic_fetch_add_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (T(0.5) != T(0)) return bronze_atomic_rmw(a, [&](T o) { return T(o + T(x)); });
  else return __atomic_fetch_add(&a->v, T(x), __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_fetch_sub_explicit(bronze_atomic<T>* a, U x, memory_order) {
  if constexpr (T(0.5) != T(0)) return bronze_atomic_rmw(a, [&](T o) { return T(o - T(x)); });
  else return __atomic_fetch_sub(&a->v, T(x), __ATOMIC_RELAXED);
}
template <class T, class U> inline T atomic_fetch_max_explicit(bronze_atomic<T>* a, U x, memory_order) {
  return bronze_atomic_rmw(a, [&](T o) { return o < T(x) ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_min_explicit(bronze_atomic<T>* a, U x, memory_order) {
  return bronze_atomic_rmw(a, [&](T o) { return T(x) < o ? T(x) : o; });
}
template <class T, class U> inline T atomic_fetch_and_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_and(&a->v, T(x), __ATOMIC_RELAXED); }
template <class T, class U> inline T atomic_fetch_or_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_or(&a->v, T(x), __ATOMIC_RELAXED); }
template <class T, class U> inline T atomic_fetch_xor_explicit(bronze_atomic<T>* a, U x, memory_order) { return __atomic_fetch_xor(&a->v, T(x), __ATOMIC_RELAXED); }
