#include <cstdio>

#include <mnemo/mnemo.hpp>

namespace dt = mnemo::dtype;

// q . k with k stored as q8_0 (34 bytes per 32 values), on the widest ISA this CPU runs.
mnemo::result<float> q8_score(const float* q, const float* k, std::size_t d) {
  if (d % 32 != 0) return mnemo::make_status(mnemo::status_code::invalid_argument, "d=%zu", d);
  MNEMO_ASSIGN_OR_RETURN(auto row, mnemo::aligned_buffer<dt::block_q8_0>::make(d / 32));
  return mnemo::simd::dispatch([&]<class Isa>(Isa) {
    dt::encode_row<Isa>(k, row.data(), d);  // [d] f32 -> [d / 32] blocks
    return dt::dot<Isa>(q, row.data(), d);
  });
}

int main() {
  float q[64], k[64];
  for (int i = 0; i < 64; ++i) q[i] = 0.01f * i, k[i] = 1.0f - 0.02f * i;
  auto s = q8_score(q, k, 64);
  if (!s) return std::fprintf(stderr, "%s\n", s.error().to_string().c_str()), 1;
  // Prints "q.k = 3.093 on avx512" (on this CPU), then "invalid argument: d=48".
  std::printf("q.k = %.3f on %s\n", *s, mnemo::simd::isa_name(mnemo::simd::best_isa()).data());
  std::printf("%s\n", q8_score(q, k, 48).error().to_string().c_str());
}
