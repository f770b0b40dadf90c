#include "shader/module_source.hpp"

#include <utility>

#include "runtime/embedded.hpp"
#include "shader/diagnostics.hpp"
#include "shader/metal_headers.hpp"

namespace bronze::shader {

runtime::ModuleSource module_source(const TranslationUnit& unit, const ParsedSource& ps, const RewriteOptions& options,
                                    std::string code) {
  runtime::ModuleSource m;
  m.code = std::move(code);
  m.validate = options.validate;
  m.check_only = options.check_only;
  m.math_mode = ps.math_mode == "safe"      ? runtime::MathMode::Safe
                : ps.math_mode == "relaxed" ? runtime::MathMode::Relaxed
                                            : runtime::MathMode::Fast;
  m.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"launch_abi.h", embedded::launch_abi_h}};
  const std::vector<SourceFile>* files = &unit.files;
  m.check_stack = [files, &ps](const std::string& usage) { check_stack_usage(usage, *files, &ps); };
  return m;
}

}  // namespace bronze::shader
