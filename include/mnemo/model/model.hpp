// The model layer: GGUF files, weights and their products, and the decoders.
#pragma once

#include "mnemo/model/gemma3.hpp"
#include "mnemo/model/gguf.hpp"
#include "mnemo/model/gguf_writer.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/llama.hpp"
#include "mnemo/model/mamba.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight.hpp"
