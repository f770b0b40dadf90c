#include "api/unit_record.hpp"

#include "jit/disk_cache.hpp"
#include "jit/serial.hpp"
#include "jit/sha256.hpp"

namespace bronze::detail {
namespace {

constexpr const char* kFormat = "bronze-unit-record-1";

std::string kernel_object_key(const std::string& unit_key, std::size_t k) {
  return jit::sha256_hex(unit_key + ":kernel:" + std::to_string(k));
}

}  // namespace

std::string unit_record_key(const std::string& unit_hash, const std::string& target, bool validate,
                            const std::string& compiler) {
  jit::Sha256 h;
  for (const std::string& part : {std::string(kFormat), jit::bronze_build(), target, std::string(validate ? "1" : "0"),
                                  compiler, unit_hash})
    h.update(part).update("\0", 1);
  return h.hex();
}

std::optional<UnitRecord> read_unit_record(const std::string& key) {
  std::optional<std::string> data = jit::DiskCache::instance().read(key, ".unit");
  if (!data) return std::nullopt;
  jit::RecordReader r(*data);
  UnitRecord rec;
  if (r.str() != kFormat) return std::nullopt;
  rec.no_kernels_why = r.str();
  rec.checked_buffers = r.num() != 0;
  const long long n = r.num();
  for (long long k = 0; r.ok && k < n; ++k) {
    KernelInfo& ki = rec.kernels.emplace_back();
    ki.name = r.str();
    ki.cooperative = r.num() != 0;
    ki.line = static_cast<int>(r.num());
    const long long params = r.num();
    for (long long i = 0; r.ok && i < params; ++i) {
      KernelParam& p = ki.params.emplace_back();
      p.name = r.str();
      p.kind = static_cast<ParamKind>(r.num());
      p.type = r.str();
      p.read_only = r.num() != 0;
      p.binding = static_cast<int>(r.num());
      p.index = static_cast<int>(r.num());
      p.attribute = r.str();
      p.size = static_cast<std::size_t>(r.num());
      p.by_value = r.num() != 0;
      p.line = static_cast<int>(r.num());
    }
    const long long bound = r.num();
    for (long long i = 0; r.ok && i < bound; ++i) ki.bound.push_back(static_cast<int>(r.num()));
  }
  if (!r.ok) return std::nullopt;
  return rec;
}

void write_unit_record(const std::string& key, const UnitRecord& rec) {
  jit::RecordWriter w;
  w.str(kFormat).str(rec.no_kernels_why).num(rec.checked_buffers).num(static_cast<long long>(rec.kernels.size()));
  for (const KernelInfo& ki : rec.kernels) {
    w.str(ki.name).num(ki.cooperative).num(ki.line).num(static_cast<long long>(ki.params.size()));
    for (const KernelParam& p : ki.params)
      w.str(p.name).num(static_cast<int>(p.kind)).str(p.type).num(p.read_only).num(p.binding).num(p.index)
          .str(p.attribute).num(static_cast<long long>(p.size)).num(p.by_value).num(p.line);
    w.num(static_cast<long long>(ki.bound.size()));
    for (int b : ki.bound) w.num(b);
  }
  jit::DiskCache::instance().write(key, ".unit", w.out);
}

std::optional<std::pair<std::string, std::string>> read_kernel_object(const std::string& unit_key, std::size_t k) {
  std::optional<std::string> data = jit::DiskCache::instance().read(kernel_object_key(unit_key, k), ".ref");
  if (!data) return std::nullopt;
  jit::RecordReader r(*data);
  std::string key = r.str(), suffix = r.str();
  if (!r.ok) return std::nullopt;
  return std::make_pair(key, suffix);
}

void write_kernel_object(const std::string& unit_key, std::size_t k, const std::string& key,
                         const std::string& suffix) {
  jit::DiskCache::instance().write(kernel_object_key(unit_key, k), ".ref", jit::RecordWriter().str(key).str(suffix).out);
}

}  // namespace bronze::detail
