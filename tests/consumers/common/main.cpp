// A host program that uses mnemo the way an application would: the umbrella header,
// a status, a result and the native ISA tag. Built by both consumer projects.
#include <cstddef>
#include <cstdio>

#include <mnemo/mnemo.hpp>

// Sum of n ones through an aligned buffer, or the status that says why not.
mnemo::result<float> sum_of_ones(std::size_t n) {
  if (n == 0) return mnemo::make_status(mnemo::status_code::invalid_argument, "n must be > 0");
  MNEMO_ASSIGN_OR_RETURN(auto buf, mnemo::aligned_buffer<float>::make(n));
  for (float& x : buf) x = 1.0f;
  float sum = 0.0f;
  for (float x : buf) sum += x;
  return sum;
}

int main() {
  auto ok = sum_of_ones(1000);
  if (!ok) {
    std::fprintf(stderr, "consumer: %s\n", ok.error().to_string().c_str());
    return 1;
  }
  auto bad = sum_of_ones(0);
  if (bad || bad.error().code() != mnemo::status_code::invalid_argument || *ok != 1000.0f) {
    std::fprintf(stderr, "consumer: unexpected results\n");
    return 1;
  }
  using isa = mnemo::simd::native;
  std::printf("consumer: sum %.0f, error \"%s\", native ISA %.*s (%zu f32 lanes)\n", *ok,
              bad.error().to_string().c_str(), static_cast<int>(isa::name.size()), isa::name.data(),
              isa::lanes_f32);
  return 0;
}
