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
