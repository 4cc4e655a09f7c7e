// Compatibility checks of state files (docs/memory.md): a file written by a cache of
// another shape, K/V element type, strategy, RoPE configuration, format version or
// stream count is refused with a status that names the mismatch, and the reading
// cache is left exactly as it was.
#include <utility>

#include "memory/harness.hpp"
#include <gtest/gtest.h>

namespace mnemo::memtest {
namespace {

using u8vec = std::vector<std::uint8_t>;
using StateCompat = traced_test;

/// The reading side of every case: f16 K and V, default shape and RoPE, 2 seqs.
memory::full_cache<dtype::f16> reader() {
  auto c = make_cache<dtype::f16>(16, 2);
  EXPECT_EQ(dec(c, 0, 0, 3), k_ok);
  EXPECT_EQ(dec(c, 1, 0, 1), k_ok);
  return c;
}

template <class KE, class VE = KE>
u8vec written_by(const cache_options& o, seq_id s) {
  auto c = make_cache<KE, VE>(16, 2, o);
  EXPECT_EQ(dec(c, 0, 0, 3), k_ok);
  return state_of(c, s);
}

struct compat_case {
  std::string name;
  u8vec blob;
  status_code code;
  const char* says;  // a word the message must contain
};

void expect_refused(const std::vector<compat_case>& cases, seq_id dest) {
  auto c = reader();
  const auto before = snap(c);
  for (const auto& k : cases) {
    const status st = memory::state_read(c, k.blob, dest);
    EXPECT_EQ(st.code(), k.code) << k.name << " (dest " << dest << "): " << st.to_string();
    EXPECT_NE(st.message().find(k.says), std::string::npos)
        << k.name << ": the message should mention '" << k.says << "': " << st.message();
    EXPECT_EQ(first_difference(before, snap(c)), "") << k.name;
  }
}

std::vector<compat_case> other_writers(seq_id s) {
  std::vector<compat_case> r;
  const cache_options base;
  auto shape = [&](const char* name, memory::kv_shape sh) {
    cache_options o = base;
    o.shape = sh;
    r.push_back({name, written_by<dtype::f16>(o, s), status_code::invalid_argument, "shape"});
  };
  shape("3 layers", {3, 2, 32, 32});
  shape("1 KV head", {2, 1, 32, 32});
  shape("d_k 64", {2, 2, 64, 32});
  shape("d_v 64", {2, 2, 32, 64});
  r.push_back({"q8_0 K", written_by<dtype::block_q8_0, dtype::f16>(base, s),
               status_code::invalid_argument, "element types"});
  r.push_back({"q8_0 V", written_by<dtype::f16, dtype::block_q8_0>(base, s),
               status_code::invalid_argument, "element types"});
  r.push_back({"bf16 K and V", written_by<dtype::bf16>(base, s), status_code::invalid_argument,
               "element types"});
  r.push_back(
      {"f32 K and V", written_by<float>(base, s), status_code::invalid_argument, "element types"});
  r.push_back({"q4_0 K and V", written_by<dtype::block_q4_0>(base, s),
               status_code::invalid_argument, "element types"});
  auto rope = [&](const char* name, auto edit) {
    cache_options o = base;
    edit(o.rope);
    r.push_back({name, written_by<dtype::f16>(o, s), status_code::invalid_argument, "RoPE"});
  };
  rope("neox layout", [](attention::rope_config& x) { x.layout = attention::rope_layout::neox; });
  rope("no RoPE", [](attention::rope_config& x) { x.layout = attention::rope_layout::none; });
  rope("n_rot 16", [](attention::rope_config& x) { x.n_rot = 16; });
  rope("freq_base 1e6", [](attention::rope_config& x) { x.freq_base = 1e6f; });
  rope("freq_scale 0.25", [](attention::rope_config& x) { x.freq_scale = 0.25f; });
  rope("Llama 3 frequency factors",
       [](attention::rope_config& x) { x.freq_factors.assign(x.n_rot / 2, 2.0f); });
  rope("YaRN", [](attention::rope_config& x) {
    x.yarn.ext_factor = 1.0f;
    x.yarn.n_ctx_orig = 4096;
  });
  rope("attn_factor 0.5", [](attention::rope_config& x) { x.yarn.attn_factor = 0.5f; });
  // Header edits with the length and checksum fixed up, as another writer would.
  const u8vec good = written_by<dtype::f16>(base, s);
  auto edited = [&](std::string name, std::size_t off, auto value, status_code code,
                    const char* says) {
    u8vec b = good;
    write_at(b, off, value);
    reseal(b);
    r.push_back({std::move(name), std::move(b), code, says});
  };
  // The refusal names both strategies as their types are spelled.
  const std::pair<std::uint16_t, const char*> writers[] = {
      {0, "written by unknown strategy 0, read by full_cache"},
      {2, "written by sliding_window, read by full_cache"},
      {3, "written by split_stream, read by full_cache"},
      {4, "written by recurrent, read by full_cache"},
      {5, "written by bounded, read by full_cache"},
      {6, "written by layered, read by full_cache"},
      {7, "written by split_window, read by full_cache"},
      {0xffff, "written by unknown strategy 65535, read by full_cache"}};
  for (const auto& [id, says] : writers)
    edited("strategy " + std::to_string(id), 6, id, status_code::invalid_argument, says);
  for (std::uint16_t v : {0, 3, 0xffff})
    edited("version " + std::to_string(v), 4, v, status_code::unsupported, "version");
  edited("2 streams", 52, std::uint32_t{2}, status_code::invalid_argument, "streams");
  edited("0 streams", 52, std::uint32_t{0}, status_code::invalid_argument, "streams");
  edited("padding byte", 37, std::uint8_t{1}, status_code::corrupt_data, "padding");
  edited("padding word", 38, std::uint16_t{0x100}, status_code::corrupt_data, "padding");
  edited("magic", 0, std::uint32_t{0x67677371}, status_code::corrupt_data, "magic");
  return r;
}

TEST_F(StateCompat, WholeStateFromOtherWritersIsRefused) { expect_refused(other_writers(-1), -1); }

TEST_F(StateCompat, SequenceStateFromOtherWritersIsRefused) { expect_refused(other_writers(0), 1); }

TEST_F(StateCompat, DamagedFramingIsRefused) {
  const u8vec good = written_by<dtype::f16>({}, 0);
  std::vector<compat_case> cases;
  cases.push_back({"empty", {}, status_code::corrupt_data, "header"});
  cases.push_back({"header only", u8vec(good.begin(), good.begin() + k_header_bytes),
                   status_code::corrupt_data, "payload"});
  u8vec longer = good;
  write_at<std::uint64_t>(longer, k_length_offset, read_header(good).payload_bytes + 1);
  cases.push_back({"length field + 1", longer, status_code::corrupt_data, "payload"});
  u8vec sum = good;
  sum.back() ^= 1;
  cases.push_back({"last row byte", sum, status_code::corrupt_data, "checksum"});
  u8vec head = good;
  write_at<std::int32_t>(head, 8, 1);  // the source sequence id is covered by the checksum
  cases.push_back({"source seq id", head, status_code::corrupt_data, "checksum"});
  expect_refused(cases, 1);
}

/// `v2` rewritten as a version 1 file (no rope detail field: a 72-byte header).
u8vec as_version_1(const u8vec& v2) {
  constexpr std::size_t v1_header = k_header_bytes - 8, v1_checksum = k_checksum_offset - 8;
  u8vec b(v2.begin(), v2.begin() + 56);
  b.insert(b.end(), v2.begin() + 64, v2.end());
  write_at<std::uint16_t>(b, 4, 1);
  write_at<std::uint64_t>(b, 56, b.size() - v1_header);
  const std::uint64_t h = checksum_doc(b.data(), v1_checksum, 0);
  write_at<std::uint64_t>(b, v1_checksum,
                          checksum_doc(b.data() + v1_header, b.size() - v1_header, h));
  return b;
}

TEST_F(StateCompat, Version1FilesLoadOnlyWithPlainRope) {
  const u8vec v2 = written_by<dtype::f16>({}, 0);
  const u8vec v1 = as_version_1(v2);
  auto a = reader(), b = reader();
  ASSERT_TRUE(memory::state_read(a, v2, 1).is_ok());
  const status st = memory::state_read(b, v1, 1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(first_difference(snap(a), snap(b)), "")
      << "a version 1 file loads as its version 2 twin";

  // Keys of a version 1 file were rotated without factors: a memory that rotates with
  // them refuses the file and stays as it was.
  cache_options o;
  o.rope.freq_factors.assign(o.rope.n_rot / 2, 2.0f);
  auto c = make_cache<dtype::f16>(16, 2, o);
  ASSERT_EQ(dec(c, 0, 0, 3), k_ok);
  const auto before = snap(c);
  const status refused = memory::state_read(c, v1, 1);
  EXPECT_EQ(refused.code(), status_code::invalid_argument) << refused.to_string();
  EXPECT_NE(refused.message().find("version 1"), std::string::npos) << refused.message();
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

TEST_F(StateCompat, WholeAndSequenceStatesDoNotMix) {
  auto src = reader();
  std::vector<compat_case> into_seq = {
      {"whole into seq", state_of(src), status_code::invalid_argument, "whole"}};
  expect_refused(into_seq, 0);
  std::vector<compat_case> into_whole = {
      {"seq into whole", state_of(src, 0), status_code::invalid_argument, "per-sequence"}};
  expect_refused(into_whole, -1);
}

TEST_F(StateCompat, BadSequenceIdsAreOutOfRange) {
  auto c = reader();
  const auto before = snap(c);
  const u8vec blob = state_of(c, 0);
  EXPECT_EQ(memory::state_read(c, blob, 2).code(), status_code::out_of_range);
  EXPECT_EQ(memory::state_read(c, blob, -2).code(), status_code::out_of_range);
  EXPECT_EQ(memory::state_write(c, 2).error().code(), status_code::out_of_range);
  EXPECT_EQ(memory::state_write(c, -2).error().code(), status_code::out_of_range);
  EXPECT_EQ(first_difference(before, snap(c)), "");
}

// The same configuration written by another cache instance (any size, any
// n_seq_max) is accepted: only what changes the meaning of the bytes is checked.
TEST_F(StateCompat, SameMeaningFromAnotherCacheIsAccepted) {
  auto big = make_cache<dtype::f16>(64, 8);
  ASSERT_EQ(dec(big, 0, 0, 9), k_ok);
  auto c = reader();
  EXPECT_TRUE(memory::state_read(c, state_of(big, 0), 1).is_ok());
  EXPECT_EQ(positions(c, 1), range(0, 9));
  EXPECT_TRUE(memory::state_read(c, state_of(big)).is_ok());
  EXPECT_EQ(positions(c, 0), range(0, 9));
  EXPECT_EQ(c.seq_pos_max(1), -1);
}

}  // namespace
}  // namespace mnemo::memtest
