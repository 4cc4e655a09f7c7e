// UTF-8 encoding and decoding for code outside the tokenizers: the same routines the
// tokenizers and the streaming decoder use, so a host (or an example parsing JSON
// \u escapes) does not keep a second copy that could disagree with them.
#pragma once

#pragma push_macro("MNEMO_TEXT_DETAIL_OK_")
#undef MNEMO_TEXT_DETAIL_OK_
#define MNEMO_TEXT_DETAIL_OK_ 1
#include "mnemo/text/detail/utf8.hpp"
#pragma pop_macro("MNEMO_TEXT_DETAIL_OK_")

namespace mnemo::text {

/// U+FFFD, what decode_utf8 returns for an invalid or truncated sequence.
using detail::k_replacement_char;
/// append_utf8(out, cp): appends code point cp (<= U+10FFFF) as 1 to 4 bytes.
using detail::append_utf8;
/// decode_utf8(s, i, len): the code point at s[i] and its length; U+FFFD and length 1
/// for bytes that are not a valid sequence (no overlongs, surrogates or > U+10FFFF).
using detail::decode_utf8;
/// is_valid_utf8(s, &bad): whether s is entirely well-formed; bad = first bad offset.
using detail::is_valid_utf8;
/// utf8_complete_prefix(s): the longest prefix of s that does not end inside a
/// character a later byte could still complete (what stream_decoder hands out).
using detail::utf8_complete_prefix;

}  // namespace mnemo::text
