// The CPUs this process may run on (its affinity mask, as nproc counts):
// the CPU backend's workers, and how many compilers a big unit's build runs
// at once.
#pragma once

namespace bronze::jit {

int available_cpus();

}  // namespace bronze::jit
