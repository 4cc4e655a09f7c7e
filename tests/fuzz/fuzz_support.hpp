// What every fuzz target shares: a cursor over the input bytes, the re-sealing of a
// mutated state file (so mutations reach the payload checks behind the checksum), and
// the deterministic mutation session the ctest drivers run (tests/fuzz/*_test.cpp)
// where libFuzzer is not available. No GoogleTest here: the libFuzzer entry points
// (fuzz_entry.cpp) include the same targets.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "mnemo/base/rng.hpp"
#include "mnemo/memory/state_format.hpp"

namespace mnemo::fuzz {

/// A target: "" when the input was handled correctly, else what went wrong (a refusal
/// without a message, a memory changed by a refused load, ...). Crashes, UB and leaks
/// are found by the sanitizers.
using target_fn = std::string (*)(const std::uint8_t*, std::size_t);

/// How many inputs the targets accepted and refused (a session that accepts nothing
/// tests only the first checks).
struct outcome_counts {
  std::size_t accepted = 0, refused = 0;
};
inline outcome_counts& outcomes() {
  static outcome_counts c;
  return c;
}

/// A target with its seed corpus (valid inputs the mutations start from).
struct target_info {
  const char* name;
  target_fn run;
  std::vector<std::vector<std::uint8_t>> (*seeds)();
};

/// Takes values off the front of the input; past its end every value is 0.
class input_cursor {
 public:
  input_cursor(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
  std::uint8_t u8() { return at_ < n_ ? d_[at_++] : 0; }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(u8()) << (8 * i);
    return v;
  }
  std::span<const std::uint8_t> rest() {
    const std::size_t a = std::min(at_, n_);
    at_ = n_;
    return {d_ + a, n_ - a};
  }
  bool done() const noexcept { return at_ >= n_; }

 private:
  const std::uint8_t* d_;
  std::size_t n_;
  std::size_t at_ = 0;
};

/// Rewrites the payload length and checksum of a state file (state_format.hpp), and
/// first those of the states nested in a composite (layered: u32 n_parts then parts;
/// split window: u32 tag, u32 n_parts then parts). Bytes that do not parse are left
/// alone: a mutated input is re-sealed as far as it goes.
inline void reseal_state(std::span<std::uint8_t> b, int depth = 0) {
  constexpr std::size_t H = memory::state_header::bytes;
  std::uint32_t magic = 0;
  if (b.size() < H || depth > 3) return;
  std::memcpy(&magic, b.data(), 4);
  if (magic != memory::k_state_magic) return;
  std::uint16_t strategy = 0;
  std::memcpy(&strategy, b.data() + 6, 2);
  std::size_t parts_at = 0;
  if (strategy == static_cast<std::uint16_t>(memory::strategy_id::composite)) parts_at = H;
  if (strategy == static_cast<std::uint16_t>(memory::strategy_id::split_window)) parts_at = H + 4;
  if (parts_at != 0 && b.size() >= parts_at + 4) {
    std::uint32_t n = 0;
    std::memcpy(&n, b.data() + parts_at, 4);
    std::size_t at = parts_at + 4;
    for (std::uint32_t k = 0; k < n && b.size() - at >= 8; ++k) {
      std::uint64_t len = 0;
      std::memcpy(&len, b.data() + at, 8);
      at += 8;
      if (len > b.size() - at) break;
      reseal_state(b.subspan(at, static_cast<std::size_t>(len)), depth + 1);
      at += static_cast<std::size_t>(len);
    }
  }
  const std::uint64_t n_payload = b.size() - H;
  std::memcpy(b.data() + H - 16, &n_payload, 8);
  const std::uint64_t sum = memory::checksum64(b.subspan(H), memory::checksum64(b.first(H - 8)));
  std::memcpy(b.data() + H - 8, &sum, 8);
}

/// One random edit of `v`: flip a bit, set a byte or a 32-bit word to a boundary value,
/// insert, erase or duplicate a range, truncate, or splice in part of another input.
inline void mutate_once(std::vector<std::uint8_t>& v, splitmix64& g,
                        const std::vector<std::vector<std::uint8_t>>& others) {
  static constexpr std::uint32_t k_words[] = {
      0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffe};
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(g.next() % n); };
  switch (g.next() % 8) {
    case 0:
      if (!v.empty()) v[pick(v.size())] ^= static_cast<std::uint8_t>(1u << (g.next() % 8));
      break;
    case 1:
      if (!v.empty()) v[pick(v.size())] = static_cast<std::uint8_t>(k_words[pick(12)]);
      break;
    case 2:
      if (v.size() >= 4) {
        const std::uint32_t w = k_words[pick(12)];
        std::memcpy(v.data() + pick(v.size() - 3), &w, 4);
      }
      break;
    case 3: {  // insert random bytes
      const std::size_t at = pick(v.size() + 1), n = 1 + pick(16);
      std::vector<std::uint8_t> ins(n);
      for (auto& x : ins) x = static_cast<std::uint8_t>(g.next());
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), ins.begin(), ins.end());
      break;
    }
    case 4:
      if (!v.empty()) {
        const std::size_t at = pick(v.size()),
                          n = 1 + pick(std::min<std::size_t>(64, v.size() - at));
        v.erase(v.begin() + static_cast<std::ptrdiff_t>(at),
                v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), at + n)));
      }
      break;
    case 5:
      if (!v.empty()) v.resize(pick(v.size()));
      break;
    case 6:
      if (!v.empty()) {  // duplicate a range
        const std::size_t at = pick(v.size()),
                          n = 1 + pick(std::min<std::size_t>(64, v.size() - at));
        std::vector<std::uint8_t> dup(v.begin() + static_cast<std::ptrdiff_t>(at),
                                      v.begin() + static_cast<std::ptrdiff_t>(at + n));
        const std::size_t to = pick(v.size() + 1);
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(to), dup.begin(), dup.end());
      }
      break;
    default:
      if (!others.empty()) {  // splice: a range of another input over ours
        const auto& o = others[pick(others.size())];
        if (o.empty() || v.empty()) break;
        const std::size_t from = pick(o.size()),
                          n = 1 + pick(std::min<std::size_t>(64, o.size() - from));
        const std::size_t to = pick(v.size());
        for (std::size_t i = 0; i < n && to + i < v.size(); ++i) v[to + i] = o[from + i];
      }
      break;
  }
}

struct session_result {
  std::size_t executions = 0;
  std::string failure;  // "" when every input was handled
  std::vector<std::uint8_t> failing_input;
};

/// Runs `target` on every seed, then on `n` inputs made of a seed and 1..8 edits
/// (mutate_once); `grow` (optional) may enlarge an input (huge-input targets). Stops
/// at the first failure.
inline session_result run_mutations(
    target_fn target, const std::vector<std::vector<std::uint8_t>>& seeds, std::uint64_t seed,
    std::size_t n, std::function<void(std::vector<std::uint8_t>&, splitmix64&)> grow = {}) {
  session_result r;
  auto run = [&](const std::vector<std::uint8_t>& in) {
    ++r.executions;
    r.failure = target(in.data(), in.size());
    if (!r.failure.empty()) r.failing_input = in;
    return r.failure.empty();
  };
  for (const auto& s : seeds)
    if (!run(s)) return r;
  splitmix64 g{seed};
  for (std::size_t i = 0; i < n && !seeds.empty(); ++i) {
    std::vector<std::uint8_t> v = seeds[g.next() % seeds.size()];
    const int edits = 1 + static_cast<int>(g.next() % 8);
    for (int e = 0; e < edits; ++e) mutate_once(v, g, seeds);
    if (grow) grow(v, g);
    if (!run(v)) return r;
  }
  return r;
}

/// The session seed: MNEMO_FUZZ_SEED from the environment, else `fallback`.
inline std::uint64_t session_seed(std::uint64_t fallback = 1) {
  const char* e = std::getenv("MNEMO_FUZZ_SEED");
  return e != nullptr ? std::strtoull(e, nullptr, 0) : fallback;
}

/// A test name without underscores: state_full -> StateFull.
inline std::string camel_name(const char* name) {
  std::string out;
  bool up = true;
  for (const char* p = name; *p != 0; ++p) {
    if (*p == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p;
    up = false;
  }
  return out;
}

/// The first bytes of an input in hex, for failure messages.
inline std::string hex_head(const std::vector<std::uint8_t>& v, std::size_t n = 96) {
  std::string s;
  char buf[4];
  for (std::size_t i = 0; i < std::min(n, v.size()); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", v[i]);
    s += buf;
  }
  if (v.size() > n) s += "...";
  return s;
}

}  // namespace mnemo::fuzz
