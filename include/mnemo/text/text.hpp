// Umbrella of the text layer: tokenizers built from GGUF metadata, and chat templates.
#pragma once

#include "mnemo/text/chat_template.hpp"
#include "mnemo/text/decoder.hpp"
#include "mnemo/text/pretokenize.hpp"
#include "mnemo/text/tokenizer.hpp"
#include "mnemo/text/utf8.hpp"
#include "mnemo/text/vocab.hpp"
