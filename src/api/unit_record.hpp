// A checked Metal unit's record in the compile cache (api/shader.cpp builds
// its kernels on first use): what compile_shader learnt of it, under a key
// of everything that decides it, so that another process compiling the same
// unit neither parses nor checks it again; and per kernel a reference to the
// cache entry of its object, so that process's first call loads the object
// without generating its code. Records are cache entries like objects: the
// trim may take them, and then the unit is read again.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bronze/shader.hpp"

namespace bronze::detail {

struct UnitRecord {
  std::vector<KernelInfo> kernels;  // as the parser reflects them
  std::string no_kernels_why;
  bool checked_buffers = true;      // validate: the check took checked views of the buffers
};

// The key of a unit's record: the preprocessed unit (all its includes'
// text; `unit_hash` its SHA-256), the target ("cpu", "cuda-sm_90"),
// validate, the compiler that checks and builds it, and this build of
// bronze (its code generation).
std::string unit_record_key(const std::string& unit_hash, const std::string& target, bool validate,
                            const std::string& compiler);
std::optional<UnitRecord> read_unit_record(const std::string& key);
void write_unit_record(const std::string& key, const UnitRecord& record);

// Kernel k's object: its compile cache entry (key, suffix).
std::optional<std::pair<std::string, std::string>> read_kernel_object(const std::string& unit_key, std::size_t k);
void write_kernel_object(const std::string& unit_key, std::size_t k, const std::string& key, const std::string& suffix);

}  // namespace bronze::detail
