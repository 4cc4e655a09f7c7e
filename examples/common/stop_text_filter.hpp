// Streams generated text up to a stop text: each push() returns what can be shown now.
// The end of the text that could be the start of the stop text is held back until the
// next piece decides it, so the stop text (or a start of it) is never shown.
//
//   stop_text_filter f("<|im_end|>");
//   f.push("Hel");         // "Hel"
//   f.push("lo<|im");      // "lo"   ("<|im" held back)
//   f.push("_end|>more");  // ""     stopped(); text() == "Hello"
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace mnemo_examples {

class stop_text_filter {
 public:
  /// An empty stop text never stops.
  explicit stop_text_filter(std::string stop) : stop_(std::move(stop)) {}

  /// Adds a piece; returns the text that is now known not to belong to the stop text (a
  /// view valid until the next call). After the stop text appears, stopped() is true and
  /// later pieces are ignored.
  std::string_view push(std::string_view piece) {
    if (stopped_) return {};
    const std::size_t from = shown_;
    text_.append(piece);
    std::size_t safe = text_.size();
    if (!stop_.empty()) {
      // A stop text starts at or after `from`: a start before it was ruled out earlier.
      if (const std::size_t at = text_.find(stop_, from); at != std::string::npos) {
        text_.resize(at);
        stopped_ = true;
        safe = at;
      } else {
        safe -= partial_stop();
      }
    }
    shown_ = std::max(shown_, safe);
    return std::string_view(text_).substr(from, shown_ - from);
  }

  /// Shows what is held back (the generation ended without completing the stop text).
  std::string_view flush() {
    const std::size_t from = shown_;
    if (!stopped_) shown_ = text_.size();
    return std::string_view(text_).substr(from, shown_ - from);
  }

  bool stopped() const noexcept { return stopped_; }
  /// Everything pushed, up to the stop text.
  const std::string& text() const noexcept { return text_; }

 private:
  /// Length of the longest end of text_ that is a proper start of stop_.
  std::size_t partial_stop() const {
    const std::string_view t = text_;
    for (std::size_t n = std::min(t.size(), stop_.size() - 1); n > 0; --n)
      if (t.ends_with(std::string_view(stop_).substr(0, n))) return n;
    return 0;
  }

  std::string stop_;
  std::string text_;
  std::size_t shown_ = 0;  // bytes of text_ returned by push() or flush()
  bool stopped_ = false;
};

}  // namespace mnemo_examples
