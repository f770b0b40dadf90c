/* The launch ABI: the records bronze's runtime passes to the entries it
 * generates for Metal kernels. One definition for both sides: host code
 * includes this file, and it is embedded into every generated kernel
 * source (the CPU's host compiler and NVRTC). Plain C types only: NVRTC has
 * no system headers. */
#ifndef BRONZE_LAUNCH_ABI_H
#define BRONZE_LAUNCH_ABI_H

/* The first fault a validated launch found (CPU, validate=True): an
 * out-of-bounds access to buffer `name`, or a division by zero at
 * file:line:column of the user's source. */
#define BRONZE_FAULT_OUT_OF_BOUNDS 0
#define BRONZE_FAULT_DIVISION_BY_ZERO 1
struct bronze_fault {
  int set;
  const char* name;
  long long index;
  unsigned long long count;
  int kind; /* fields from here on were added later: objects built before leave them 0 */
  const char* file;
  unsigned int line, column;
};

/* CPU: what a fiber switch hands over (Boost.Context's transfer_t): the
 * context the switch came from, and a pointer. */
struct bronze_fiber_transfer {
  void* fctx;
  void* data;
};

/* CPU: memory the runtime keeps for the OS thread that runs an entry, reused
 * by its later launches and returned to the system while the thread idles.
 * A module holds no thread-local memory of its own (a thread-local object
 * with a destructor would keep it loaded until the thread exits), so it can
 * be unloaded when its library is dropped. Entries take memory at their
 * start, not per thread of the grid. */
struct bronze_cpu_memory {
  /* the [[threadgroup(index)]] buffer of `bytes`, ending against an inaccessible page */
  void* (*threadgroup)(int index, unsigned long long bytes);
  /* `bytes` for a cooperative launch's fiber records */
  void* (*scratch)(unsigned long long bytes);
  /* `count` fiber stacks of stack_bytes each, stack_stride apart, with an
   * inaccessible guard below each and a larger one above the last: the
   * lowest stack's base */
  char* (*stacks)(unsigned long long count);
  unsigned long long stack_bytes, stack_stride;
  /* added later (objects built before switch fibers themselves): Boost.Context's
   * make_fcontext and jump_fcontext, for a cooperative launch's fibers: a
   * context on the stack below `top` that starts in `entry`; a switch to
   * `to` that returns when some context switches back */
  void* (*make_fiber)(void* top, unsigned long size, void (*entry)(struct bronze_fiber_transfer));
  struct bronze_fiber_transfer (*jump_fiber)(void* to, void* data);
};

/* CPU: an entry runs threadgroups [g0, g1) of the grid:
 *   void bronze_entry_<k>(void* const* args, const bronze_cpu_launch* L,
 *                         unsigned long long g0, unsigned long long g1);
 * args[i] points at binding i: a buffer's memory or a value's bytes. */
struct bronze_cpu_launch {
  unsigned int grid[3];              /* threads per grid */
  unsigned int group[3];             /* threads per threadgroup */
  unsigned int groups[3];            /* threadgroups per grid (rounded up) */
  unsigned long long tg_bytes[8];    /* sizes of [[threadgroup(n)]] buffers */
  const unsigned long long* arg_bytes; /* byte size of each binding (validate mode) */
  struct bronze_fault* fault;        /* where a validated kernel reports (validate mode) */
  const struct bronze_cpu_memory* memory; /* added later: objects built before keep their own */
};
typedef void (*bronze_cpu_entry)(void* const* args, const struct bronze_cpu_launch* L, unsigned long long g0,
                                 unsigned long long g1);

/* CUDA: the first parameter of every entry, by value; the bindings follow,
 * buffers and arrays as pointers, values by value. */
struct bronze_gpu_launch {
  unsigned int grid[3];       /* threads per grid */
  unsigned int tg_offset[8];  /* byte offsets of [[threadgroup(n)]] buffers in dynamic shared memory */
};

#endif
