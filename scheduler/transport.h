// Transport: how a partition's scheduler sends its local reads of a
// multi-partition txn to the txn's other active participants. The engine
// above it is the same in one process and in a cluster; only the
// implementation differs (InProcessTransport here, ZeroMQ in cluster mode).
//
// Thread-safety: Send is thread-safe; receivers must be registered before
// the first Send.
#ifndef DETDB_SCHEDULER_TRANSPORT_H_
#define DETDB_SCHEDULER_TRANSPORT_H_

#include <memory>
#include <vector>

#include "common/types.h"
#include "proto/detdb.pb.h"

namespace detdb {

class RemoteReadsReceiver {
 public:
  virtual ~RemoteReadsReceiver() = default;
  // INPUT: another partition's reads of txn msg.txn_id(). May arrive before
  // the txn is admitted or dispatched here; the receiver keeps them.
  virtual void OnRemoteReads(pb::RemoteReads msg) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual void RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) = 0;
  // Delivers msg to partition `to`, at most once, in order per (sender, to).
  virtual void Send(PartitionId to, pb::RemoteReads msg) = 0;
};

// Delivers by calling the receiver on the sender's thread.
class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(uint32_t num_partitions) : receivers_(num_partitions, nullptr) {}
  void RegisterReceiver(PartitionId partition, RemoteReadsReceiver* receiver) override {
    receivers_.at(partition) = receiver;
  }
  void Send(PartitionId to, pb::RemoteReads msg) override { receivers_.at(to)->OnRemoteReads(std::move(msg)); }

 private:
  std::vector<RemoteReadsReceiver*> receivers_;
};

}  // namespace detdb

#endif  // DETDB_SCHEDULER_TRANSPORT_H_
