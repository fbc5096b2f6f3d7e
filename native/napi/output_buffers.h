// The float buffers eval() and step() write their output into (a decode step's logits: vocab
// floats, 600 KB for Qwen3), kept for the next call once JavaScript has let go of them. A fresh
// buffer of that size is mapped anew by malloc each token and every page of it faulted in and
// zeroed by the kernel (~100 page faults per token); a kept one is already mapped and warm.
#pragma once

#include <cstddef>
#include <vector>

namespace weightmap {

// A buffer of `floats` floats, not zeroed (the caller writes all of them).
std::vector<float> TakeOutputBuffer(size_t floats);
// Returns a buffer for a later TakeOutputBuffer (kept while all kept add up to 16 MB; else freed).
// Thread-safe: eval's worker takes, the main thread gives back when the Float32Array is collected.
void GiveOutputBuffer(std::vector<float>&& buffer);

}  // namespace weightmap
