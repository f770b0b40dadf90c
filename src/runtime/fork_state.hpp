// fork() copies a process's memory but only the calling thread: a child of a
// process whose bronze had started worker threads (CPU) or a driver context
// (CUDA) has that backend's state without the threads or context behind it.
// Such a child gets a clear error at its first use of the backend instead of
// a hang, and frees nothing it inherited.
#pragma once

#include "bronze/device.hpp"

namespace bronze::runtime {

// The backend now has state a forked child cannot use.
void note_backend_started(DeviceType t);
// True in a child forked after note_backend_started(t).
bool forked_after_start(DeviceType t);
// Throws bronze::Error explaining the fork when forked_after_start(t).
void check_not_forked(DeviceType t);

}  // namespace bronze::runtime
