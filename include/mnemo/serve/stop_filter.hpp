// Streams generated text up to the first of several stop texts: push() returns what can
// be shown now. The end of the text that could still become a stop text is held back
// until the next piece decides it, so no stop text (nor a start of one) is ever shown.
//
//   stop_filter f({"\n\n", "User:"});
//   f.push("Hi Us");   // "Hi "  ("Us" held back)
//   f.push("er: x");   // ""     stopped(); text() == "Hi "
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mnemo::serve {

class stop_filter {
 public:
  /// Empty stop texts are ignored; no stop text never stops.
  explicit stop_filter(std::vector<std::string> stops = {}) {
    for (std::string& s : stops)
      if (!s.empty()) stops_.push_back(std::move(s));
  }

  /// Adds a piece; returns the text now known to precede every stop text (a view valid
  /// until the next call). Once a stop text appears, stopped() is true and later pieces
  /// are ignored.
  std::string_view push(std::string_view piece) {
    if (stopped_) return {};
    const std::size_t from = shown_;
    text_.append(piece);
    std::size_t safe = text_.size();
    std::size_t first = std::string::npos;
    // Every start before `from` was ruled out when that text was shown.
    for (const std::string& s : stops_) first = std::min(first, text_.find(s, from));
    if (first != std::string::npos) {
      text_.resize(first);
      stopped_ = true;
      safe = first;
    } else {
      safe -= partial_stop();
    }
    shown_ = std::max(shown_, safe);
    return std::string_view(text_).substr(from, shown_ - from);
  }

  /// Shows what is held back (generation ended without completing a stop text).
  std::string_view flush() {
    const std::size_t from = shown_;
    if (!stopped_) shown_ = text_.size();
    return std::string_view(text_).substr(from, shown_ - from);
  }

  bool stopped() const noexcept { return stopped_; }
  /// Everything pushed, up to the stop text.
  const std::string& text() const noexcept { return text_; }

 private:
  /// Length of the longest end of text_ that is a proper start of some stop text.
  std::size_t partial_stop() const {
    const std::string_view t = text_;
    std::size_t best = 0;
    for (const std::string& s : stops_)
      for (std::size_t n = std::min(t.size(), s.size() - 1); n > best; --n)
        if (t.ends_with(std::string_view(s).substr(0, n))) {
          best = n;
          break;
        }
    return best;
  }

  std::vector<std::string> stops_;
  std::string text_;
  std::size_t shown_ = 0;  // bytes of text_ returned by push() or flush()
  bool stopped_ = false;
};

}  // namespace mnemo::serve
