// The shared-memory communicator block of a fleet and one rank's groups in it (shm_comm_set.h).
#include "comm/shm_comm_set.h"

#include "core/error.h"

namespace ltx2::comm {

namespace {

constexpr int kCuts[] = {2, 3, 4};

}  // namespace

ShmCommSet::ShmCommSet(int world, size_t slot_capacity, int node_ranks)
    : world_(world), capacity_(slot_capacity / 64 * 64) {
  LTX2_CHECK(world >= 1 && node_ranks >= 1 && node_ranks <= world && world % node_ranks == 0,
             "shm communicators: {} ranks a node do not divide a world of {}", node_ranks, world);
  bytes_ = region_bytes(world);
  for (int groups : kCuts) {
    if (groups >= world || world % groups != 0 || node_ranks % (world / groups) != 0) continue;
    cuts_.push_back(groups);
    cut_offsets_.push_back(bytes_);
    bytes_ += static_cast<size_t>(groups) * region_bytes(world / groups);
  }
}

size_t ShmCommSet::region_bytes(int ranks) const {
  return ShmCommunicator::region_bytes(ranks, capacity_);
}

std::optional<ShmCommSet::Region> ShmCommSet::group_region(int groups, int g) const {
  for (size_t i = 0; i < cuts_.size(); ++i) {
    if (cuts_[i] != groups) continue;
    LTX2_CHECK(g >= 0 && g < groups, "shm communicators: group {} outside a cut into {}", g, groups);
    const int size = world_ / groups;
    return Region{cut_offsets_[i] + static_cast<size_t>(g) * region_bytes(size), region_bytes(size), size};
  }
  return std::nullopt;
}

void ShmCommSet::format(void* base) const {
  auto* b = static_cast<uint8_t*>(base);
  ShmCommunicator::format_region(b, region_bytes(world_), world_, capacity_);
  for (int groups : cuts_)
    for (int g = 0; g < groups; ++g) {
      const Region r = *group_region(groups, g);
      ShmCommunicator::format_region(b + r.offset, r.bytes, r.world, capacity_);
    }
}

void ShmCommSet::abort(void* base, const std::string& reason) const {
  auto* b = static_cast<uint8_t*>(base);
  // The world's region decides which failure the block reports: its first abort wins there, and
  // that reason, not this call's, goes to every group. A rank that fails only because an earlier
  // abort released it (its own abort comes second) then cannot put its reason in a region the
  // first abort has not reached yet, so every rank names the first failure. A rank released from
  // the world's collective that enters its group's before the group's abort lands is woken by it.
  ShmCommunicator::abort(b, reason);
  const std::string first = ShmCommunicator::abort_reason(b);
  for (int groups : cuts_)
    for (int g = 0; g < groups; ++g) ShmCommunicator::abort(b + group_region(groups, g)->offset, first);
}

ShmCommGroups::ShmCommGroups(void* base, ShmCommSet set, int rank, std::chrono::milliseconds timeout,
                             DeviceFactory device)
    : base_(static_cast<uint8_t*>(base)),
      set_(std::move(set)),
      rank_(rank),
      timeout_(timeout),
      device_(std::move(device)) {}

bool ShmCommGroups::has_cut(int groups) const {
  return set_.group_region(groups, 0).has_value();
}

Communicator* ShmCommGroups::split(int groups) {
  if (auto it = made_.find(groups); it != made_.end())
    return it->second.device ? it->second.device.get() : it->second.host.get();
  if (!has_cut(groups)) return nullptr;
  const int size = set_.world_region().world / groups;
  const ShmCommSet::Region r = *set_.group_region(groups, rank_ / size);
  Made made;
  made.host = std::make_unique<ShmCommunicator>(base_ + r.offset, r.bytes, rank_ % size, timeout_);
  if (device_) made.device = device_(*made.host, rank_ % size, size);
  Communicator* comm = made.device ? made.device.get() : made.host.get();
  made_.emplace(groups, std::move(made));
  return comm;
}

}  // namespace ltx2::comm
