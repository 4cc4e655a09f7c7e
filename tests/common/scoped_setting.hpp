// A process-wide library setting (prefetch target, f16 widening, weight tiles, product
// precision) set for the lifetime of a test scope and restored after it, so a test that
// fails midway leaves the next test the setting it found.
//
//   const mnemo_test::scoped_setting set(&simd::current_f16_widening, &simd::set_f16_widening,
//                                        simd::f16_widening::costly);
#pragma once

namespace mnemo_test {

template <class T>
class scoped_setting {
 public:
  scoped_setting(T (*get)() noexcept, void (*set)(T) noexcept, T value) noexcept
      : set_(set), saved_(get()) {
    set_(value);
  }
  ~scoped_setting() { set_(saved_); }
  scoped_setting(const scoped_setting&) = delete;
  scoped_setting& operator=(const scoped_setting&) = delete;

 private:
  void (*set_)(T) noexcept;
  T saved_;
};

}  // namespace mnemo_test
