// The on-disk compile cache: content-addressed entries under
// $BRONZE_CACHE_DIR, else $XDG_CACHE_HOME/bronze, else ~/.cache/bronze.
// The directory must be the user's own and closed to others (mode 0700):
// bronze loads code from it, so a directory others can write is refused and
// the cache is off. Entries are written to a temporary file and renamed, so
// concurrent processes are safe; each ends with the SHA-256 of its key and
// content and is checked on every hit, so a truncated, corrupted, swapped
// or linked entry (another key's file under this name) is rebuilt, and one
// that is not a regular file (a FIFO) is never read. Trimming to
// $BRONZE_CACHE_MAX_BYTES (1G by default; units K, M, G) deletes only
// bronze's own entries, and only in a folder bronze created or found empty
// (it leaves a CACHEDIR.TAG there). A folder bronze cannot write (read-only,
// full) still serves hits; new builds then go to private folders under
// $TMPDIR, with one warning (jit/warnings.hpp). Build folders are named bronze-build-<pid>-*, so
// those of killed processes are removed by the next process that starts.
#pragma once

#include <atomic>
#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace bronze::jit {

// This build of bronze: the file its code was loaded from, its size and
// time. Part of the key of entries derived from bronze's own preprocessing
// or code generation (a rebuilt or reinstalled bronze makes them anew).
const std::string& bronze_build();

class DiskCache {
 public:
  static DiskCache& instance();

  bool enabled() const { return enabled_; }             // entries are looked up
  bool writable() const { return enabled_ && writable_; }  // and new ones stored
  const std::string& dir() const { return dir_; }
  std::string status() const;  // the path, why it is off, or why it is read-only

  // The path of a verified entry for `key` (ready to dlopen), if any.
  // `counted`: in counters() (false for bronze's own records, such as what
  // a compiler is, which are no compiles).
  std::optional<std::string> lookup(const std::string& key, const std::string& suffix, bool counted = true);
  // Moves the compiled file `tmp_path` into the cache; returns the entry's
  // path, or `tmp_path` itself (unchanged) when the cache is off or cannot
  // be written.
  std::string store(const std::string& key, const std::string& suffix, const std::string& tmp_path,
                    bool counted = true);
  // An entry bronze reads itself (a record, an image: not a shared object
  // to dlopen): its verified content, without the checksum trailer.
  std::optional<std::string> read(const std::string& key, const std::string& suffix, bool counted = true);
  // `data` as an entry for `key`, when the cache can be written; entries
  // written so are shortcuts: one that cannot be stored is left out.
  void write(const std::string& key, const std::string& suffix, const std::string& data, bool counted = true);
  // A fresh private directory for a compiler run (inside the cache when on),
  // by its canonical path.
  std::string make_work_dir();
  // A name of this process's own for the file at `path` (an entry, or a
  // build about to be stored): a hard link another process's trim cannot
  // take away before the file is loaded (dlopen). Removed by unpin once
  // loaded, or after ten minutes. nullopt when the file is
  // gone already (trimmed since its lookup: build it again); `path` itself
  // where no link can be made.
  std::optional<std::string> pin(const std::string& path);
  // The pin's name goes once its object is loaded (the mapping keeps the
  // file); nothing for a path that is no pin.
  void unpin(const std::string& pinned);

  struct Counters {
    unsigned long long hits = 0, misses = 0, stores = 0, corrupt = 0;
  };
  Counters counters() const;

 private:
  DiskCache();
  void trim(const std::string& keep);  // oldest entries first, never `keep`
  void degrade(const std::string& why);  // stop writing, keep serving hits
  // Says so, once, when a build first goes elsewhere: never from the
  // constructor, where a handler taking the GIL could deadlock with a thread
  // that holds it and waits for instance().
  void warn_once();
  bool enabled_ = false;
  std::atomic<bool> writable_{true}, warned_{false};
  bool owned_ = false;  // the folder carries bronze's CACHEDIR.TAG: only then is it trimmed
  std::string dir_, status_;
  unsigned long long max_bytes_;
  mutable std::mutex mu_;  // guards counters_ and status_
  Counters counters_;
  std::mutex pins_mu_;      // guards what follows
  std::string pins_dir_;    // this process's, made at the first pin
  unsigned long long pins_made_ = 0;
  struct Pin {
    std::string path;
    std::time_t made;
  };
  std::vector<Pin> pins_;
};

}  // namespace bronze::jit
