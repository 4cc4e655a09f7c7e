// libFuzzer target for the GGUF reader (built with -DMNEMO_BUILD_FUZZERS=ON and clang):
// any input either opens, and then every exposed value and tensor byte is read with the
// views checked to stay inside the input, or fails with corrupt_data / unsupported.
//
//   mnemo_fuzz_gguf_seeds corpus/ && mnemo_fuzz_gguf corpus/ -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/gguf_fuzz_common.hpp"

#include "mnemo/gguf/file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto f = mnemo::gguf::file::from_bytes(bytes);
  if (!f.is_ok()) {
    const auto code = f.error().code();
    if (code != mnemo::status_code::corrupt_data && code != mnemo::status_code::unsupported)
      __builtin_trap();
    return 0;
  }
  bool consistent = false;
  volatile std::uint64_t sink = mnemo::gguf::fuzz::walk(*f, consistent);
  (void)sink;
  if (!consistent) __builtin_trap();
  return 0;
}
