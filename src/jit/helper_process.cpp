#include "jit/helper_process.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "jit/disk_cache.hpp"
#include "jit/files.hpp"
#include "jit/host_compiler.hpp"

namespace bronze::jit {

HelperRun call_helper(const std::string& path, const std::string& request, const std::string& library) {
  const std::string dir = DiskCache::instance().make_work_dir(), in = dir + "/request", out = dir + "/result";
  HelperRun run;
  try {
    write_file(in, request);
    run.status = run_helper({path, in, out, library}, run.messages);
    std::string data;
    if (run.status == 0 && read_file(out, data)) run.answer = std::move(data);
  } catch (...) {
    remove_tree(dir);
    throw;
  }
  remove_tree(dir);
  return run;
}

std::string loaded_file(void* handle, const std::string& name) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && map->l_name[0] == '/') return map->l_name;
  return name;
}

int helper_main(int argc, char** argv, const char* name, const char* library_env,
                const std::function<std::optional<std::string>(const std::string&)>& serve) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s REQUEST RESULT LIBRARY (bronze runs this itself)\n", name);
    return 2;
  }
  ::setenv(library_env, argv[3], 1);
  try {
    std::string request;
    if (!read_file(argv[1], request)) return 2;
    std::optional<std::string> answer = serve(request);
    if (!answer) {
      std::fprintf(stderr, "%s: a malformed request\n", name);
      return 2;
    }
    write_file(argv[2], *answer);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

}  // namespace bronze::jit
