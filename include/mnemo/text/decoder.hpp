// stream_decoder: token ids -> text, one id at a time, for printing while generating.
// A token may end in the middle of a UTF-8 character (byte-fallback and byte-level
// tokens often do): those bytes are held back until a later token completes them, so
// every string handed out is whole characters.
//
//   text::stream_decoder dec(tok, {.text_start = false});   // continuing after a prompt
//   for (token_id id : generated) {
//     MNEMO_ASSIGN_OR_RETURN(std::string_view s, dec.push(id));
//     std::fputs(std::string(s).c_str(), stdout);
//   }
//   std::string rest = dec.finish();   // an incomplete character left at the end, if any
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "mnemo/base/result.hpp"
#include "mnemo/text/tokenizer.hpp"

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

class stream_decoder {
 public:
  /// Keeps a reference to `tok`, which must outlive the decoder.
  explicit stream_decoder(const tokenizer& tok, const decode_options& o = {})
      : tok_(&tok), render_special_(o.render_special), strip_space_(o.text_start) {}

  /// Adds one token; returns the text that is complete so far and was not returned yet
  /// (a view valid until the next call). Bytes that can never be valid UTF-8 are passed
  /// through rather than held. out_of_range for an id outside the vocabulary (the state
  /// is then unchanged).
  result<std::string_view> push(token_id id) {
    if (!tok_->vocab().contains(id))
      return make_status(status_code::out_of_range, "stream_decoder: token id %d is not below %zu",
                         static_cast<int>(id), tok_->size());
    pending_.erase(0, emitted_);
    tok_->append_piece(id, render_special_, strip_space_, pending_);
    emitted_ = detail::utf8_complete_prefix(pending_);
    return std::string_view(pending_).substr(0, emitted_);
  }

  /// Bytes held back: the start of a character no token has completed yet.
  std::string_view held() const noexcept { return std::string_view(pending_).substr(emitted_); }

  /// Returns what is held back and resets the decoder to the start of a new text
  /// (strip state as constructed with text_start = false).
  std::string finish() {
    std::string rest(held());
    pending_.clear();
    emitted_ = 0;
    strip_space_ = false;
    return rest;
  }

 private:
  const tokenizer* tok_;
  bool render_special_;
  bool strip_space_;
  std::string pending_;      // bytes not yet handed out, after the last returned view
  std::size_t emitted_ = 0;  // prefix of pending_ returned by the last push
};

}  // namespace mnemo::text
