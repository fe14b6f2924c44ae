// detdb-log: looks at an input log directory without changing it.
//
//   detdb-log verify DIR    per segment: records, epoch range, CRC status,
//                           torn tail; then a summary
//   detdb-log dump DIR      one line per record
//
// Exit status: 0 when a node would start on the log (a torn tail included:
// recovery trims it), 1 when it would refuse (corruption, an epoch gap, a
// config-hash mismatch), 2 on a usage or I/O error. See deploy/log_tool.h.
#include <cstdio>
#include <iostream>
#include <string>

#include "deploy/log_tool.h"
#include "gflags/gflags.h"

DEFINE_uint64(config_hash, 0, "If nonzero, every record must carry this config hash");
DEFINE_uint32(max_payload_bytes, 64u << 20, "Largest payload a record may claim");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("detdb-log verify|dump DIR");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc != 3) {
    std::fprintf(stderr, "usage: detdb-log [flags] verify|dump DIR\n");
    return 2;
  }
  const std::string cmd = argv[1];
  detdb::LogToolOptions o;
  o.config_hash = FLAGS_config_hash;
  o.max_payload_bytes = FLAGS_max_payload_bytes;
  if (cmd == "verify") return detdb::VerifyLog(argv[2], o, std::cout);
  if (cmd == "dump") return detdb::DumpLog(argv[2], o, std::cout);
  std::fprintf(stderr, "detdb-log: unknown command '%s' (verify or dump)\n", cmd.c_str());
  return 2;
}
