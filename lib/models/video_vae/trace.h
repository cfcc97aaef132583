// Optional observer of a model's intermediate tensors (named as the golden fixtures' mid.*), so
// check runners can localise a mismatch; models call it only when one is given.
#pragma once

#include <functional>
#include <string>

#include "core/tensor.h"

namespace ltx2::video_vae {

using Trace = std::function<void(const std::string& name, const Tensor& value)>;

}  // namespace ltx2::video_vae
