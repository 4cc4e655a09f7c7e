// The model layer: GGUF files, weights and their products, and the decoders.
#pragma once

#include "mnemo/gguf/file.hpp"
#include "mnemo/gguf/writer.hpp"
#include "mnemo/model/architectures.hpp"
#include "mnemo/model/jamba.hpp"
#include "mnemo/model/mamba.hpp"
#include "mnemo/model/matmul.hpp"
#include "mnemo/model/weight.hpp"
