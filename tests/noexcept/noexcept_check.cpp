// Built with -fno-exceptions -fno-rtti (tests/noexcept.cmake): the whole public API
// must compile and work without exceptions, since errors are statuses, not throws.
// A plain main: prints every failed check and exits non-zero if there was one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <utility>

#include <mnemo/mnemo.hpp>

static_assert(MNEMO_HAS_EXCEPTIONS == 0, "this file must be compiled with -fno-exceptions");
#if defined(__GXX_RTTI) || defined(__cpp_rtti)
#error "this file must be compiled with -fno-rtti"
#endif

namespace {

int g_failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                                 \
    }                                                                               \
  } while (0)

mnemo::status require_positive(int x) {
  if (x <= 0) return mnemo::make_status(mnemo::status_code::invalid_argument, "x=%d", x);
  return {};
}

mnemo::result<std::unique_ptr<int>> boxed(int x) {
  MNEMO_RETURN_IF_ERROR(require_positive(x));
  return std::make_unique<int>(x);
}

mnemo::result<float> sum_of_ones(std::size_t n) {
  MNEMO_ASSIGN_OR_RETURN(auto buf, mnemo::aligned_buffer<float>::make(n));
  for (auto& x : buf) x = 1.0f;
  MNEMO_ASSIGN_OR_RETURN(auto copy, buf.clone());
  float s = 0.0f;
  for (float x : copy) s += x;
  return s;
}

void check_status() {
  mnemo::status ok;
  CHECK(ok.is_ok());
  CHECK(ok.to_string() == "ok");
  auto e = mnemo::make_status(mnemo::status_code::no_space, "need %d cells", 8);
  CHECK(!e.is_ok());
  CHECK(e.code() == mnemo::status_code::no_space);
  e.with_context("decode");
  CHECK(e.to_string() == "no space: decode: need 8 cells");
  CHECK(require_positive(-1).code() == mnemo::status_code::invalid_argument);
}

void check_result() {
  auto a = boxed(3);
  CHECK(a.is_ok() && **a == 3);
  auto b = boxed(0);
  CHECK(!b.is_ok() && b.error().message() == "x=0");
  auto s = sum_of_ones(100);
  CHECK(s.is_ok() && *s == 100.0f);
  auto huge = sum_of_ones(std::numeric_limits<std::size_t>::max());
  CHECK(!huge.is_ok() && huge.error().code() == mnemo::status_code::no_space);
}

void check_buffer_and_views() {
  auto r = mnemo::aligned_buffer<float>::make(2 * 3 * 4);
  CHECK(r.is_ok());
  if (!r.is_ok()) return;
  mnemo::aligned_buffer<float> buf = std::move(r).value();
  CHECK(reinterpret_cast<std::uintptr_t>(buf.data()) % mnemo::k_buffer_alignment == 0);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i);
  mnemo::tensor_view<float, 3> t(buf.data(), {2, 3, 4});  // [2, 3, 4]
  CHECK(t(1, 2, 3) == 23.0f);
  CHECK(t[1].row(2).data() == buf.data() + 20);
  mnemo::aligned_buffer<float> moved(std::move(buf));
  CHECK(moved.size() == 24 && buf.empty());  // NOLINT: moved-from state is specified
}

void check_simd() {
  using isa = mnemo::simd::native;
  static_assert(mnemo::simd::isa_tag<isa>);
  CHECK(!isa::name.empty());
  CHECK(isa::lanes_f32 >= 1);
}

}  // namespace

int main() {
  check_status();
  check_result();
  check_buffer_and_views();
  check_simd();
  if (g_failures != 0) {
    std::fprintf(stderr, "noexcept_check: %d check(s) failed\n", g_failures);
    return 1;
  }
  std::printf("noexcept_check: all checks passed (native ISA: %.*s)\n",
              static_cast<int>(mnemo::simd::native::name.size()), mnemo::simd::native::name.data());
  return 0;
}
