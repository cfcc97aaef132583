// The process-wide RemoteNodes slot (see nodes.h).
#include "runtime/nodes.h"

namespace ltx2::runtime {
namespace {

// Destroyed after main() returns: the agents are then told to quit (node_link.cpp).
std::unique_ptr<RemoteNodes>& slot() {
  static std::unique_ptr<RemoteNodes> nodes;
  return nodes;
}

}  // namespace

void set_remote_nodes(std::unique_ptr<RemoteNodes> nodes) {
  slot() = std::move(nodes);
}

RemoteNodes* remote_nodes() {
  return slot().get();
}

int node_count() {
  return slot() ? slot()->nodes() : 1;
}

void release_remote_nodes() {
  slot().reset();
}

}  // namespace ltx2::runtime
