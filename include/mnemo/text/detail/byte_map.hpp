// GPT-2's reversible byte <-> code point map for byte-level BPE: printable bytes map to
// themselves ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF); the other 68 bytes map, in
// increasing byte order, to U+0100, U+0101, ... so that every byte is one visible
// character in the vocabulary (a space is 'Ġ' = U+0120). From Radford et al. 2019, the
// `bytes_to_unicode` function of the GPT-2 encoder.
#pragma once

#if !defined(MNEMO_TEXT_DETAIL_OK_)
#error "mnemo/text/detail/* headers are internal: include mnemo/text/tokenizer.hpp"
#endif

#include <array>
#include <cstdint>

namespace mnemo::text::detail {

struct byte_map {
  static constexpr std::uint32_t k_cp_limit = 0x144;  // every mapped code point is below
  std::array<std::uint16_t, 256> to_cp{};             // byte -> code point
  std::array<std::int16_t, k_cp_limit> from_cp{};     // code point -> byte, or -1

  constexpr byte_map() {
    std::uint16_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? static_cast<std::uint16_t>(b) : next++;
    }
    for (auto& v : from_cp) v = -1;
    for (unsigned b = 0; b < 256; ++b) from_cp[to_cp[b]] = static_cast<std::int16_t>(b);
  }

  /// The byte a code point stands for, or -1 when it is not in the map.
  constexpr int to_byte(std::uint32_t cp) const noexcept {
    return cp < k_cp_limit ? from_cp[cp] : -1;
  }
};

inline constexpr byte_map k_byte_map{};
static_assert(k_byte_map.to_cp[' '] == 0x120, "GPT-2 maps the space byte to U+0120");
static_assert(k_byte_map.to_cp[0xAD] == 0x143, "the last remapped byte is 0xAD");

}  // namespace mnemo::text::detail
