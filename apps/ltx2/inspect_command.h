// `ltx2 inspect FILE...`: what a checkpoint holds: components, their configs, tensor counts, bytes
// and dtypes. A folder is read as a Hugging Face model folder (sharded or not).
#pragma once

#include <string>
#include <vector>

namespace ltx2 {

int run_inspect(const std::vector<std::string>& paths, bool json);

}  // namespace ltx2
