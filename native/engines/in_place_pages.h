// Which bytes of a spec's mapped files an engine reads in place, told to the mapping layer: the
// tensors it streams whole on every pass get transparent huge pages (mmap/huge_pages.h).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "engines/weights_spec.h"

namespace weightmap {

// Advises MADV_HUGEPAGE over the tensors of `spec` (data and scales) except those named in
// `partial` (read a row at a time, e.g. an untied token embedding) and bf16 ones (converted to a
// copy at load, never read again). Returns the bytes advised across the files.
uint64_t AdviseStreamedHugePages(const WeightsSpec& spec, const std::set<std::string>& partial);

}  // namespace weightmap
