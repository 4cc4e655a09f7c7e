// A read-only memory mapping of a whole file (POSIX mmap), owned and move-only.
#pragma once

#if !defined(MNEMO_MODEL_GGUF_DETAIL_OK_)
#error "mnemo/model/detail/gguf_* headers are internal: include mnemo/model/gguf.hpp"
#endif

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <utility>

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

namespace mnemo::model::detail {

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
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return os_error("cannot open", path);
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
      status s = os_error("cannot stat", path);
      ::close(fd);
      return s;
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return make_status(status_code::io_error, "gguf: '%s' is not a regular file", path.c_str());
    }
    file_mapping m;
    if (st.st_size > 0) {
      void* addr =
          ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr == MAP_FAILED) {
        status s = os_error("cannot map", path);
        ::close(fd);
        return s;
      }
      m.addr_ = addr;
      m.size_ = static_cast<std::size_t>(st.st_size);
    }
    ::close(fd);  // the mapping keeps the file alive
    return m;
#else
    return make_status(status_code::unsupported,
                       "gguf: cannot map '%s': memory mapping needs a POSIX system; use "
                       "gguf_file::from_bytes",
                       path.c_str());
#endif
  }

 private:
  static status os_error(const char* what, const std::string& path) {
    return make_status(status_code::io_error, "gguf: %s '%s': %s", what, path.c_str(),
                       std::strerror(errno));
  }

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

}  // namespace mnemo::model::detail
