// The memory each OS thread that runs kernel code keeps for it (launch_abi.h's
// bronze_cpu_memory): threadgroup buffers, and the fibers' records and stacks
// of cooperative kernels. A thread keeps what it took for its later launches
// while it works; it goes back to the system once the thread has idled for
// kReleaseAfterIdle, or when empty_cache() asks. A 1024-thread group of a
// kernel with large private arrays touches up to 1024 x 576 KiB of stacks on
// each thread that runs it, so keeping them for good pinned gigabytes.
#pragma once

#include <chrono>

#include "runtime/launch_abi.h"

namespace bronze::cpu {

constexpr auto kReleaseAfterIdle = std::chrono::milliseconds(500);

// What generated entries take their memory from (bronze_cpu_launch::memory).
const bronze_cpu_memory* worker_memory();

// Ends an entry call on this thread: memory handed out during it may be
// released by other threads again. Called after each entry call returns or
// is left by the kernel guard.
void end_entry_call();

// The calling thread's memory goes back to the system (a thread about to sleep).
void release_own_worker_memory();
// The memory of every thread not inside an entry call now goes back.
void release_idle_worker_memory();

}  // namespace bronze::cpu
