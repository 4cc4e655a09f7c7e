// A whole file's bytes in memory: a read-only mapping (POSIX mmap), owned and move-only,
// or a copy read into a buffer (read_file).
#pragma once

#if !defined(MNEMO_GGUF_DETAIL_OK_)
#error "mnemo/model/detail/gguf_* headers are internal: include mnemo/gguf/file.hpp"
#endif

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "mnemo/base/aligned_buffer.hpp"
#include "mnemo/base/result.hpp"
#include "mnemo/base/status.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define MNEMO_GGUF_HAS_MMAP 1
#else
#define MNEMO_GGUF_HAS_MMAP 0
#endif

namespace mnemo::gguf::detail {

inline status os_error(const char* what, const std::string& path) {
  return make_status(status_code::io_error, "gguf: %s '%s': %s", what, path.c_str(),
                     std::strerror(errno));
}

#if MNEMO_GGUF_HAS_MMAP
/// A regular file open for reading, and its size; closed with this object.
struct open_file {
  int fd = -1;
  std::size_t size = 0;

  open_file() = default;
  open_file(const open_file&) = delete;
  open_file& operator=(const open_file&) = delete;
  open_file(open_file&& o) noexcept : fd(std::exchange(o.fd, -1)), size(o.size) {}
  open_file& operator=(open_file&&) = delete;
  ~open_file() {
    if (fd >= 0) ::close(fd);
  }

  /// io_error when path cannot be opened or is a directory, device or pipe.
  static result<open_file> regular(const std::string& path) {
    open_file f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) return os_error("cannot open", path);
    struct ::stat st {};
    if (::fstat(f.fd, &st) != 0) return os_error("cannot stat", path);
    if (!S_ISREG(st.st_mode))
      return make_status(status_code::io_error, "gguf: '%s' is not a regular file", path.c_str());
    f.size = static_cast<std::size_t>(st.st_size);
    return f;
  }
};
#endif

/// The bytes of `path` read into a new buffer (huge pages for large files, as
/// aligned_buffer gives them). io_error as file_mapping::map, and when the file
/// shrinks while it is read; no_space when the buffer cannot be allocated.
inline result<aligned_buffer<std::byte>> read_file(const std::string& path) {
#if MNEMO_GGUF_HAS_MMAP
  MNEMO_ASSIGN_OR_RETURN(const open_file f, open_file::regular(path));
  auto made = aligned_buffer<std::byte>::make_for_overwrite(f.size);
  if (!made.is_ok()) return status(made.error()).with_context(path);
  aligned_buffer<std::byte> b = std::move(made).value();
  for (std::size_t done = 0; done < f.size;) {
    const ::ssize_t n = ::read(f.fd, b.data() + done, f.size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error("cannot read", path);
    if (n == 0)
      return make_status(status_code::io_error, "gguf: '%s' ended at byte %zu of %zu while read",
                         path.c_str(), done, f.size);
    done += static_cast<std::size_t>(n);
  }
  return b;
#else
  return make_status(status_code::unsupported,
                     "gguf: cannot read '%s': files are opened on POSIX systems; use "
                     "gguf::file::from_bytes",
                     path.c_str());
#endif
}

class file_mapping {
 public:
  file_mapping() noexcept = default;
  file_mapping(const file_mapping&) = delete;
  file_mapping& operator=(const file_mapping&) = delete;
  file_mapping(file_mapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  file_mapping& operator=(file_mapping&& o) noexcept {
    if (this != &o) {
      unmap();
      addr_ = std::exchange(o.addr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~file_mapping() { unmap(); }

  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(addr_), size_};
  }

  /// Maps `path` read-only. An empty file gives an empty mapping (the parser then
  /// reports it as too short); a directory or device is an io_error.
  static result<file_mapping> map(const std::string& path) {
#if MNEMO_GGUF_HAS_MMAP
    MNEMO_ASSIGN_OR_RETURN(const open_file f, open_file::regular(path));
    file_mapping m;
    if (f.size > 0) {
      void* addr = ::mmap(nullptr, f.size, PROT_READ, MAP_PRIVATE, f.fd, 0);
      if (addr == MAP_FAILED) return os_error("cannot map", path);
      m.addr_ = addr;
      m.size_ = f.size;
    }
    return m;  // the mapping keeps the file alive after f closes it
#else
    return make_status(status_code::unsupported,
                       "gguf: cannot map '%s': memory mapping needs a POSIX system; use "
                       "gguf::file::from_bytes",
                       path.c_str());
#endif
  }

 private:
  void unmap() noexcept {
#if MNEMO_GGUF_HAS_MMAP
    if (addr_ != nullptr) ::munmap(addr_, size_);
#endif
    addr_ = nullptr;
    size_ = 0;
  }

  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace mnemo::gguf::detail
