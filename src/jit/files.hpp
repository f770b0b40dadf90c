// Small file helpers shared by the compile cache and the build drivers.
#pragma once

#include <string>

namespace bronze::jit {

// Reads the whole file into `out`; false when it cannot be opened.
bool read_file(const std::string& path, std::string& out);
// Removes `dir` and everything under it, never following a link.
void remove_tree(const std::string& dir);

}  // namespace bronze::jit
