#include "shader/module_source.hpp"

#include "runtime/embedded.hpp"
#include "shader/diagnostics.hpp"
#include "shader/metal_headers.hpp"
#include "shader/rewrite_cpu.hpp"
#include "shader/rewrite_cuda.hpp"

namespace bronze::shader {

runtime::ModuleSource module_source(runtime::ShaderTarget target, const TranslationUnit& unit,
                                    const ParsedSource& ps, const RewriteOptions& options) {
  runtime::ModuleSource m;
  m.code = target == runtime::ShaderTarget::CudaCpp ? rewrite_for_cuda(unit.text, ps, options)
                                                    : rewrite_for_cpu(unit.text, ps, options);
  m.validate = options.validate;
  m.math_mode = ps.math_mode == "safe"      ? runtime::MathMode::Safe
                : ps.math_mode == "relaxed" ? runtime::MathMode::Relaxed
                                            : runtime::MathMode::Fast;
  m.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"launch_abi.h", embedded::launch_abi_h}};
  const std::vector<SourceFile>* files = &unit.files;
  m.check_stack = [files](const std::string& usage) { check_stack_usage(usage, *files); };
  return m;
}

}  // namespace bronze::shader
