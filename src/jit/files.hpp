// Small file helpers shared by the compile cache and the build drivers.
#pragma once

#include <string>

namespace bronze::jit {

// Reads the whole file into `out`; false when it cannot be opened or is not
// a regular file (never blocks on a FIFO or a device).
bool read_file(const std::string& path, std::string& out);
// Writes `data` to `path`, making its missing folders (under bronze's private
// build folders: made with the default mode); throws Error.
void write_file(const std::string& path, const std::string& data);
// Removes `dir` and everything under it, never following a link.
void remove_tree(const std::string& dir);

}  // namespace bronze::jit
